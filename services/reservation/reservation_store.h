// Persistence of reservations, services and service bindings: every SQL statement of the
// reservation service lives here, and each aggregate has one write path. Functions run inside
// the caller's transaction (DbPool::Transact) and leave driver exceptions to it.
//
// Constraint violations are told apart by the violated constraint's NAME (GuardedExec), mapped
// with the explicit constants below; message text is never read.
#ifndef DCL_SERVICES_RESERVATION_RESERVATION_STORE_H_
#define DCL_SERVICES_RESERVATION_RESERVATION_STORE_H_

#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dcl/v1/reservation.pb.h"
#include "services/common/db.h"
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

// Paging position: the last row of the previous page.
struct ListCursor {
  int64_t created_at_us = 0;
  std::string id;
};

class ReservationStore {
 public:
  // --- reservations: reads
  static std::optional<ReservationRecord> FindById(pqxx::work& tx, const std::string& org,
                                                   const std::string& id, bool lock);
  static std::optional<ReservationRecord> FindByKey(pqxx::work& tx, const std::string& org,
                                                    const std::string& key, bool lock);
  static std::vector<v1::Reservation> List(pqxx::work& tx, const std::string& org,
                                           const std::string& state,  // "" = all
                                           const std::optional<ListCursor>& after, int limit,
                                           std::vector<ListCursor>* cursors);

  // --- devices as candidates
  static bool SiteExists(pqxx::work& tx, const std::string& org, const std::string& site);
  // Up to `limit` devices matching the criteria that look sellable in this statement's snapshot,
  // in id order starting at `pivot` and wrapping around. Callers classify them again.
  static std::vector<DeviceFacts> FetchCandidates(pqxx::work& tx, const std::string& org,
                                                  const Criteria& criteria,
                                                  const std::string& pivot, int limit);
  // Pass 2's step: the next device in id order after `after` (inclusive when `inclusive`) and,
  // when `before` is non-empty, before it, that looks sellable in this statement's (fresh)
  // snapshot and that no other transaction has locked, locked FOR NO KEY UPDATE SKIP LOCKED.
  // One row, never a set: a row another order is examining is passed over, not waited for.
  static std::optional<DeviceFacts> LockNextCandidate(pqxx::work& tx, const std::string& org,
                                                      const Criteria& criteria,
                                                      const std::string& after, bool inclusive,
                                                      const std::string& before);
  // The device's facts in a fresh snapshot (call after locking it).
  static std::optional<DeviceFacts> ReadDeviceFacts(pqxx::work& tx, const std::string& org,
                                                    const std::string& device_id);
  // Every device of the organization, grouped by facts and classified.
  static ExclusionSummary SummarizeExclusions(pqxx::work& tx, const std::string& org,
                                              const Criteria& criteria, int max_listed);

  // --- reservations: the write path
  // Inserts a hold (guarded): the violated constraint's name decides what a failure means.
  static GuardedResult InsertHold(pqxx::work& tx, const std::string& org, const std::string& key,
                                  const std::string& device_id, const Criteria& criteria,
                                  const std::string& selection_reason_json, int ttl_seconds,
                                  const std::string& actor);
  // held → converted / expired (at conversion) / cancelled. The row must be locked and held.
  static void MarkConverted(pqxx::work& tx, const std::string& id, const std::string& service_id,
                            const std::string& actor);
  static void MarkExpiredAtConversion(pqxx::work& tx, const std::string& id,
                                      const std::string& actor);
  static void MarkCancelled(pqxx::work& tx, const std::string& id, const std::string& actor,
                            const std::string& note);

  // --- services and bindings
  static v1::Service InsertService(pqxx::work& tx, const std::string& org, const std::string& kind,
                                   const std::string& customer, const std::string& actor);
  // The one function that writes service bindings.
  static absl::StatusOr<v1::ServiceBinding> WriteBinding(pqxx::work& tx, const std::string& org,
                                                         const std::string& service_id,
                                                         const std::string& device_id,
                                                         const std::string& reservation_id,
                                                         const std::string& actor);
  static std::optional<v1::ServiceBinding> FindBindingOfReservation(
      pqxx::work& tx, const std::string& org, const std::string& reservation_id);
  // Sets ended_at on an active binding; an ended one is returned as it is (replay).
  static absl::StatusOr<v1::ServiceBinding> EndBinding(pqxx::work& tx, const std::string& org,
                                                       const std::string& binding_id,
                                                       const std::string& actor, bool* replay);
};

// "held" ↔ RESERVATION_HELD, ...
v1::ReservationState StateFromName(const std::string& name);
std::string StateName(v1::ReservationState state);  // "" for unspecified

}  // namespace dcl::reservation

#endif  // DCL_SERVICES_RESERVATION_RESERVATION_STORE_H_
