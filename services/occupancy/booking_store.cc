#include "services/occupancy/booking_store.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <iterator>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "services/common/db.h"
#include "services/common/status.h"
#include "services/common/time_util.h"
#include "services/common/validation.h"
#include "services/occupancy/capacity_refusal.h"

namespace dcl::occupancy {
namespace {

// The names the schema gives the constraints this write path can trip over
// (schema/migrations/0003_bookings.sql). Violations are classified by these names only.
constexpr char kSlotIndex[] = "booking_slots_active_uq";
constexpr char kDevicePlacementIndex[] = "bookings_one_active_placement_per_device";
constexpr char kDeviceFk[] = "bookings_device_fk";
constexpr char kRackFk[] = "bookings_rack_fk";
constexpr char kSiteFk[] = "bookings_site_fk";
constexpr char kPlacementNeedsDevice[] = "bookings_placement_needs_device";
constexpr char kPlacementNeverExpires[] = "bookings_placement_never_expires";
constexpr char kReservationExpires[] = "bookings_reservation_expires";

// How many times a create is retried after releasing lapsed reservations it collided with (or
// after the colliding booking vanished before it could be re-read).
constexpr int kMaxInsertAttempts = 4;
// A TTL longer than this is a typo, not a plan.
constexpr int64_t kMaxTtlSeconds = 90LL * 24 * 3600;

// A lapsed reservation: the deadline is read from the database clock.
constexpr char kLapsedSql[] = "(b.kind = 'reservation' AND b.expires_at <= now())";

std::string Text(const pqxx::field& f) { return f.is_null() ? std::string() : f.as<std::string>(); }

std::string IntArrayLiteral(const std::vector<SlotRef>& slots) {
  std::string out = "{";
  for (size_t i = 0; i < slots.size(); ++i) {
    if (i > 0) out += ',';
    out += std::to_string(slots[i].unit);
  }
  return out + "}";
}

std::vector<std::optional<std::string>> SideArgs(const std::vector<SlotRef>& slots) {
  std::vector<std::optional<std::string>> sides;
  sides.reserve(slots.size());
  for (const SlotRef& s : slots) sides.emplace_back(SideName(s.side));
  return sides;
}

// The rack as the planner needs it, read scoped by organization.
struct RackRow {
  std::string id;
  std::string site_id;
  std::string name;
  Geometry geometry;
};

bool UsesDeviceFootprint(const BookingSpec& spec) {
  return spec.kind == v1::BOOKING_PLACEMENT ||
         (spec.kind == v1::BOOKING_MOVE_HOLD && !spec.device_id.empty());
}

// A device has at most 16 power ports (devices_power_port_count_valid): no booking hangs on more
// feeds than that.
constexpr size_t kMaxPowerFeedNames = 16;

// The feeds a booking names, as the text[] argument; NULL when it names none.
std::optional<std::string> FeedNamesArg(const BookingSpec& spec) {
  if (spec.feed_names.empty()) return std::nullopt;
  return TextArrayLiteral(
      std::vector<std::optional<std::string>>(spec.feed_names.begin(), spec.feed_names.end()));
}

absl::Status ValidateSpec(const BookingSpec& spec) {
  if (absl::Status s = CheckId("rack_id", spec.rack_id); !s.ok()) return s;
  switch (spec.kind) {
    case v1::BOOKING_PLACEMENT:
      if (absl::Status s = CheckId("device_id", spec.device_id); !s.ok()) return s;
      break;
    case v1::BOOKING_MOVE_HOLD:
      if (!spec.device_id.empty()) {
        if (absl::Status s = CheckId("device_id", spec.device_id); !s.ok()) return s;
      }
      break;
    case v1::BOOKING_BLOCKING:
    case v1::BOOKING_RESERVATION:
      if (!spec.device_id.empty()) {
        return InvalidInput("device_id", "only a placement or a move hold names a device");
      }
      break;
    default:
      return InvalidInput("kind", "must be placement, blocking, move_hold or reservation");
  }
  const bool side_given = spec.side == v1::SIDE_FRONT || spec.side == v1::SIDE_REAR;
  const bool range_on_both_sides = spec.both_sides && !UsesDeviceFootprint(spec);
  if (!side_given && !(range_on_both_sides && spec.side == v1::SIDE_UNSPECIFIED)) {
    return InvalidInput("side", range_on_both_sides ? "must be front, rear or unspecified"
                                                    : "must be front or rear");
  }
  if (spec.ttl_seconds < 0 || spec.ttl_seconds > kMaxTtlSeconds) {
    return InvalidInput("ttl_seconds", absl::StrCat("must be between 0 and ", kMaxTtlSeconds));
  }
  // A reservation's figures: at most what a whole rack may be budgeted (validation.h), so no
  // sum of a rack's bookings leaves 64 bits; a device booking takes its device's (0039).
  if ((spec.power_watts || spec.weight_kg) && spec.kind != v1::BOOKING_RESERVATION) {
    return InvalidInput(spec.power_watts ? "power_watts" : "weight_kg",
                        "only a rack reservation carries its own figures; a device booking "
                        "counts its device's");
  }
  if (spec.power_watts && (*spec.power_watts < 0 || *spec.power_watts > kMaxRackPowerWatts)) {
    return InvalidInput("power_watts", absl::StrCat("must be between 0 and ", kMaxRackPowerWatts));
  }
  if (spec.weight_kg && (*spec.weight_kg < 0 || *spec.weight_kg > kMaxRackWeightKg)) {
    return InvalidInput("weight_kg", absl::StrCat("must be between 0 and ", kMaxRackWeightKg));
  }
  if (!spec.feed_names.empty() && spec.device_id.empty()) {
    return InvalidInput("power_feeds", "only a device booking hangs on power feeds");
  }
  if (spec.feed_names.size() > kMaxPowerFeedNames) {
    return InvalidInput("power_feeds", absl::StrCat("at most ", kMaxPowerFeedNames, " feeds"));
  }
  for (const std::string& feed : spec.feed_names) {
    if (absl::Status s = CheckText("power_feeds", feed, kMaxNameLength, /*required=*/true);
        !s.ok()) {
      return s;
    }
  }
  // A placement with an expiry is left to the CHECK bookings_placement_never_expires (mapped
  // below); a reservation without one to bookings_reservation_expires.
  return CheckText("reason", spec.reason, kMaxNoteLength, /*required=*/false);
}

// Everything CreateBooking knows before it writes: the rack, the claimed slots (or the
// planner's rejection).
struct Prepared {
  RackRow rack;
  absl::StatusOr<std::vector<SlotRef>> plan = std::vector<SlotRef>{};
};

// The rack, the device (when the booking has a device's footprint) and the rack's taken slots,
// in one statement: one round trip instead of three.
//   * The rack FOR KEY SHARE: a geometry change (InventoryService.UpdateRack locks the rack FOR
//     UPDATE) waits for this booking and then sees it, or this booking waits and plans against
//     the new geometry. Bookings do not block each other here.
//   * The device, resolved within the caller's organization before its height or depth can shape
//     any answer (ownership before revelation: another organization's device reads exactly like
//     an unknown one, placed or not), FOR KEY SHARE: that orders this booking against the
//     inventory's changes of the device (decommission, height or depth), which lock it FOR
//     UPDATE. Reserve's row lock does not conflict with it. The global one-placement-per-device
//     index and the composite foreign key bookings_device_fk (ownership and same site) stay the
//     final boundary at the insert.
//   * The taken slots: active, and a lapsed reservation does not count. They are read in the
//     statement's snapshot; a booking committed while this statement waited for a lock is
//     caught by the slot index at the insert, which stays the arbiter (detected_by slot_index).
constexpr char kPrepareSql[] = R"sql(
SELECT r.site_id::text, r.name, r.first_unit, r.unit_count, r.numbering, r.has_rear,
       d.height_units, d.depth_class, d.decommissioned,
       (SELECT string_agg(s.side || ' ' || s.unit, ',')
          FROM booking_slots s JOIN bookings b ON b.id = s.booking_id
         WHERE s.rack_id = r.id AND s.released_at IS NULL
           AND NOT (b.kind = 'reservation' AND b.expires_at <= now()))
  FROM racks r
  LEFT JOIN LATERAL (
    SELECT v.height_units, v.depth_class, v.decommissioned_at IS NOT NULL AS decommissioned
      FROM devices v
     WHERE v.id = nullif($3, '')::uuid AND v.org_id = $2::uuid
       FOR KEY SHARE) d ON true
 WHERE r.id = $1::uuid AND r.org_id = $2::uuid
   FOR KEY SHARE OF r
)sql";

// Slots aggregated by a statement as "side unit,side unit,..." (NULL: none).
absl::StatusOr<std::vector<SlotRef>> SlotList(const pqxx::field& field) {
  std::vector<SlotRef> slots;
  if (field.is_null()) return slots;
  for (absl::string_view slot : absl::StrSplit(field.as<std::string>(), ',')) {
    std::pair<std::string, std::string> side_unit = absl::StrSplit(slot, ' ');
    int unit = 0;
    if (!absl::SimpleAtoi(side_unit.second, &unit)) {
      return Internal(absl::StrCat("unreadable slot in a statement's answer: ", slot));
    }
    slots.push_back({ParseSide(side_unit.first), unit});
  }
  return slots;
}

// `against_taken` false: the plan checks side and bounds only (a promotion out of a reservation
// claims units its reservation holds, which the rack's taken slots include).
absl::StatusOr<Prepared> Prepare(pqxx::transaction_base& tx, const Principal& principal,
                                 const BookingSpec& spec, bool against_taken = true) {
  if (absl::Status s = ValidateSpec(spec); !s.ok()) return s;
  const bool footprint = UsesDeviceFootprint(spec);
  pqxx::result r = ExecCached(tx, kPrepareSql, spec.rack_id, principal.org_id,
                              footprint ? spec.device_id : std::string());
  if (r.empty()) return NotFound("rack", spec.rack_id);
  const pqxx::row row = r[0];
  Prepared prepared;
  prepared.rack.id = spec.rack_id;
  prepared.rack.site_id = row[0].as<std::string>();
  prepared.rack.name = row[1].as<std::string>();
  prepared.rack.geometry.first_unit = row[2].as<int>();
  prepared.rack.geometry.unit_count = row[3].as<int>();
  prepared.rack.geometry.descending = row[4].as<std::string>() == "descending";
  prepared.rack.geometry.has_rear = row[5].as<bool>();
  PlanRequest request;
  request.side = spec.side;
  if (footprint) {
    if (row[6].is_null()) return NotFound("device", spec.device_id);
    if (row[8].as<bool>()) {
      // Enforced here, not in the schema: a retired machine takes no space. A refusal of this
      // booking (PlanBooking answers it inside the plan), not bad input.
      prepared.plan = Error(absl::StatusCode::kFailedPrecondition, v1::DEVICE_DECOMMISSIONED,
                            absl::StrCat("device ", spec.device_id, " is decommissioned"))
                          .Meta("device_id", spec.device_id)
                          .status();
      return prepared;
    }
    request.device_footprint = true;
    request.anchor_unit = spec.first_unit;
    request.height = row[6].as<int>();
    request.depth = ParseDepth(row[7].as<std::string>());
  } else {
    request.first_unit = spec.first_unit;
    request.last_unit = spec.last_unit;
    request.both_sides = spec.both_sides;
  }
  absl::StatusOr<std::vector<SlotRef>> taken = SlotList(row[9]);
  if (!taken.ok()) return taken.status();
  prepared.plan =
      Plan(prepared.rack.geometry, against_taken ? *taken : std::vector<SlotRef>{}, request);
  // Malformed requests are the caller's error, not a rejection of this booking.
  if (!prepared.plan.ok() && prepared.plan.status().code() == absl::StatusCode::kInvalidArgument) {
    return prepared.plan.status();
  }
  return prepared;
}

// One active slot that a claimed slot collides with.
struct Collision {
  SlotRef slot;
  std::string booking_id;
  bool lapsed = false;
};

std::vector<Collision> ReadCollisions(pqxx::transaction_base& tx, const std::string& rack_id,
                                      const std::vector<SlotRef>& claimed) {
  pqxx::result r = tx.exec_params(
      absl::StrCat("SELECT s.side, s.unit, b.id::text, ", kLapsedSql,
                   " FROM booking_slots s JOIN bookings b ON b.id = s.booking_id "
                   "WHERE s.rack_id = $1::uuid AND s.released_at IS NULL "
                   "AND (s.side, s.unit) IN (SELECT * FROM unnest($2::text[], $3::int[])) "
                   "ORDER BY s.side = 'rear', s.unit"),
      rack_id, TextArrayLiteral(SideArgs(claimed)), IntArrayLiteral(claimed));
  std::vector<Collision> out;
  for (const auto& row : r) {
    out.push_back({{ParseSide(row[0].as<std::string>()), row[1].as<int>()},
                   row[2].as<std::string>(),
                   row[3].as<bool>()});
  }
  return out;
}

absl::Status UnitOccupied(const std::vector<SlotRef>& colliding, const std::string& detected_by) {
  Error error(
      absl::StatusCode::kFailedPrecondition, v1::UNIT_OCCUPIED,
      absl::StrCat(DescribeSlots(colliding), colliding.size() == 1 ? " is" : " are", " taken"));
  for (const SlotRef& s : colliding) {
    v1::Slot* slot = error.detail().add_colliding_slots();
    slot->set_side(s.side);
    slot->set_unit(s.unit);
  }
  error.Meta("detected_by", detected_by);
  return error.status();
}

// Where the device is placed, told only to its own organization.
absl::Status DeviceAlreadyPlaced(pqxx::transaction_base& tx, const Principal& principal,
                                 const std::string& device_id) {
  pqxx::result r =
      ExecCached(tx,
                 "SELECT b.org_id::text, b.id::text, b.rack_id::text, r.name, b.front, b.rear, "
                 "b.first_unit, b.last_unit FROM bookings b JOIN racks r ON r.id = b.rack_id "
                 "WHERE b.device_id = $1::uuid AND b.kind = 'placement' AND b.released_at IS NULL",
                 device_id);
  if (r.empty() || r[0][0].as<std::string>() != principal.org_id) {
    // Another organization's placement (or one released a moment ago): the constraint spoke,
    // but nothing about another organization's racks is told.
    return Error(absl::StatusCode::kFailedPrecondition, v1::DEVICE_ALREADY_PLACED,
                 absl::StrCat("device ", device_id, " is already placed"))
        .Meta("device_id", device_id);
  }
  const auto row = r[0];
  const bool front = row[4].as<bool>();
  const bool rear = row[5].as<bool>();
  const std::string sides = front && rear ? "front and rear" : front ? "front" : "rear";
  const int first = row[6].as<int>();
  const int last = row[7].as<int>();
  return Error(absl::StatusCode::kFailedPrecondition, v1::DEVICE_ALREADY_PLACED,
               absl::StrCat("device ", device_id, " is already placed in rack ",
                            row[3].as<std::string>(), " (", sides, " U", first,
                            first == last ? "" : absl::StrCat("..U", last), ")"))
      .Meta("device_id", device_id)
      .Meta("booking_id", row[1].as<std::string>())
      .Meta("rack_id", row[2].as<std::string>())
      .Meta("rack_name", row[3].as<std::string>())
      .Meta("first_unit", std::to_string(first))
      .Meta("last_unit", std::to_string(last));
}

absl::Status DeviceNotUsable(pqxx::transaction_base& tx, const Principal& principal,
                             const std::string& device_id) {
  pqxx::result r = ExecCached(tx, "SELECT 1 FROM devices WHERE id = $1::uuid AND org_id = $2::uuid",
                              device_id, principal.org_id);
  if (r.empty()) return NotFound("device", device_id);
  return Error(absl::StatusCode::kFailedPrecondition, v1::WRONG_STATE,
               absl::StrCat("device ", device_id, " is registered at another site than the rack"))
      .Meta("device_id", device_id);
}

// Maps the constraint a guarded write violated to the caller's rejection. Slot collisions are
// handled by the caller (they may be retried).
absl::Status ConstraintRejection(pqxx::transaction_base& tx, const Principal& principal,
                                 const BookingSpec& spec, const GuardedResult& result) {
  const std::string& name = result.violated_constraint;
  if (name == kDevicePlacementIndex) return DeviceAlreadyPlaced(tx, principal, spec.device_id);
  if (name == kDeviceFk) return DeviceNotUsable(tx, principal, spec.device_id);
  if (name == kRackFk || name == kSiteFk) return NotFound("rack", spec.rack_id);
  if (name == kPlacementNeedsDevice) {
    return InvalidInput("device_id", "a placement needs a device");
  }
  if (name == kPlacementNeverExpires) {
    return InvalidInput("ttl_seconds", "a placement never expires");
  }
  if (name == kReservationExpires) {
    return InvalidInput("ttl_seconds", "a reservation needs an expiry");
  }
  // The capacity rules of 0038 and 0039 (capacity_refusal.h).
  if (std::optional<absl::Status> refusal = CapacityRefusal(
          tx, {spec.rack_id, spec.device_id, spec.power_watts, spec.weight_kg, FeedNamesArg(spec)},
          name)) {
    return *refusal;
  }
  return UnexpectedViolation("booking", result);
}

// The header and every slot in one call of dcl_insert_booking (schema/migrations/
// 0026_booking_insert_function.sql): its insert is static SQL, planned once per backend, and a
// violation undoes both (no orphan header) and answers the violated constraint's name. It
// answers what the response needs and only the database knows, as one text: id, rack id,
// device id (canonical text), created_at and expires_at in microseconds (as SqlMicros spells
// them), separated by '|'; so a booking is not read back after it is written.
constexpr char kInsertBookingSql[] =
    "SELECT returned, violated_constraint, violated_sqlstate FROM dcl_insert_booking("
    "$1::uuid, $2::uuid, $3::uuid, $4::text, $5::uuid, $6::boolean, $7::boolean, $8::integer, "
    "$9::integer, $10::bigint, $11::text, $12::text, $13::text[], $14::integer[], $15::bigint, "
    "$16::bigint, $17::text[])";

// What CreateBooking writes, as dcl_insert_booking's arguments.
struct InsertArgs {
  std::string org_id;
  std::string site_id;
  std::string rack_id;
  std::string kind;
  const char* device_id = nullptr;  // NULL for a booking without a device
  bool front = false;
  bool rear = false;
  int first_unit = 0;
  int last_unit = 0;
  int64_t ttl_seconds = 0;
  std::string actor;
  std::string reason;
  std::string sides;  // text[] literal
  std::string units;  // integer[] literal
  std::optional<int64_t> power_watts;  // a reservation's figures (BookingSpec)
  std::optional<int64_t> weight_kg;
  std::optional<std::string> feed_names;  // text[] literal; NULL when none are named
};

// The function's outcome in GuardedExec's shape, so that one mapping (ConstraintRejection) reads
// the violations of the insert and of the promotion. ExecCached: the call is parsed and planned
// once per connection where the connection is its own.
GuardedResult InsertBooking(pqxx::transaction_base& tx, const InsertArgs& a) {
  const pqxx::row row = ExecCached1(tx, kInsertBookingSql, a.org_id, a.site_id, a.rack_id, a.kind,
                                    a.device_id, a.front, a.rear, a.first_unit, a.last_unit,
                                    a.ttl_seconds, a.actor, a.reason, a.sides, a.units,
                                    a.power_watts, a.weight_kg, a.feed_names);
  GuardedResult result;
  if (!row[0].is_null()) result.returned = row[0].as<std::string>();
  result.affected = result.returned ? 1 : 0;
  if (!row[1].is_null()) result.violated_constraint = row[1].as<std::string>();
  if (!row[2].is_null()) result.violated_sqlstate = row[2].as<std::string>();
  return result;
}

// The created booking, from the insert's answer and what was inserted (LoadBooking's shape:
// slots front first, then by unit).
absl::StatusOr<v1::Booking> CreatedBooking(const std::string& returned, const BookingSpec& spec,
                                           const Principal& principal,
                                           std::vector<SlotRef> claimed) {
  std::vector<std::string> fields = absl::StrSplit(returned, '|');
  int64_t created_us = 0;
  int64_t expires_us = 0;
  if (fields.size() != 6 || !absl::SimpleAtoi(fields[3], &created_us) ||
      (!fields[4].empty() && !absl::SimpleAtoi(fields[4], &expires_us))) {
    return Internal(absl::StrCat("unreadable booking insert answer: ", returned));
  }
  v1::Booking booking;
  booking.set_id(fields[0]);
  booking.set_rack_id(fields[1]);
  booking.set_kind(spec.kind);
  booking.set_device_id(fields[2]);
  booking.set_created_by(principal.Actor());
  booking.set_reason(spec.reason);
  if (!fields[4].empty()) SetTimestampFromMicros(expires_us, booking.mutable_expires_at());
  SetTimestampFromMicros(created_us, booking.mutable_created_at());
  for (absl::string_view feed : absl::StrSplit(fields[5], ',', absl::SkipEmpty())) {
    booking.add_power_feeds(std::string(feed));
  }
  std::sort(claimed.begin(), claimed.end(), [](const SlotRef& a, const SlotRef& b) {
    const bool a_rear = a.side == v1::SIDE_REAR;
    const bool b_rear = b.side == v1::SIDE_REAR;
    return a_rear != b_rear ? b_rear : a.unit < b.unit;
  });
  for (const SlotRef& s : claimed) {
    v1::Slot* slot = booking.add_slots();
    slot->set_side(s.side);
    slot->set_unit(s.unit);
  }
  return booking;
}

// The release statement's default answer: (bookings released, slots released).
constexpr char kReleasedCounts[] = "SELECT (SELECT count(*) FROM h), (SELECT count(*) FROM s)";

// The one release statement: every booking the `targets` query names (a query yielding `id`) that
// is still active gets released_at (database clock), released_by ($1) and release_reason ($2),
// and its slot rows released_at, in one statement, so a booking is never half released. The
// targets' own parameters are $3 onwards. `answer` is the statement's final query; it sees the
// released headers as `h` (their new values) and the released slots as `s`. By default it
// returns (bookings released, slots released).
// `still`: a further condition on the header `b` in the update itself, which a concurrent
// change is re-checked against after its row lock is released (READ COMMITTED re-evaluates the
// update's own conditions on the newest version, not the targets' snapshot).
std::string ReleaseSql(const char* targets, const std::string& answer = kReleasedCounts,
                       const std::string& still = "") {
  return absl::StrCat(
      "WITH targets AS (", targets,
      "), h AS (UPDATE bookings b SET released_at = now(), released_by = $1, "
      "release_reason = $2 FROM targets WHERE b.id = targets.id AND b.released_at IS NULL",
      still,
      " RETURNING b.*), "
      "s AS (UPDATE booking_slots SET released_at = now() FROM h "
      "WHERE booking_slots.booking_id = h.id AND booking_slots.released_at IS NULL "
      "RETURNING booking_slots.side, booking_slots.unit) ",
      answer);
}

// The header columns of a booking as BookingFromHeader reads them, from `bookings` or from the
// release statement's `h`.
const std::string& HeaderColumns() {
  static const std::string* columns = new std::string(absl::StrCat(
      "rack_id::text, kind, device_id::text, created_by, reason, released_by, ",
      SqlMicros("expires_at"), ", ", SqlMicros("created_at"), ", ", SqlMicros("released_at"),
      // The feeds a device booking hangs on by name or dcl's choice (0039); no query without.
      ", CASE WHEN feed_ids IS NULL THEN '' ELSE (SELECT string_agg(f.name, ',' ORDER BY f.name) "
      "FROM power_feeds f WHERE f.id = ANY (feed_ids)) END"));
  return *columns;
}

constexpr int kHeaderColumnCount = 10;

// The booking from HeaderColumns() at the start of `row`, without its slots.
v1::Booking BookingFromHeader(const std::string& booking_id, const pqxx::row& row) {
  v1::Booking booking;
  booking.set_id(booking_id);
  booking.set_rack_id(row[0].as<std::string>());
  booking.set_kind(ParseBookingKind(row[1].as<std::string>()));
  booking.set_device_id(Text(row[2]));
  booking.set_created_by(row[3].as<std::string>());
  booking.set_reason(row[4].as<std::string>());
  booking.set_released_by(Text(row[5]));
  if (!row[6].is_null()) {
    SetTimestampFromMicros(row[6].as<int64_t>(), booking.mutable_expires_at());
  }
  SetTimestampFromMicros(row[7].as<int64_t>(), booking.mutable_created_at());
  if (!row[8].is_null()) {
    SetTimestampFromMicros(row[8].as<int64_t>(), booking.mutable_released_at());
  }
  for (absl::string_view feed : absl::StrSplit(Text(row[9]), ',', absl::SkipEmpty())) {
    booking.add_power_feeds(std::string(feed));
  }
  return booking;
}

// ReleaseSql's targets for one booking of one organization: $3 the booking, $4 the organization.
constexpr char kOneBookingOfOrg[] =
    "SELECT id FROM bookings WHERE id = $3::uuid AND org_id = $4::uuid";

// Releases header and slots of one reservation whose deadline has passed; returns whether it
// did. Lapsed is a condition of the update itself (enforced by this statement): a promotion that
// began before the deadline and commits after it while this waits for the header's row lock has
// made it a placement, which matches nothing here and keeps its units.
bool ReleaseLapsedRow(pqxx::transaction_base& tx, const std::string& org_id,
                      const std::string& booking_id, const std::string& released_by,
                      const std::string& reason) {
  static const std::string* sql = new std::string(
      ReleaseSql(kOneBookingOfOrg, kReleasedCounts, absl::StrCat(" AND ", kLapsedSql)));
  pqxx::row r = ExecCached1(tx, *sql, released_by, reason, booking_id, org_id);
  return r[0].as<int64_t>() > 0;
}

// The planner's rejection, saying that the planner (not an index) caught it.
absl::Status Detected(const absl::Status& status, const std::string& by) {
  std::optional<v1::ErrorDetail> detail = GetErrorDetail(status);
  if (!detail) return status;
  (*detail->mutable_metadata())["detected_by"] = by;
  absl::Status out(status.code(), status.message());
  out.SetPayload(kErrorDetailUrl, absl::Cord(detail->SerializeAsString()));
  return out;
}

// What every booking names: its kind, the rack, the side and the first unit, and why.
BookingSpec SpecAt(v1::BookingKind kind, const std::string& rack_id, v1::Side side, int first_unit,
                   const std::string& reason) {
  BookingSpec spec;
  spec.kind = kind;
  spec.rack_id = rack_id;
  spec.side = side;
  spec.first_unit = first_unit;
  spec.reason = reason;
  return spec;
}

absl::Status WrongState(const std::string& booking_id, const std::string& message) {
  return Error(absl::StatusCode::kFailedPrecondition, v1::WRONG_STATE, message)
      .Meta("booking_id", booking_id);
}

}  // namespace

