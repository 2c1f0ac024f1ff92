// The one write path for bookings of rack units (placements, blockings, move holds, rack
// reservations). Every booking of every service is created, released and promoted here, and the
// sweeper's lapsed reservations are released here too; no other code writes bookings or
// booking_slots rows. The move service composes these functions
// inside its own transaction.
//
// The boundary is the database: the partial unique index booking_slots_active_uq (one active
// booking per rack, side and unit) and bookings_one_active_placement_per_device (one active
// placement per device, across organizations). The planner (rack_plan.h) runs first only so that
// the ordinary case gets a sentence; a lost race is caught here by the *name* of the index that
// fired (answered by dcl_insert_booking, or GuardedExec for a promotion) and turned into the
// same readable rejection:
//   booking_slots_active_uq                  → FAILED_PRECONDITION UNIT_OCCUPIED, with the
//                                              colliding slots re-read after the violation
//   bookings_one_active_placement_per_device → FAILED_PRECONDITION DEVICE_ALREADY_PLACED, with
//                                              where it is when it is the caller's own
//                                              organization's rack, nothing about another's
// On a rack with power feeds, a cooling budget or an airflow, the schema's budget rows decide
// capacity the same way (schema/migrations/0038_capacity_feeds_cooling.sql), and the CHECK
// that fired is named here, the rack's rows re-read after it to say by how much:
//   rack_feed_within_rating / rack_feed_redundancy / rack_cooling_within_budget
//       → FAILED_PRECONDITION POWER_BUDGET_EXCEEDED / FEED_REDUNDANCY_LOST /
//         COOLING_BUDGET_EXCEEDED, naming the rack, the feed (and the feed lost), used and
//         capacity with this device, and the amount over
//   bookings_power_known / _power_ports_known / _airflow_known / _airflow_matches /
//   _feeds_named → POWER_UNKNOWN / POWER_PORTS_UNKNOWN / AIRFLOW_UNKNOWN / AIRFLOW_MISMATCH /
//         FEEDS_UNNAMED, naming the device and the field to set
// A colliding `reservation` booking whose expiry has passed (the sweeper has not reached it
// yet) does not block: it is released in the same transaction, with a recorded reason, and the
// insert is retried. Deadlines are read from the database clock (now()).
//
// The rack and, for a device footprint, the device are read FOR KEY SHARE: bookings never wait
// for each other there, but the inventory's changes (InventoryService.UpdateRack, UpdateDevice,
// DecommissionDevice lock the row FOR UPDATE) are ordered against every booking in flight. A
// decommissioned device is refused (FAILED_PRECONDITION DEVICE_DECOMMISSIONED).
//
// Every function is scoped by principal.org_id: a rack, booking or device of another
// organization is NOT_FOUND with the same words as an unknown id, resolved before anything else
// is read about it (the global indexes and composite foreign keys stay the final boundary).
// Inputs are validated (INVALID_ARGUMENT) before anything is written. After an error the caller
// rolls its transaction back (pool.Transact does for any non-OK result), which also undoes a lapsed
// reservation released on the way.
#ifndef DCL_SERVICES_OCCUPANCY_BOOKING_STORE_H_
#define DCL_SERVICES_OCCUPANCY_BOOKING_STORE_H_

#include <cstdint>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dcl/v1/occupancy.pb.h"
#include "services/common/booking_kind.h"
#include "services/common/principal.h"
#include "services/occupancy/rack_plan.h"

