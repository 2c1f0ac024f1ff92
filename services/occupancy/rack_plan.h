// The rack planner: which (side, unit) slots a booking would claim in one rack, and the readable
// reason when it cannot. Pure: plain structs in, absl::Status/StatusOr out, no database.
//
// Plan() rejects in this order:
//   1. the side does not exist (an open frame has no rear)           → SIDE_NOT_AVAILABLE
//   2. a unit falls outside this rack's first..last unit, inclusive  → OUT_OF_BOUNDS
//   3. a claimed slot is already taken, with the exact colliding list → UNIT_OCCUPIED
// Malformed requests (no side, zero height, inverted range) are INVALID_ARGUMENT before any of
// that. Arithmetic is always against this rack's geometry (first unit, unit count, numbering
// direction), never against the number 42. Any int a caller can send is safe: a device's anchor
// is compared with the rack before its far end is computed, in 64 bits, and an accepted plan
// is checked to claim at least one slot and only slots inside the rack (ClaimIsWithin).
//
// Depth: a half-depth device claims only the side it hangs on; a full-depth device claims front
// and rear; an unknown depth claims front and rear too (locking the rear costs a slot one might
// have had; not locking it costs a delivery). On an open frame only the front exists.
//
// This is not the occupancy boundary: two concurrent requests both pass all three checks. The
// partial unique index on booking_slots decides (schema/migrations/0003_bookings.sql).
#ifndef DCL_SERVICES_OCCUPANCY_RACK_PLAN_H_
#define DCL_SERVICES_OCCUPANCY_RACK_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dcl/v1/common.pb.h"
#include "dcl/v1/occupancy.pb.h"

namespace dcl::occupancy {

struct Geometry {
  int first_unit = 1;
  int unit_count = 42;
  bool descending = false;  // numbers grow from the top down
  bool has_rear = true;
  // 64 bits: the sum of two ints cannot wrap.
  int64_t last_unit() const { return int64_t{first_unit} + unit_count - 1; }
};

struct SlotRef {
  v1::Side side = v1::SIDE_UNSPECIFIED;
  int unit = 0;
  bool operator==(const SlotRef& o) const { return side == o.side && unit == o.unit; }
  bool operator<(const SlotRef& o) const { return side != o.side ? side < o.side : unit < o.unit; }
};

// What to claim. Either a device footprint (placement, or a move hold of a known device):
// `anchor_unit` is the device's lowest rack unit and the device occupies `height` units
// physically upward from it (ascending: anchor..anchor+h-1, descending: anchor-h+1..anchor),
// on `side`, or on both sides unless the device is known to be half depth. Or a plain range
// (blocking, reservation, a move hold without a device): first_unit..last_unit in rack numbers
// (first <= last), on `side` or on both sides (then `side` may be unspecified).
struct PlanRequest {
  bool device_footprint = false;
  v1::Side side = v1::SIDE_UNSPECIFIED;
  // Device footprint.
  int anchor_unit = 0;
  int height = 0;
  v1::DepthClass depth = v1::DEPTH_CLASS_UNSPECIFIED;
  // Range.
  int first_unit = 0;
  int last_unit = 0;
  bool both_sides = false;
};

// The slots the request claims, sorted (front before rear, then by unit number), or the first
// rejection in the order above. `occupied` are the rack's active slots (any order).
absl::StatusOr<std::vector<SlotRef>> Plan(const Geometry& geometry,
                                          const std::vector<SlotRef>& occupied,
                                          const PlanRequest& request);

// True when `claimed` is non-empty and every slot lies inside the rack, on a side it has: the
// postcondition of every accepted plan.
bool ClaimIsWithin(const Geometry& geometry, const std::vector<SlotRef>& claimed);

// The readable form of slots: "front U9, front U10".
std::string DescribeSlots(const std::vector<SlotRef>& slots);
const char* SideName(v1::Side side);  // "front", "rear" (as stored), "unspecified"
// "front"/"rear" → the enum; anything else → SIDE_UNSPECIFIED.
v1::Side ParseSide(const std::string& name);
// "full"/"half"/"unknown" (devices.depth_class) → the enum; anything else → DEPTH_UNKNOWN.
v1::DepthClass ParseDepth(const std::string& name);

}  // namespace dcl::occupancy

#endif  // DCL_SERVICES_OCCUPANCY_RACK_PLAN_H_