absl::Status NotOfKind(const std::string& booking_id, v1::BookingKind kind,
                       v1::BookingKind expected) {
  return Error(absl::StatusCode::kFailedPrecondition, v1::WRONG_STATE,
               absl::StrCat("booking ", booking_id, " is a ", BookingKindName(kind), " now, not a ",
                            BookingKindName(expected), "; nothing was released"))
      .Meta("booking_id", booking_id)
      .Meta("kind", BookingKindName(kind))
      .Meta("expected_kind", BookingKindName(expected));
}

BookingSpec DeviceFootprintSpec(v1::BookingKind kind, const std::string& rack_id,
                                const std::string& device_id, v1::Side side, int unit,
                                const std::string& reason) {
  BookingSpec spec = SpecAt(kind, rack_id, side, unit, reason);
  spec.device_id = device_id;
  return spec;
}

BookingSpec UnitRangeSpec(v1::BookingKind kind, const std::string& rack_id, v1::Side side,
                          bool both_sides, int first_unit, int last_unit, const std::string& reason,
                          int64_t ttl_seconds) {
  BookingSpec spec = SpecAt(kind, rack_id, side, first_unit, reason);
  spec.both_sides = both_sides;
  spec.last_unit = last_unit;
  spec.ttl_seconds = ttl_seconds;
  return spec;
}

