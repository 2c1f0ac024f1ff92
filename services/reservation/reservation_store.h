// Persistence of reservations, services and service bindings: every SQL statement of the
// reservation service and of the sweeper's expiry of lapsed holds lives here, and each aggregate
// has one write path. Free functions that run inside the caller's transaction (DbPool::Transact,
// or autocommit where said) and leave driver exceptions to it.
//
// Constraint violations are told apart by the violated constraint's NAME (GuardedExec), mapped
// with the explicit constants below; message text is never read.
#ifndef DCL_SERVICES_RESERVATION_RESERVATION_STORE_H_
#define DCL_SERVICES_RESERVATION_RESERVATION_STORE_H_

#include <cstdint>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "dcl/v1/reservation.pb.h"
#include "services/common/db.h"
#include "services/common/page_token.h"
#include "services/reservation/eligibility.h"

namespace dcl::reservation {

// The state that holds a device. The arbiter's predicate (reservations_device_held_uq) and the
// table reservation_holding_states name exactly this state; queries spell it as a literal so
// the planner can use the partial index. A test checks all three agree.
inline constexpr char kHoldingState[] = "held";

// Constraint names from schema/migrations/0002_reservations.sql.
inline constexpr char kDeviceHeldIndex[] = "reservations_device_held_uq";
inline constexpr char kOrgKeyConstraint[] = "reservations_org_key_uq";
inline constexpr char kServiceActiveIndex[] = "service_bindings_service_active_uq";
inline constexpr char kDeviceActiveIndex[] = "service_bindings_device_active_uq";

// A reservation as stored, plus the database clock's verdict on its deadline at read time.
struct ReservationRecord {
  v1::Reservation proto;
  bool lapsed = false;  // clock_timestamp() >= expires_at when it was read
};

// Exclusion reasons over the organization's devices, classified by Classify().
struct ExclusionSummary {
  ExclusionCounts counts{};
  int eligible = 0;
  std::vector<std::pair<std::string, Exclusion>> listed;  // bounded list of excluded devices
};

// Bounds of one Reserve's walk (ReservationOptions carries the configured values).
struct WalkLimits {
  int max_candidates = 25;  // devices locked and found sellable
  int max_attempts = 5;     // lost insert races
  int max_rows = 1024;      // devices walked past, sellable or not
};

// What dcl_reserve answered.
struct ReserveOutcome {
  enum class Kind {
    kHeld,         // `reservation` is the new hold
    kReplay,       // `reservation` is the order's existing one (criteria not compared yet)
    kNoSite,       // the site is not the organization's
    kContended,    // the bound on candidates or lost races was reached
    kNoCandidate,  // the walk went round the site: nothing it could take
    kWalkLimit,    // max_rows devices walked past without a hold
  };
  Kind kind = Kind::kNoCandidate;
  int candidates_examined = 0;
  int lost_races = 0;
  int rows_visited = 0;
  std::optional<ReservationRecord> reservation;
  // The refusal's explanation, present exactly for kNoCandidate and kWalkLimit: every device of
  // the organization classified, read in the same statement as the outcome.
  std::optional<ExclusionSummary> exclusions;
};

// --- reservations: reads
std::optional<ReservationRecord> FindReservationById(pqxx::transaction_base& tx,
                                                     const std::string& org, const std::string& id,
                                                     bool lock);
std::optional<ReservationRecord> FindReservationByKey(pqxx::transaction_base& tx,
                                                      const std::string& org,
                                                      const std::string& key, bool lock);
// Newest first (PageOrder::kCreation, descending): `limit` rows after `after`.
Page<v1::Reservation> ReservationPage(pqxx::transaction_base& tx, const std::string& org,
                                      const std::string& state,  // "" = all
                                      const std::optional<PageCursor>& after, int limit);

// --- reservations: the write path
// A uniformly random UUID-shaped string: where a Reserve's walk over the site's devices starts.
// Random per call, so concurrent orders start at different places and spread over the pool.
std::string RandomWalkStart();

// Reserve, refusal included, in one statement (dcl_reserve_call in schema/migrations/
// 0035_reserve_explains_refusal.sql, around dcl_reserve of 0020 and 0031): the order's existing
// reservation, or the site check, the walk from `walk_start`, one candidate locked at a time and
// the hold inserted with the arbiter index deciding; when nothing was held (kNoCandidate,
// kWalkLimit), `exclusions`: the asked site's devices grouped by facts and the other sites'
// devices as one wrong_site count (dcl_exclusion_summary), each classified by Classify(), at
// most `max_listed` excluded devices listed. Run it in autocommit (pqxx::nontransaction): the
// function's transaction is the statement's, so its row and advisory locks end with it. A
// prepared statement of the connection where the connection is the session's own (ExecCached,
// db.h). `call_deadline` (absl::InfiniteFuture(): none) is the caller's: the database refuses a
// call that arrives after it and a hold that would commit after it (dcl_reserve_within_deadline,
// schema/migrations/0030_call_deadline.sql), with kCallerDeadlineSqlState; nothing is written.
ReserveOutcome ReserveInDatabase(pqxx::transaction_base& tx, const std::string& org,
                                 const std::string& key, const Criteria& criteria,
                                 const std::string& walk_start, int ttl_seconds,
                                 const std::string& actor, const WalkLimits& limits, int max_listed,
                                 absl::Time call_deadline);
// held → converted / expired (at conversion) / cancelled. The row must be locked and held.
void MarkConverted(pqxx::transaction_base& tx, const std::string& id, const std::string& service_id,
                   const std::string& actor);
void MarkExpiredAtConversion(pqxx::transaction_base& tx, const std::string& id,
                             const std::string& actor);
void MarkCancelled(pqxx::transaction_base& tx, const std::string& id, const std::string& actor,
                   const std::string& note);
// held → expired for up to `limit` holds of every organization whose expires_at has passed by
// the database clock, oldest deadline first (end_reason 'expired_by_sweeper', ended_by `actor`);
// returns how many. The sweeper's batch: rows are picked FOR UPDATE SKIP LOCKED, so a hold that
// a Convert (or another sweeper) has locked is skipped, not waited for, and left to whichever
// transaction commits first. Fewer than `limit` means every due hold nobody else held is done.
int64_t ExpireLapsedHolds(pqxx::transaction_base& tx, int limit, const std::string& actor);

// --- services and bindings
v1::Service InsertService(pqxx::transaction_base& tx, const std::string& org,
                          const std::string& kind, const std::string& customer,
                          const std::string& actor);
// The one function that writes service bindings.
absl::StatusOr<v1::ServiceBinding> WriteBinding(pqxx::transaction_base& tx, const std::string& org,
                                                const std::string& service_id,
                                                const std::string& device_id,
                                                const std::string& reservation_id,
                                                const std::string& actor);
std::optional<v1::ServiceBinding> FindBindingOfReservation(pqxx::transaction_base& tx,
                                                           const std::string& org,
                                                           const std::string& reservation_id);
// Sets ended_at on an active binding; an ended one is returned as it is (replay).
absl::StatusOr<v1::ServiceBinding> EndServiceBinding(pqxx::transaction_base& tx,
                                                     const std::string& org,
                                                     const std::string& binding_id,
                                                     const std::string& actor, bool* replay);

// --- where a service's machine is (GetServiceLocation)
// Whether the organization has this service; with `customer_only`, only when `customer` is the
// service's customer (compared as given: an empty `customer` is no wildcard).
bool HasService(pqxx::transaction_base& tx, const std::string& org, const std::string& service_id,
                bool customer_only, const std::string& customer);
// Where the machine bound to the service right now is placed: site, rack, units and sides of
// its active placement. Only a read of the occupancy aggregate's bookings: the booking write
// path (services/occupancy/booking_store.h) stays their only writer. nullopt when the service
// has no binding in force, or its machine is not placed.
std::optional<v1::ServiceLocation> LocateBoundMachine(pqxx::transaction_base& tx,
                                                      const std::string& org,
                                                      const std::string& service_id);

// "held" ↔ RESERVATION_HELD, ...
v1::ReservationState StateFromName(const std::string& name);
std::string StateName(v1::ReservationState state);  // "" for unspecified

}  // namespace dcl::reservation

#endif  // DCL_SERVICES_RESERVATION_RESERVATION_STORE_H_