namespace dcl::occupancy {

// Reservations of rack units wait this long unless the caller says otherwise.
inline constexpr int64_t kDefaultReservationTtlSeconds = 4 * 3600;

// What to book.
//  - BOOKING_PLACEMENT: device_id required; the device's height and depth come from the devices
//    row; `first_unit` is the device's lowest rack unit; `side` the side it hangs on. Never
//    expires (ttl_seconds must be 0: the CHECK bookings_placement_never_expires refuses it).
//  - BOOKING_MOVE_HOLD with a device_id: the same footprint as a placement of that device (this
//    is what PromoteMoveHold turns into a placement). Without a device_id: a range like below.
//  - BOOKING_BLOCKING / BOOKING_RESERVATION / move hold without device: first_unit..last_unit
//    (first <= last, in this rack's numbers) on `side`, or both sides with both_sides.
//    A reservation needs ttl_seconds > 0 (the service's default is 4 hours).
struct BookingSpec {
  std::string rack_id;
  v1::BookingKind kind = v1::BOOKING_KIND_UNSPECIFIED;
  std::string device_id;
  v1::Side side = v1::SIDE_UNSPECIFIED;
  int first_unit = 0;
  int last_unit = 0;
  bool both_sides = false;
  int64_t ttl_seconds = 0;  // > 0: expires_at = now() + ttl, by the database clock
  std::string reason;
  // A rack reservation's figures (schema 0039): the power and weight it holds for what will
  // stand there, counted in the rack's budgets; unset, the reservation holds units only. A
  // device booking counts its device's figures whatever is given here.
  std::optional<int64_t> power_watts;
  std::optional<int64_t> weight_kg;
  // The names of the power feeds ("A", "B") a device booking hangs on, when the device has
  // fewer power ports than the rack has feeds; empty: the database takes all of them, or
  // chooses those with the most headroom and the booking answers them (Booking.power_feeds).
  std::vector<std::string> feed_names;
};

// The spec of a booking of a device's footprint (a placement, or a move hold of the device):
// the device's lowest rack unit at `unit` on `side`.
BookingSpec DeviceFootprintSpec(v1::BookingKind kind, const std::string& rack_id,
                                const std::string& device_id, v1::Side side, int unit,
                                const std::string& reason);
// The spec of a range of units (a blocking or a rack reservation): first_unit..last_unit on
// `side`, or on both sides.
BookingSpec UnitRangeSpec(v1::BookingKind kind, const std::string& rack_id, v1::Side side,
                          bool both_sides, int first_unit, int last_unit, const std::string& reason,
                          int64_t ttl_seconds);

// The result of a dry run: the slots a booking would claim, or the readable rejection (the same
// status CreateBooking would return for it right now). Writes nothing.
struct PlanOutcome {
  std::vector<SlotRef> slots;
  absl::Status rejection;  // OK when the booking would be accepted as of now
};

// ---- Inside a caller's transaction (the move service composes these) ----

// Creates the header and one slot row per claimed (side, unit) in one call of the schema's
// dcl_insert_booking: on a violation neither exists. Returns the booking with its slots.
absl::StatusOr<v1::Booking> CreateBooking(pqxx::transaction_base& tx, const Principal& principal,
                                          const BookingSpec& spec);

// Releases an active booking of `kind` (the kind whose rules the caller checked): header and
// slots in this transaction. Already released, or of another kind by the time the update holds
// the header's row lock (a reservation promoted whole meanwhile) → FAILED_PRECONDITION
// WRONG_STATE (NotOfKind), nothing released. Returns the released booking.
absl::StatusOr<v1::Booking> ReleaseBooking(pqxx::transaction_base& tx, const Principal& principal,
                                           const std::string& booking_id, v1::BookingKind kind,
                                           const std::string& reason);

// The refusal of a release that named a booking of another kind than `expected`.
absl::Status NotOfKind(const std::string& booking_id, v1::BookingKind kind,
                       v1::BookingKind expected);

// Releases up to `limit` active `reservation` bookings of every organization whose expires_at
// has passed by the database clock, oldest deadline first, through the same release statement
// as ReleaseBooking (header and slots together); returns how many bookings. The sweeper's batch:
// rows are picked FOR UPDATE SKIP LOCKED, so a booking another transaction has locked is skipped
// and left for the next pass. Never a placement or a move hold. Fewer than `limit` means every
// lapsed reservation nobody else held is done.
int64_t ReleaseLapsedReservations(pqxx::transaction_base& tx, int limit,
                                  const std::string& released_by, const std::string& reason);

// Turns an active move hold into a placement in one UPDATE: kind move_hold → placement,
// expires_at → NULL; the booking id and its slot rows stay as they are, so the space is never
// free in between. The hold must carry a device_id. The device's previous placement must
// already be released in the same transaction, or the device index refuses it
// (DEVICE_ALREADY_PLACED). Not a move hold / not active → FAILED_PRECONDITION WRONG_STATE.
absl::StatusOr<v1::Booking> PromoteMoveHold(pqxx::transaction_base& tx, const Principal& principal,
                                            const std::string& booking_id);

// PlaceDevice naming the unit reservation it fulfils (`placement` as DeviceFootprintSpec makes
// it). The reservation is locked FOR UPDATE; it must be an active `reservation` of the caller's
// organization (else NOT_FOUND / WRONG_STATE), not lapsed by the database clock (HOLD_EXPIRED,
// enforced here, not by the sweeper), in the placement's rack, and every (side, unit) the
// device's footprint claims must be one of its active slots (else NOT_IN_RESERVATION naming
// the missing units). Then, in one statement, without a free instant:
//  - the device needs every unit the reservation still holds: the header is promoted in place
//    (kind → placement, device_id set, expires_at → NULL, range → the device's); booking id and
//    slot rows stay exactly as they are (not one slot row is written);
//  - the device needs a part: a new placement header is inserted and the slot rows of those
//    units pass to it (booking_id rewritten, released_at NULL in every row version); the rest
//    stays reserved under the reservation's id.
// The device index (one active placement per device) and the device foreign key (same
// organization and site) still decide at that statement, mapped as for CreateBooking.
absl::StatusOr<v1::Booking> PromoteReservation(pqxx::transaction_base& tx,
                                               const Principal& principal,
                                               const std::string& reservation_id,
                                               const BookingSpec& placement);

// One booking of the caller's organization, with its slots (released ones too).
absl::StatusOr<v1::Booking> LoadBooking(pqxx::transaction_base& tx, const Principal& principal,
                                        const std::string& booking_id);

// The active placement of a device of the caller's organization, if it has one.
absl::StatusOr<std::optional<v1::Booking>> FindActivePlacement(pqxx::transaction_base& tx,
                                                               const Principal& principal,
                                                               const std::string& device_id);

// Dry run of CreateBooking against the rack's active bookings (a lapsed reservation counts as
// free, as it would for CreateBooking). The capacity rules are asked of the database by a trial
// insert rolled back to a savepoint at once: the answer is the write's, reason and message, and
// nothing stays written or locked. Bad input and unknown rack/device are returned as the status
// itself, not as a rejection.
absl::StatusOr<PlanOutcome> PlanBooking(pqxx::transaction_base& tx, const Principal& principal,
                                        const BookingSpec& spec);

}  // namespace dcl::occupancy

#endif  // DCL_SERVICES_OCCUPANCY_BOOKING_STORE_H_