absl::StatusOr<v1::Booking> LoadBooking(pqxx::transaction_base& tx, const Principal& principal,
                                        const std::string& booking_id) {
  if (absl::Status s = CheckId("booking_id", booking_id); !s.ok()) return s;
  static const std::string* sql = new std::string(absl::StrCat(
      "SELECT ", HeaderColumns(), " FROM bookings WHERE id = $1::uuid AND org_id = $2::uuid"));
  pqxx::result h = ExecCached(tx, *sql, booking_id, principal.org_id);
  if (h.empty()) return NotFound("booking", booking_id);
  v1::Booking booking = BookingFromHeader(booking_id, h[0]);
  pqxx::result slots =
      ExecCached(tx,
                 "SELECT side, unit FROM booking_slots WHERE booking_id = $1::uuid "
                 "ORDER BY side = 'rear', unit",
                 booking_id);
  for (const auto& s : slots) {
    v1::Slot* slot = booking.add_slots();
    slot->set_side(ParseSide(s[0].as<std::string>()));
    slot->set_unit(s[1].as<int>());
  }
  return booking;
}

// dcl_insert_booking's arguments for the booking `spec` claiming `claimed` in the prepared rack.
InsertArgs ArgsFor(const Principal& principal, const BookingSpec& spec, const Prepared& prepared,
                   const std::vector<SlotRef>& claimed) {
  bool front = false;
  bool rear = false;
  int low = claimed.front().unit;
  int high = claimed.front().unit;
  for (const SlotRef& s : claimed) {
    (s.side == v1::SIDE_FRONT ? front : rear) = true;
    low = std::min(low, s.unit);
    high = std::max(high, s.unit);
  }
  InsertArgs args;
  args.org_id = principal.org_id;
  args.site_id = prepared.rack.site_id;
  args.rack_id = spec.rack_id;
  args.kind = BookingKindName(spec.kind);
  args.device_id = spec.device_id.empty() ? nullptr : spec.device_id.c_str();
  args.front = front;
  args.rear = rear;
  args.first_unit = low;
  args.last_unit = high;
  args.ttl_seconds = spec.ttl_seconds;
  args.actor = principal.Actor();
  args.reason = spec.reason;
  args.sides = TextArrayLiteral(SideArgs(claimed));
  args.units = IntArrayLiteral(claimed);
  args.power_watts = spec.power_watts;
  args.weight_kg = spec.weight_kg;
  args.feed_names = FeedNamesArg(spec);
  return args;
}

