#include "services/occupancy/rack_plan.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "services/common/status.h"

namespace dcl::occupancy {
namespace {

v1::Slot ToProto(const SlotRef& s) {
  v1::Slot slot;
  slot.set_side(s.side);
  slot.set_unit(s.unit);
  return slot;
}

}  // namespace

const char* SideName(v1::Side side) {
  switch (side) {
    case v1::SIDE_FRONT:
      return "front";
    case v1::SIDE_REAR:
      return "rear";
    default:
      return "unspecified";
  }
}

v1::Side ParseSide(const std::string& name) {
  if (name == "front") return v1::SIDE_FRONT;
  if (name == "rear") return v1::SIDE_REAR;
  return v1::SIDE_UNSPECIFIED;
}

v1::DepthClass ParseDepth(const std::string& name) {
  if (name == "full") return v1::DEPTH_FULL;
  if (name == "half") return v1::DEPTH_HALF;
  return v1::DEPTH_UNKNOWN;  // unknown, and anything unexpected, is treated as the costly case
}

std::string DescribeSlots(const std::vector<SlotRef>& slots) {
  std::string out;
  for (const SlotRef& s : slots) {
    if (!out.empty()) out += ", ";
    absl::StrAppend(&out, SideName(s.side), " U", s.unit);
  }
  return out;
}

namespace {

absl::Status OutOfBounds(const Geometry& geometry, int64_t low, int64_t high) {
  const std::string units = low == high ? absl::StrCat("unit U", low, " is")
                                        : absl::StrCat("units U", low, "..U", high, " are");
  return Error(absl::StatusCode::kFailedPrecondition, v1::OUT_OF_BOUNDS,
               absl::StrCat(units, " outside this rack's U", geometry.first_unit, "..U",
                            geometry.last_unit()))
      .Meta("first_unit", std::to_string(low))
      .Meta("last_unit", std::to_string(high))
      .Meta("rack_first_unit", std::to_string(geometry.first_unit))
      .Meta("rack_last_unit", std::to_string(geometry.last_unit()));
}

bool Inside(const Geometry& geometry, int64_t unit) {
  return unit >= geometry.first_unit && unit <= geometry.last_unit();
}

}  // namespace

bool ClaimIsWithin(const Geometry& geometry, const std::vector<SlotRef>& claimed) {
  if (claimed.empty()) return false;
  for (const SlotRef& s : claimed) {
    if (!Inside(geometry, s.unit)) return false;
    if (s.side != v1::SIDE_FRONT && (s.side != v1::SIDE_REAR || !geometry.has_rear)) return false;
  }
  return true;
}

namespace {

// The sides a request claims.
struct Sides {
  bool front = false;
  bool rear = false;
};

// The units a request claims, inclusive, in 64 bits.
struct UnitSpan {
  int64_t low = 0;
  int64_t high = 0;
};

// Malformed input first: nothing about the rack can be said of a request without a side (a
// range on both sides needs none), a device without height, or an inverted range. The rack
// comes from a row the schema's CHECKs admitted; anything else is a bug upstream.
absl::Status CheckRequest(const Geometry& geometry, const PlanRequest& request) {
  if (geometry.first_unit < 0 || geometry.unit_count < 1) {
    return Internal("rack geometry outside the schema's bounds");
  }
  const bool range_on_both_sides = !request.device_footprint && request.both_sides;
  const bool side_given = request.side == v1::SIDE_FRONT || request.side == v1::SIDE_REAR;
  if (!side_given && !(range_on_both_sides && request.side == v1::SIDE_UNSPECIFIED)) {
    return InvalidInput("side", "must be front or rear");
  }
  if (request.device_footprint && request.height < 1) {
    return InvalidInput("height", "a device is at least 1 unit high");
  }
  if (!request.device_footprint && request.first_unit > request.last_unit) {
    return InvalidInput("last_unit", absl::StrCat("range U", request.first_unit, "..U",
                                                  request.last_unit, " is inverted"));
  }
  return absl::OkStatus();
}

// 1. The side must exist. A device claiming both sides on an open frame claims the front only:
//    there is no rear to lock. Asking for the rear itself on an open frame is refused.
absl::StatusOr<Sides> ClaimedSides(const Geometry& geometry, const PlanRequest& request) {
  Sides sides;
  if (request.device_footprint) {
    const bool half = request.depth == v1::DEPTH_HALF;
    sides.front = !half || request.side == v1::SIDE_FRONT;
    sides.rear = !half || request.side == v1::SIDE_REAR;
  } else {
    sides.front = request.both_sides || request.side == v1::SIDE_FRONT;
    sides.rear = request.both_sides || request.side == v1::SIDE_REAR;
  }
  if (!geometry.has_rear) {
    if (request.side == v1::SIDE_REAR) {
      return Error(absl::StatusCode::kFailedPrecondition, v1::SIDE_NOT_AVAILABLE,
                   "this rack is an open frame: it has no rear side")
          .Meta("side", "rear");
    }
    sides.rear = false;
  }
  return sides;
}

// 2. The whole range inside this rack's units, inclusive. Every number a caller sent is compared
//    with the rack before anything is computed from it, and the computation is in 64 bits: no
//    request can wrap a unit number around.
absl::StatusOr<UnitSpan> ClaimedUnits(const Geometry& geometry, const PlanRequest& request) {
  UnitSpan span{request.first_unit, request.last_unit};
  if (request.device_footprint) {
    if (!Inside(geometry, request.anchor_unit)) {
      return OutOfBounds(geometry, request.anchor_unit, request.anchor_unit);
    }
    // The device grows physically upward from its lowest unit; in a descending rack "upward"
    // means towards smaller numbers.
    const int64_t extent = static_cast<int64_t>(request.height) - 1;
    span.low = geometry.descending ? request.anchor_unit - extent : request.anchor_unit;
    span.high = geometry.descending ? request.anchor_unit : request.anchor_unit + extent;
  }
  if (!Inside(geometry, span.low) || !Inside(geometry, span.high)) {
    return OutOfBounds(geometry, span.low, span.high);
  }
  return span;
}

// Every slot of `units` on `sides`, front before rear, then by unit.
std::vector<SlotRef> SlotsOf(const Sides& sides, const UnitSpan& units) {
  std::vector<SlotRef> slots;
  for (v1::Side side : {v1::SIDE_FRONT, v1::SIDE_REAR}) {
    if ((side == v1::SIDE_FRONT && !sides.front) || (side == v1::SIDE_REAR && !sides.rear)) {
      continue;
    }
    for (int64_t unit = units.low; unit <= units.high; ++unit) {
      slots.push_back({side, static_cast<int>(unit)});
    }
  }
  return slots;
}

// 3. Exactly which claimed slots are taken.
absl::Status CheckFree(const std::vector<SlotRef>& claimed, const std::vector<SlotRef>& occupied) {
  const std::set<SlotRef> taken(occupied.begin(), occupied.end());
  std::vector<SlotRef> colliding;
  for (const SlotRef& s : claimed) {
    if (taken.count(s) > 0) colliding.push_back(s);
  }
  if (colliding.empty()) return absl::OkStatus();
  Error error(
      absl::StatusCode::kFailedPrecondition, v1::UNIT_OCCUPIED,
      absl::StrCat(DescribeSlots(colliding), colliding.size() == 1 ? " is" : " are", " taken"));
  for (const SlotRef& s : colliding) *error.detail().add_colliding_slots() = ToProto(s);
  return error.status();
}

}  // namespace

absl::StatusOr<std::vector<SlotRef>> Plan(const Geometry& geometry,
                                          const std::vector<SlotRef>& occupied,
                                          const PlanRequest& request) {
  if (absl::Status s = CheckRequest(geometry, request); !s.ok()) return s;
  absl::StatusOr<Sides> sides = ClaimedSides(geometry, request);
  if (!sides.ok()) return sides.status();
  absl::StatusOr<UnitSpan> units = ClaimedUnits(geometry, request);
  if (!units.ok()) return units.status();
  std::vector<SlotRef> claimed = SlotsOf(*sides, *units);
  // Postcondition: an accepted plan claims at least one slot, and only slots of this rack.
  if (!ClaimIsWithin(geometry, claimed)) return Internal("the rack plan left the rack");
  if (absl::Status s = CheckFree(claimed, occupied); !s.ok()) return s;
  return claimed;
}

}  // namespace dcl::occupancy
