// Persistence of moves: the moves row, its event log (move_events, announced with NOTIFY by a
// trigger in the same transaction), the append-only location history, the move's job, and the
// device's process state, with the reads of racks and devices the move logic needs; all SQL of
// the move logic lives here. Every function runs inside the caller's transaction, so that
// move_logic.cc can compose them with the occupancy booking write path (booking_store.h) in one
// transaction. This file never writes bookings or booking_slots: the move hold, its promotion
// and every release go through the booking store.
//
// Constraint violations are classified here by the constraint's *name* (GuardedExec):
//   moves_same_site            → FAILED_PRECONDITION CROSS_SITE_MOVE
//   moves_one_open_per_device  → FAILED_PRECONDITION MOVE_ALREADY_OPEN
// Every read is scoped by org_id: a move of another organization is NOT_FOUND.
#ifndef DCL_SERVICES_MOVES_MOVE_STORE_H_
#define DCL_SERVICES_MOVES_MOVE_STORE_H_

#include <cstdint>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dcl/v1/moves.pb.h"
#include "services/common/page_token.h"
#include "services/move_workflow/move_state.h"

namespace dcl::moves {

struct MoveRecord {
  std::string id;
  std::string org_id;
  std::string device_id;
  std::string site_id;  // source site = destination site (CHECK moves_same_site)
  std::string source_rack_id;
  std::string source_booking_id;
  std::string destination_rack_id;
  std::string destination_side;  // "front" / "rear"
  int destination_unit = 0;
  std::string move_hold_booking_id;
  MoveState state = MoveState::kDraft;
  std::string preflight_json;
  std::string preflight_process_state;  // preflight->>'process_state'
  std::string job_id;                   // "" when the job was purged
  std::string note;
  int64_t created_at_us = 0;
  int64_t updated_at_us = 0;
  std::string created_by;
  std::string updated_by;
};

v1::Move ToProto(const MoveRecord& record);

// A move's state change as stored in move_events.
struct MoveEventRecord {
  int64_t sequence = 0;
  std::optional<MoveState> from_state;  // none for the event that creates the move
  MoveState to_state = MoveState::kDraft;
  std::string observation;
  std::string note;
  std::string actor;
  int64_t at_us = 0;
};

v1::MoveEvent ToProto(const std::string& move_id, const MoveEventRecord& event);

// The device's process state; the caller holds the device's row lock (devices::LockDevice).
void SetProcessState(pqxx::transaction_base& tx, const std::string& device_id,
                     const std::string& process_state);

// Whether the device exists in the organization (no lock: for reads about it).
bool DeviceInOrganization(pqxx::transaction_base& tx, const std::string& org_id,
                          const std::string& device_id);

// A rack of the organization: its site and the units it has.
struct RackRow {
  std::string site_id;
  int lowest_unit = 0;
  int highest_unit = 0;
  bool has_rear = false;
};
std::optional<RackRow> FindRack(pqxx::transaction_base& tx, const std::string& org_id,
                                const std::string& rack_id);

std::string InsertJob(pqxx::transaction_base& tx, const std::string& org_id,
                      const std::string& kind, const std::string& detail);
// Marks the job finished (succeeded/failed/cancelled); a purged job (NULL reference) is skipped.
void FinishJob(pqxx::transaction_base& tx, const std::string& job_id, const std::string& status);

struct NewMove {
  std::string org_id;
  std::string device_id;
  std::string source_site_id;
  std::string source_rack_id;
  std::string source_booking_id;
  std::string destination_site_id;
  std::string destination_rack_id;
  std::string destination_side;
  int destination_unit = 0;
  MoveState state = MoveState::kPlanned;
  v1::MovePreflight preflight;  // stored as JSON (Move.preflight_json)
  std::string job_id;
  std::string note;
  std::string actor;
};

// Inserts the move (without its hold yet; SetMoveHold must follow in the same transaction).
// Returns its id, or the readable refusal of the constraint that fired.
absl::StatusOr<std::string> InsertMove(pqxx::transaction_base& tx, const NewMove& move);
void SetMoveHold(pqxx::transaction_base& tx, const std::string& move_id,
                 const std::string& booking_id);

// Loads a move of the organization; `for_update` locks its row.
absl::StatusOr<MoveRecord> LoadMove(pqxx::transaction_base& tx, const std::string& org_id,
                                    const std::string& move_id, bool for_update);

// Sets the state (and ended_at for terminal states) and the actor.
void UpdateState(pqxx::transaction_base& tx, const std::string& move_id, MoveState state,
                 const std::string& actor);

// Appends the next event of the move (sequence = last + 1; the caller holds the move's row
// lock or has just inserted it). The trigger announces it on commit. Returns its sequence.
int64_t AppendEvent(pqxx::transaction_base& tx, const std::string& org_id,
                    const std::string& move_id, std::optional<MoveState> from, MoveState to,
                    const std::string& observation, const std::string& note,
                    const std::string& actor);

// The move's events with sequence > after, in order.
std::vector<MoveEventRecord> EventsAfter(pqxx::transaction_base& tx, const std::string& org_id,
                                         const std::string& move_id, int64_t after);

// One appended row of location history: where the device is recorded after an event. Empty
// rack_id = position unknown (needs_reconcile).
struct LocationRow {
  std::string org_id;
  std::string device_id;
  std::string site_id;
  std::string rack_id;
  std::string side;
  int first_unit = 0;
  int last_unit = 0;
  std::string event;
  std::string move_id;
  std::string move_state;
  std::string booking_id;
  int64_t corrects_id = 0;  // a correction: the row it corrects (event "correction")
  std::string note;
  std::string actor;
};
// Appends the row; returns its id. The table refuses UPDATE, DELETE and TRUNCATE.
int64_t AppendLocation(pqxx::transaction_base& tx, const LocationRow& row);

// A stored row of location history.
struct LocationRecordRow {
  int64_t id = 0;
  LocationRow row;  // rack_id empty = position unknown
  int64_t recorded_at_us = 0;
};
v1::LocationRecord ToProto(const LocationRecordRow& record);

// The row `id` of the organization's history, if any.
std::optional<LocationRecordRow> LoadLocation(pqxx::transaction_base& tx, const std::string& org_id,
                                              int64_t id);
// The device's rows that are not corrections, newest first (PageOrder::kSerialId, descending):
// at most `limit` rows after `after` (nullopt: from the newest).
Page<LocationRecordRow> LocationPage(pqxx::transaction_base& tx, const std::string& org_id,
                                     const std::string& device_id,
                                     const std::optional<PageCursor>& after, int limit);
// The corrections of the rows `ids`, newest first.
std::vector<LocationRecordRow> CorrectionsOf(pqxx::transaction_base& tx,
                                             const std::string& org_id,
                                             const std::vector<int64_t>& ids);

struct MoveFilter {
  std::optional<MoveState> state;
  std::string device_id;
};
// The moves in creation order (PageOrder::kCreation): `limit` rows after `after`.
Page<MoveRecord> ListMoves(pqxx::transaction_base& tx, const std::string& org_id,
                           const MoveFilter& filter, const std::optional<PageCursor>& after,
                           int limit);

}  // namespace dcl::moves

#endif  // DCL_SERVICES_MOVES_MOVE_STORE_H_