absl::StatusOr<v1::Booking> CreateBooking(pqxx::transaction_base& tx, const Principal& principal,
                                          const BookingSpec& spec) {
  absl::StatusOr<Prepared> prepared = Prepare(tx, principal, spec);
  if (!prepared.ok()) return prepared.status();
  if (!prepared->plan.ok()) return Detected(prepared->plan.status(), "planner");
  const std::vector<SlotRef>& claimed = *prepared->plan;
  // The planner's postcondition, restated where the header is derived from the claim.
  if (!ClaimIsWithin(prepared->rack.geometry, claimed)) return Internal("empty or stray claim");
  const InsertArgs args = ArgsFor(principal, spec, *prepared, claimed);

  for (int attempt = 0; attempt < kMaxInsertAttempts; ++attempt) {
    GuardedResult result = InsertBooking(tx, args);
    if (!result.violated()) {
      if (!result.returned) return Internal("the booking insert returned no id");
      return CreatedBooking(*result.returned, spec, principal, claimed);
    }
    if (result.violated_constraint != kSlotIndex) {
      return ConstraintRejection(tx, principal, spec, result);
    }
    // Lost to a booking committed after the plan was read (or to a lapsed reservation): re-read
    // exactly what collides, now that the other transaction has committed.
    std::vector<Collision> collisions = ReadCollisions(tx, spec.rack_id, claimed);
    std::vector<SlotRef> blocking;
    std::vector<std::string> lapsed;
    for (const Collision& c : collisions) {
      if (!c.lapsed) {
        blocking.push_back(c.slot);
      } else if (std::find(lapsed.begin(), lapsed.end(), c.booking_id) == lapsed.end()) {
        lapsed.push_back(c.booking_id);
      }
    }
    if (!blocking.empty()) return UnitOccupied(blocking, "slot_index");
    // Deadline enforced at the point of use: a reservation whose expiry passed does not block,
    // even when the sweeper has not reached it yet. Released here, with the reason recorded.
    // One promoted whole meanwhile (a placement now) is not released, and the next attempt
    // collides with it; of one promoted in part, the units it still holds are released.
    for (const std::string& id : lapsed) {
      if (ReleaseLapsedRow(tx, principal.org_id, id, principal.Actor(),
                           "expired; released at point of use by a colliding booking")) {
        spdlog::info("released lapsed reservation booking {} at point of use", id);
      }
    }
  }
  return Error(absl::StatusCode::kAborted, v1::CONTENDED,
               "the units changed hands repeatedly while booking; retry");
}

absl::StatusOr<v1::Booking> ReleaseBooking(pqxx::transaction_base& tx, const Principal& principal,
                                           const std::string& booking_id, v1::BookingKind kind,
                                           const std::string& reason) {
  if (absl::Status s = CheckId("booking_id", booking_id); !s.ok()) return s;
  if (absl::Status s = CheckText("reason", reason, kMaxNoteLength, false); !s.ok()) return s;
  const char* kind_name = BookingKindName(kind);
  if (*kind_name == '\0') return InvalidInput("kind", "the kind of the booking to release");
  // The release answers the released booking as LoadBooking would read it right after: the
  // header's new values from the update, and the slot rows the update released, which are all
  // the booking's rows (they are released only with it). Not the final query's own snapshot:
  // a partial promotion committing while the update waited for the header's row lock has
  // passed some of those rows to its placement, and the snapshot would still list them.
  // The kind is a condition of the update itself: a promotion that commits while this waits for
  // the header's row lock makes it match nothing (enforced by this statement, not the schema).
  static const std::string* sql = new std::string(ReleaseSql(
      kOneBookingOfOrg,
      absl::StrCat("SELECT ", HeaderColumns(),
                   ", (SELECT string_agg(s.side || ' ' || s.unit, ',' ORDER BY s.side = 'rear', "
                   "s.unit) FROM s) FROM h"),
      " AND b.kind = $5"));
  pqxx::result r =
      ExecCached(tx, *sql, principal.Actor(), reason, booking_id, principal.org_id, kind_name);
  if (r.empty()) {
    // Read again after the update: a change the update waited for is visible to this statement.
    absl::StatusOr<v1::Booking> existing = LoadBooking(tx, principal, booking_id);
    if (!existing.ok()) return existing.status();
    if (existing->has_released_at()) {
      return WrongState(booking_id, absl::StrCat("booking ", booking_id, " is already released"));
    }
    return NotOfKind(booking_id, existing->kind(), kind);
  }
  v1::Booking booking = BookingFromHeader(booking_id, r[0]);
  absl::StatusOr<std::vector<SlotRef>> released = SlotList(r[0][kHeaderColumnCount]);
  if (!released.ok()) return released.status();
  for (const SlotRef& s : *released) {
    v1::Slot* slot = booking.add_slots();
    slot->set_side(s.side);
    slot->set_unit(s.unit);
  }
  return booking;
}

int64_t ReleaseLapsedReservations(pqxx::transaction_base& tx, int limit,
                                  const std::string& released_by, const std::string& reason) {
  // Only kind 'reservation': a placement never expires (the schema's CHECK keeps its expires_at
  // NULL) and a move hold belongs to a move in progress, so the kind condition is here as well
  // as in the data. The rows stay locked (FOR UPDATE) until the release statement around this
  // query has written them.
  static const std::string* sql =
      new std::string(ReleaseSql("SELECT id FROM bookings "
                                 "WHERE kind = 'reservation' AND released_at IS NULL "
                                 "AND expires_at < now() "
                                 "ORDER BY expires_at LIMIT $3 FOR UPDATE SKIP LOCKED"));
  pqxx::row r = tx.exec_params1(*sql, released_by, reason, limit);
  return r[0].as<int64_t>();
}

absl::StatusOr<v1::Booking> PromoteMoveHold(pqxx::transaction_base& tx, const Principal& principal,
                                            const std::string& booking_id) {
  if (absl::Status s = CheckId("booking_id", booking_id); !s.ok()) return s;
  GuardedResult result =
      GuardedExec(tx,
                  "UPDATE bookings SET kind = 'placement', expires_at = NULL "
                  "WHERE id = $1[1]::uuid AND org_id = $1[2]::uuid AND kind = 'move_hold' "
                  "AND released_at IS NULL RETURNING id::text",
                  {booking_id, principal.org_id});
  if (result.violated()) {
    if (result.violated_constraint == kPlacementNeedsDevice) {
      return WrongState(booking_id, "a move hold without a device cannot become a placement");
    }
    if (result.violated_constraint == kDevicePlacementIndex) {
      pqxx::result d =
          tx.exec_params("SELECT device_id::text FROM bookings WHERE id = $1::uuid", booking_id);
      return DeviceAlreadyPlaced(tx, principal, d.empty() ? "" : Text(d[0][0]));
    }
    return UnexpectedViolation("promoted placement", result);
  }
  if (result.affected == 0) {
    absl::StatusOr<v1::Booking> existing = LoadBooking(tx, principal, booking_id);
    if (!existing.ok()) return existing.status();
    return WrongState(booking_id,
                      absl::StrCat("booking ", booking_id, " is not an active move hold"));
  }
  return LoadBooking(tx, principal, booking_id);
}

namespace {

// The reservation a placement names, locked FOR UPDATE: two promotions out of one reservation
// (and a promotion and the release of the reservation) take turns; the sweeper's batch skips it
// (SKIP LOCKED). Read within the caller's organization: another's reads as unknown.
constexpr char kLockReservationSql[] =
    "SELECT rack_id::text, kind, released_at IS NOT NULL, kind = 'reservation' AND "
    "expires_at <= now(), (SELECT string_agg(x.side || ' ' || x.unit, ',') FROM booking_slots x "
    "WHERE x.booking_id = b.id AND x.released_at IS NULL) "
    "FROM bookings b WHERE b.id = $1::uuid AND b.org_id = $2::uuid FOR UPDATE OF b";

// The whole reservation becomes the placement: its header changes kind, gains the device, loses
// its expiry and takes the device's footprint; its slot rows are not written at all.
constexpr char kPromoteWholeSql[] =
    "UPDATE bookings SET kind = 'placement', device_id = $1[3]::uuid, expires_at = NULL, "
    "front = $1[4]::boolean, rear = $1[5]::boolean, first_unit = $1[6]::integer, "
    "last_unit = $1[7]::integer, reason = coalesce(nullif($1[8], ''), reason), "
    "feed_ids = CASE WHEN $1[9] IS NOT NULL THEN ARRAY(SELECT f.id FROM power_feeds f "
    "WHERE f.rack_id = bookings.rack_id AND f.name = ANY ($1[9]::text[]) ORDER BY f.id) END "
    "WHERE id = $1[1]::uuid AND org_id = $1[2]::uuid AND kind = 'reservation' "
    "AND released_at IS NULL RETURNING id::text";

// A part of the reservation becomes the placement: a new placement header, and the slot rows of
// the device's units pass to it in the same statement (booking_id rewritten, released_at NULL
// in every version of every row: no unit is ever free, none is inserted again). Answers
// "new id|slots moved".
constexpr char kPromotePartSql[] =
    "WITH h AS (INSERT INTO bookings (org_id, site_id, rack_id, kind, device_id, front, rear, "
    "first_unit, last_unit, created_by, reason, feed_ids) VALUES ($1[2]::uuid, $1[9]::uuid, "
    "$1[10]::uuid, 'placement', $1[3]::uuid, $1[4]::boolean, $1[5]::boolean, $1[6]::integer, "
    "$1[7]::integer, $1[11], $1[8], CASE WHEN $1[14] IS NOT NULL THEN ARRAY(SELECT f.id "
    "FROM power_feeds f WHERE f.rack_id = $1[10]::uuid AND f.name = ANY ($1[14]::text[]) "
    "ORDER BY f.id) END) RETURNING id), "
    "s AS (UPDATE booking_slots x SET booking_id = h.id FROM h "
    "WHERE x.booking_id = $1[1]::uuid AND x.released_at IS NULL "
    "AND (x.side, x.unit) IN (SELECT * FROM unnest($1[12]::text[], $1[13]::integer[])) "
    "RETURNING 1) "
    "SELECT h.id::text || '|' || (SELECT count(*) FROM s) FROM h";

absl::Status NotInReservation(const std::string& reservation_id, const std::string& device_id,
                              const std::vector<SlotRef>& needed,
                              const std::vector<SlotRef>& reserved,
                              const std::vector<SlotRef>& missing) {
  return Error(absl::StatusCode::kFailedPrecondition, v1::NOT_IN_RESERVATION,
               absl::StrCat("device ", device_id, " needs ", DescribeSlots(needed),
                            "; reservation ", reservation_id, " does not hold ",
                            DescribeSlots(missing), " (it holds ",
                            reserved.empty() ? "nothing" : DescribeSlots(reserved), ")"))
      .Meta("reservation_id", reservation_id)
      .Meta("device_id", device_id)
      .Meta("needed", DescribeSlots(needed))
      .Meta("reserved", DescribeSlots(reserved))
      .Meta("missing", DescribeSlots(missing))
      .status();
}

}  // namespace

absl::StatusOr<v1::Booking> PromoteReservation(pqxx::transaction_base& tx,
                                               const Principal& principal,
                                               const std::string& reservation_id,
                                               const BookingSpec& placement) {
  if (absl::Status s = CheckId("reservation_id", reservation_id); !s.ok()) return s;
  if (placement.kind != v1::BOOKING_PLACEMENT || placement.ttl_seconds != 0) {
    return InvalidInput("kind", "only a placement is promoted out of a reservation");
  }
  pqxx::result held = ExecCached(tx, kLockReservationSql, reservation_id, principal.org_id);
  if (held.empty()) return NotFound("booking", reservation_id);
  const pqxx::row h = held[0];
  const std::string reservation_rack = h[0].as<std::string>();
  if (ParseBookingKind(h[1].as<std::string>()) != v1::BOOKING_RESERVATION || h[2].as<bool>()) {
    return WrongState(reservation_id, absl::StrCat("booking ", reservation_id,
                                                   " is not an active unit reservation"));
  }
  // Enforced here, at the point of use, not by the sweeper: a lapsed reservation holds nothing
  // a placement could take over (the units may be booked by anyone once it is released).
  if (h[3].as<bool>()) {
    return Error(absl::StatusCode::kFailedPrecondition, v1::HOLD_EXPIRED,
                 absl::StrCat("reservation ", reservation_id, " has lapsed"))
        .Meta("reservation_id", reservation_id)
        .status();
  }
  absl::StatusOr<std::vector<SlotRef>> reserved = SlotList(h[4]);
  if (!reserved.ok()) return reserved.status();
  std::sort(reserved->begin(), reserved->end());

  absl::StatusOr<Prepared> prepared = Prepare(tx, principal, placement, /*against_taken=*/false);
  if (!prepared.ok()) return prepared.status();
  if (placement.rack_id != reservation_rack) {
    return Error(absl::StatusCode::kFailedPrecondition, v1::NOT_IN_RESERVATION,
                 absl::StrCat("reservation ", reservation_id, " holds units of another rack"))
        .Meta("reservation_id", reservation_id)
        .Meta("reservation_rack_id", reservation_rack)
        .Meta("rack_id", placement.rack_id)
        .status();
  }
  if (!prepared->plan.ok()) return Detected(prepared->plan.status(), "planner");
  std::vector<SlotRef> needed = *prepared->plan;
  if (!ClaimIsWithin(prepared->rack.geometry, needed)) return Internal("empty or stray claim");
  std::sort(needed.begin(), needed.end());
  std::vector<SlotRef> missing;
  std::set_difference(needed.begin(), needed.end(), reserved->begin(), reserved->end(),
                      std::back_inserter(missing));
  if (!missing.empty()) {
    return NotInReservation(reservation_id, placement.device_id, needed, *reserved, missing);
  }

  bool front = false;
  bool rear = false;
  int low = needed.front().unit;
  int high = needed.front().unit;
  for (const SlotRef& s : needed) {
    (s.side == v1::SIDE_FRONT ? front : rear) = true;
    low = std::min(low, s.unit);
    high = std::max(high, s.unit);
  }
  const bool whole = needed.size() == reserved->size();  // needed ⊆ reserved, same size
  GuardedResult result;
  if (whole) {
    result = GuardedExec(tx, kPromoteWholeSql,
                         {reservation_id, principal.org_id, placement.device_id,
                          front ? "true" : "false", rear ? "true" : "false", std::to_string(low),
                          std::to_string(high), placement.reason, FeedNamesArg(placement)});
  } else {
    result = GuardedExec(
        tx, kPromotePartSql,
        {reservation_id, principal.org_id, placement.device_id, front ? "true" : "false",
         rear ? "true" : "false", std::to_string(low), std::to_string(high), placement.reason,
         prepared->rack.site_id, placement.rack_id, principal.Actor(),
         TextArrayLiteral(SideArgs(needed)), IntArrayLiteral(needed), FeedNamesArg(placement)});
  }
  if (result.violated()) {
    if (result.violated_constraint == kSlotIndex) {
      // Cannot happen: no statement above claims a unit that is not already this booking's.
      return UnexpectedViolation("promoted placement", result);
    }
    return ConstraintRejection(tx, principal, placement, result);
  }
  if (!result.returned) return Internal("the promotion changed no booking");
  std::string placement_id = *result.returned;
  if (!whole) {
    std::pair<std::string, std::string> id_moved = absl::StrSplit(placement_id, '|');
    // The reservation's row lock makes this exact: no other transaction moved its slots since
    // they were read above.
    if (id_moved.second != std::to_string(needed.size())) {
      return Internal(absl::StrCat("promotion moved ", id_moved.second, " slot rows, expected ",
                                   needed.size()));
    }
    placement_id = id_moved.first;
  }
  return LoadBooking(tx, principal, placement_id);
}

absl::StatusOr<std::optional<v1::Booking>> FindActivePlacement(pqxx::transaction_base& tx,
                                                               const Principal& principal,
                                                               const std::string& device_id) {
  if (absl::Status s = CheckId("device_id", device_id); !s.ok()) return s;
  pqxx::result r =
      ExecCached(tx,
                 "SELECT id::text FROM bookings WHERE device_id = $1::uuid AND org_id = $2::uuid "
                 "AND kind = 'placement' AND released_at IS NULL",
                 device_id, principal.org_id);
  if (r.empty()) return std::optional<v1::Booking>();
  absl::StatusOr<v1::Booking> booking = LoadBooking(tx, principal, r[0][0].as<std::string>());
  if (!booking.ok()) return booking.status();
  return std::optional<v1::Booking>(*std::move(booking));
}

absl::StatusOr<PlanOutcome> PlanBooking(pqxx::transaction_base& tx, const Principal& principal,
                                        const BookingSpec& spec) {
  absl::StatusOr<Prepared> prepared = Prepare(tx, principal, spec);
  if (!prepared.ok()) return prepared.status();
  PlanOutcome outcome;
  if (!prepared->plan.ok()) {
    outcome.rejection = Detected(prepared->plan.status(), "planner");
    return outcome;
  }
  outcome.slots = *prepared->plan;
  if (spec.kind == v1::BOOKING_PLACEMENT) {
    // What the device index would say, in the same words.
    pqxx::result placed =
        ExecCached(tx,
                   "SELECT 1 FROM bookings WHERE device_id = $1::uuid AND kind = 'placement' "
                   "AND released_at IS NULL",
                   spec.device_id);
    if (!placed.empty()) {
      outcome.rejection = DeviceAlreadyPlaced(tx, principal, spec.device_id);
      return outcome;
    }
    if (spec.ttl_seconds > 0) {
      return InvalidInput("ttl_seconds", "a placement never expires");
    }
  }
  if (!spec.device_id.empty()) {
    pqxx::result own = ExecCached(
        tx,
        "SELECT 1 FROM devices WHERE id = $1::uuid AND org_id = $2::uuid AND site_id = $3::uuid",
        spec.device_id, principal.org_id, prepared->rack.site_id);
    if (own.empty()) {
      // Another organization's device (or none) is NOT_FOUND, the status itself; the caller's
      // own device at another site is this booking's refusal, inside the answer.
      absl::Status refusal = DeviceNotUsable(tx, principal, spec.device_id);
      if (refusal.code() == absl::StatusCode::kNotFound) return refusal;
      outcome.rejection = refusal;
      return outcome;
    }
  }
  if (spec.kind == v1::BOOKING_RESERVATION && spec.ttl_seconds <= 0) {
    return InvalidInput("ttl_seconds", "a reservation needs an expiry");
  }
  if (!ClaimIsWithin(prepared->rack.geometry, outcome.slots)) {
    return Internal("empty or stray claim");
  }
  // The capacity rules (power per feed with N-1, cooling, airflow, power and weight, unknown
  // figures): asked of the database itself by writing the booking and undoing it at once, so the
  // plan says exactly what the write would and no rule is restated here. The undo releases the
  // budget rows' locks the trial took. A slot taken since the units were planned (or a lapsed
  // reservation the write would release first) leaves the capacity question to the write.
  Savepoint trial(tx, "plan_booking_trial");
  const GuardedResult result =
      InsertBooking(tx, ArgsFor(principal, spec, *prepared, outcome.slots));
  trial.Rollback();
  if (result.violated() && result.violated_constraint != kSlotIndex) {
    absl::Status refusal = ConstraintRejection(tx, principal, spec, result);
    if (refusal.code() != absl::StatusCode::kFailedPrecondition) return refusal;
    outcome.rejection = refusal;
  }
  return outcome;
}

}  // namespace dcl::occupancy
