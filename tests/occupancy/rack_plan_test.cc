// The rack planner, exhaustively and without a database: rejection order, geometry arithmetic
// against each rack's own numbering, depth rules and exact colliding lists.
#include "services/occupancy/rack_plan.h"

#include <catch2/catch.hpp>
#include <climits>
#include <vector>

#include "services/common/status.h"

namespace dcl::occupancy {
namespace {

constexpr v1::Side F = v1::SIDE_FRONT;
constexpr v1::Side R = v1::SIDE_REAR;

Geometry Rack(int first, int count, bool descending = false, bool has_rear = true) {
  Geometry g;
  g.first_unit = first;
  g.unit_count = count;
  g.descending = descending;
  g.has_rear = has_rear;
  return g;
}

PlanRequest Device(v1::Side side, int unit, int height, v1::DepthClass depth) {
  PlanRequest r;
  r.device_footprint = true;
  r.side = side;
  r.anchor_unit = unit;
  r.height = height;
  r.depth = depth;
  return r;
}

PlanRequest Range(v1::Side side, int first, int last, bool both_sides = false) {
  PlanRequest r;
  r.side = side;
  r.first_unit = first;
  r.last_unit = last;
  r.both_sides = both_sides;
  return r;
}

v1::Reason ReasonOfPlan(const absl::StatusOr<std::vector<SlotRef>>& plan) {
  REQUIRE_FALSE(plan.ok());
  return ReasonOf(plan.status());
}

std::vector<SlotRef> CollidingOf(const absl::StatusOr<std::vector<SlotRef>>& plan) {
  REQUIRE_FALSE(plan.ok());
  auto detail = GetErrorDetail(plan.status());
  REQUIRE(detail.has_value());
  REQUIRE(detail->reason() == v1::UNIT_OCCUPIED);
  std::vector<SlotRef> out;
  for (const v1::Slot& s : detail->colliding_slots()) out.push_back({s.side(), s.unit()});
  return out;
}

using Slots = std::vector<SlotRef>;

TEST_CASE("a full-depth 1U device in an ascending rack claims its unit front and rear") {
  auto plan = Plan(Rack(1, 42), {}, Device(F, 9, 1, v1::DEPTH_FULL));
  REQUIRE(plan.ok());
  CHECK(*plan == Slots{{F, 9}, {R, 9}});
}

TEST_CASE("a multi-unit device in an ascending rack grows towards higher numbers") {
  auto plan = Plan(Rack(1, 42), {}, Device(F, 9, 3, v1::DEPTH_FULL));
  REQUIRE(plan.ok());
  CHECK(*plan == Slots{{F, 9}, {F, 10}, {F, 11}, {R, 9}, {R, 10}, {R, 11}});
}

TEST_CASE("a multi-unit device in a descending rack grows towards lower numbers") {
  auto plan = Plan(Rack(1, 42, /*descending=*/true), {}, Device(F, 9, 3, v1::DEPTH_HALF));
  REQUIRE(plan.ok());
  CHECK(*plan == Slots{{F, 7}, {F, 8}, {F, 9}});
}

TEST_CASE("a descending rack refuses a device that would grow past its first unit") {
  // In a descending rack U1 is at the top. A 3U device whose lowest unit is U2 would need
  // U0..U2.
  auto plan = Plan(Rack(1, 42, true), {}, Device(F, 2, 3, v1::DEPTH_FULL));
  CHECK(ReasonOfPlan(plan) == v1::OUT_OF_BOUNDS);
  CHECK(plan.status().code() == absl::StatusCode::kFailedPrecondition);
  // The same device at U42 (the bottom) fits: U40..U42.
  auto bottom = Plan(Rack(1, 42, true), {}, Device(F, 42, 3, v1::DEPTH_HALF));
  REQUIRE(bottom.ok());
  CHECK(*bottom == Slots{{F, 40}, {F, 41}, {F, 42}});
}

TEST_CASE("an ascending rack refuses a device that would grow past its last unit") {
  CHECK(ReasonOfPlan(Plan(Rack(1, 42), {}, Device(F, 41, 3, v1::DEPTH_FULL))) == v1::OUT_OF_BOUNDS);
  auto top = Plan(Rack(1, 42), {}, Device(F, 40, 3, v1::DEPTH_HALF));
  REQUIRE(top.ok());
  CHECK(top->back() == SlotRef{F, 42});
}

TEST_CASE("a rack starting at 0 has units 0..count-1") {
  const Geometry g = Rack(0, 42);
  auto zero = Plan(g, {}, Device(F, 0, 1, v1::DEPTH_HALF));
  REQUIRE(zero.ok());
  CHECK(*zero == Slots{{F, 0}});
  auto last = Plan(g, {}, Device(F, 41, 1, v1::DEPTH_HALF));
  REQUIRE(last.ok());
  CHECK(ReasonOfPlan(Plan(g, {}, Device(F, 42, 1, v1::DEPTH_HALF))) == v1::OUT_OF_BOUNDS);
  CHECK(ReasonOfPlan(Plan(g, {}, Device(F, -1, 1, v1::DEPTH_HALF))) == v1::OUT_OF_BOUNDS);
}

TEST_CASE("a rack starting at 2 has no unit 1 and ends at count+1") {
  const Geometry g = Rack(2, 10);  // U2..U11
  CHECK(ReasonOfPlan(Plan(g, {}, Device(F, 1, 1, v1::DEPTH_HALF))) == v1::OUT_OF_BOUNDS);
  REQUIRE(Plan(g, {}, Device(F, 2, 1, v1::DEPTH_HALF)).ok());
  REQUIRE(Plan(g, {}, Device(F, 10, 2, v1::DEPTH_HALF)).ok());
  CHECK(ReasonOfPlan(Plan(g, {}, Device(F, 11, 2, v1::DEPTH_HALF))) == v1::OUT_OF_BOUNDS);
  CHECK(ReasonOfPlan(Plan(g, {}, Range(F, 1, 3))) == v1::OUT_OF_BOUNDS);
  auto whole = Plan(g, {}, Range(F, 2, 11));
  REQUIRE(whole.ok());
  CHECK(whole->size() == 10);
}

TEST_CASE("a descending rack starting at 2 refuses growth past U2 and allows the bottom") {
  const Geometry g = Rack(2, 10, true);  // U2 at the top, U11 at the bottom
  CHECK(ReasonOfPlan(Plan(g, {}, Device(F, 3, 3, v1::DEPTH_HALF))) == v1::OUT_OF_BOUNDS);
  auto plan = Plan(g, {}, Device(R, 11, 2, v1::DEPTH_HALF));
  REQUIRE(plan.ok());
  CHECK(*plan == Slots{{R, 10}, {R, 11}});
  CHECK(ReasonOfPlan(Plan(g, {}, Device(F, 12, 1, v1::DEPTH_HALF))) == v1::OUT_OF_BOUNDS);
}

TEST_CASE("a half-depth device on the rear claims only the rear") {
  auto plan = Plan(Rack(1, 42), {{F, 9}, {F, 10}}, Device(R, 9, 2, v1::DEPTH_HALF));
  REQUIRE(plan.ok());
  CHECK(*plan == Slots{{R, 9}, {R, 10}});
}

TEST_CASE("a half-depth device on the front claims only the front") {
  auto plan = Plan(Rack(1, 42), {{R, 9}}, Device(F, 9, 1, v1::DEPTH_HALF));
  REQUIRE(plan.ok());
  CHECK(*plan == Slots{{F, 9}});
}

TEST_CASE("an unknown depth claims front and rear, like a full-depth device") {
  auto plan = Plan(Rack(1, 42), {}, Device(R, 5, 2, v1::DEPTH_UNKNOWN));
  REQUIRE(plan.ok());
  CHECK(*plan == Slots{{F, 5}, {F, 6}, {R, 5}, {R, 6}});
  // And therefore collides with a half-depth device on the other side.
  CHECK(CollidingOf(Plan(Rack(1, 42), {{F, 6}}, Device(R, 5, 2, v1::DEPTH_UNKNOWN))) ==
        Slots{{F, 6}});
}

TEST_CASE("an open frame refuses the rear side before looking at bounds") {
  const Geometry open = Rack(1, 42, false, /*has_rear=*/false);
  auto plan = Plan(open, {}, Device(R, 99, 1, v1::DEPTH_HALF));  // out of bounds as well
  CHECK(ReasonOfPlan(plan) == v1::SIDE_NOT_AVAILABLE);
  CHECK(plan.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(ReasonOfPlan(Plan(open, {}, Range(R, 1, 2))) == v1::SIDE_NOT_AVAILABLE);
}

TEST_CASE("an open frame gives a full-depth device the front only") {
  const Geometry open = Rack(1, 42, false, false);
  auto plan = Plan(open, {}, Device(F, 3, 2, v1::DEPTH_FULL));
  REQUIRE(plan.ok());
  CHECK(*plan == Slots{{F, 3}, {F, 4}});
  auto unknown = Plan(open, {}, Device(F, 3, 1, v1::DEPTH_UNKNOWN));
  REQUIRE(unknown.ok());
  CHECK(*unknown == Slots{{F, 3}});
  auto both = Plan(open, {}, Range(F, 1, 2, /*both_sides=*/true));
  REQUIRE(both.ok());
  CHECK(*both == Slots{{F, 1}, {F, 2}});
}

TEST_CASE("bounds are checked before occupancy") {
  CHECK(ReasonOfPlan(Plan(Rack(1, 42), {{F, 42}}, Device(F, 42, 2, v1::DEPTH_HALF))) ==
        v1::OUT_OF_BOUNDS);
}

TEST_CASE("the colliding list names exactly the taken slots among those claimed") {
  const Slots occupied = {{F, 9}, {F, 10}, {R, 11}, {F, 30}, {R, 8}};
  CHECK(CollidingOf(Plan(Rack(1, 42), occupied, Device(F, 9, 3, v1::DEPTH_FULL))) ==
        Slots{{F, 9}, {F, 10}, {R, 11}});
  CHECK(CollidingOf(Plan(Rack(1, 42), occupied, Device(F, 9, 3, v1::DEPTH_HALF))) ==
        Slots{{F, 9}, {F, 10}});
  CHECK(CollidingOf(Plan(Rack(1, 42), occupied, Device(R, 9, 3, v1::DEPTH_HALF))) ==
        Slots{{R, 11}});
  CHECK(CollidingOf(Plan(Rack(1, 42), occupied, Range(F, 1, 42, true))) ==
        Slots{{F, 9}, {F, 10}, {F, 30}, {R, 8}, {R, 11}});
}

TEST_CASE("the occupied message reads as a sentence naming the units") {
  auto plan = Plan(Rack(1, 42), {{F, 9}, {F, 10}}, Device(F, 9, 2, v1::DEPTH_HALF));
  REQUIRE_FALSE(plan.ok());
  CHECK(std::string(plan.status().message()) == "front U9, front U10 are taken");
  CHECK(plan.status().code() == absl::StatusCode::kFailedPrecondition);
}

TEST_CASE("a collision in a descending rack is reported in the rack's own numbers") {
  CHECK(CollidingOf(Plan(Rack(1, 42, true), {{F, 7}}, Device(F, 9, 3, v1::DEPTH_HALF))) ==
        Slots{{F, 7}});
  REQUIRE(Plan(Rack(1, 42, true), {{F, 10}}, Device(F, 9, 3, v1::DEPTH_HALF)).ok());
}

TEST_CASE("a range on one side claims only that side, both_sides claims both") {
  auto front = Plan(Rack(1, 42), {}, Range(F, 3, 4));
  REQUIRE(front.ok());
  CHECK(*front == Slots{{F, 3}, {F, 4}});
  auto rear = Plan(Rack(1, 42), {}, Range(R, 3, 3));
  REQUIRE(rear.ok());
  CHECK(*rear == Slots{{R, 3}});
  auto both = Plan(Rack(1, 42), {}, Range(F, 3, 4, true));
  REQUIRE(both.ok());
  CHECK(*both == Slots{{F, 3}, {F, 4}, {R, 3}, {R, 4}});
}

TEST_CASE("malformed requests are invalid input, not rejections") {
  auto no_side = Plan(Rack(1, 42), {}, Device(v1::SIDE_UNSPECIFIED, 9, 1, v1::DEPTH_FULL));
  CHECK(no_side.status().code() == absl::StatusCode::kInvalidArgument);
  auto zero_height = Plan(Rack(1, 42), {}, Device(F, 9, 0, v1::DEPTH_FULL));
  CHECK(zero_height.status().code() == absl::StatusCode::kInvalidArgument);
  auto inverted = Plan(Rack(1, 42), {}, Range(F, 10, 9));
  CHECK(inverted.status().code() == absl::StatusCode::kInvalidArgument);
  // Even on an open frame with the rear asked for: bad input comes first.
  auto both = Plan(Rack(1, 42, false, false), {}, Range(v1::SIDE_UNSPECIFIED, 10, 9));
  CHECK(both.status().code() == absl::StatusCode::kInvalidArgument);
}

TEST_CASE("a one-unit rack at any offset holds exactly one unit") {
  for (int first : {0, 1, 2, 17}) {
    for (bool descending : {false, true}) {
      const Geometry g = Rack(first, 1, descending);
      auto ok = Plan(g, {}, Device(F, first, 1, v1::DEPTH_HALF));
      REQUIRE(ok.ok());
      CHECK(*ok == Slots{{F, first}});
      CHECK(ReasonOfPlan(Plan(g, {}, Device(F, first, 2, v1::DEPTH_HALF))) == v1::OUT_OF_BOUNDS);
    }
  }
}

TEST_CASE("every anchor of every height fits exactly when its span is inside the rack") {
  for (int first : {0, 1, 2}) {
    for (bool descending : {false, true}) {
      const Geometry g = Rack(first, 12, descending);
      for (int height = 1; height <= 4; ++height) {
        for (int anchor = first - 5; anchor <= g.last_unit() + 5; ++anchor) {
          const int low = descending ? anchor - height + 1 : anchor;
          const int high = descending ? anchor : anchor + height - 1;
          const bool fits = low >= g.first_unit && high <= g.last_unit();
          auto plan = Plan(g, {}, Device(F, anchor, height, v1::DEPTH_HALF));
          CHECK(plan.ok() == fits);
          if (plan.ok()) {
            REQUIRE(plan->size() == static_cast<size_t>(height));
            CHECK(plan->front().unit == low);
            CHECK(plan->back().unit == high);
          }
        }
      }
    }
  }
}

TEST_CASE("units at the ends of int never wrap: the anchor is checked before the far end") {
  // An ascending 42U rack and a 2U device at INT_MAX: anchor + height - 1 would overflow int.
  CHECK(ReasonOfPlan(Plan(Rack(1, 42), {}, Device(F, INT_MAX, 2, v1::DEPTH_HALF))) ==
        v1::OUT_OF_BOUNDS);
  CHECK(ReasonOfPlan(Plan(Rack(1, 42), {}, Device(F, INT_MAX - 9, 20, v1::DEPTH_FULL))) ==
        v1::OUT_OF_BOUNDS);
  // A descending rack and INT_MIN: anchor - height + 1 would overflow the other way.
  CHECK(ReasonOfPlan(Plan(Rack(1, 42, true), {}, Device(F, INT_MIN, 2, v1::DEPTH_HALF))) ==
        v1::OUT_OF_BOUNDS);
  CHECK(ReasonOfPlan(Plan(Rack(0, 100, true), {}, Device(R, INT_MIN, INT_MAX, v1::DEPTH_FULL))) ==
        v1::OUT_OF_BOUNDS);
  CHECK(ReasonOfPlan(Plan(Rack(1, 42), {}, Device(F, 42, INT_MAX, v1::DEPTH_UNKNOWN))) ==
        v1::OUT_OF_BOUNDS);
  CHECK(ReasonOfPlan(Plan(Rack(1, 42), {}, Range(F, INT_MIN, INT_MAX, true))) == v1::OUT_OF_BOUNDS);
  CHECK(ReasonOfPlan(Plan(Rack(1, 42), {}, Range(F, INT_MAX, INT_MAX))) == v1::OUT_OF_BOUNDS);
  CHECK(ReasonOfPlan(Plan(Rack(1, 42), {}, Range(F, INT_MIN, INT_MIN))) == v1::OUT_OF_BOUNDS);
  // A rack at the edge of int itself: its last unit is computed in 64 bits.
  CHECK(Rack(INT_MAX, 100).last_unit() == int64_t{INT_MAX} + 99);
}

TEST_CASE("the out-of-bounds answer names the anchor alone when the anchor is outside") {
  auto plan = Plan(Rack(1, 42), {}, Device(F, 43, 2, v1::DEPTH_FULL));
  REQUIRE_FALSE(plan.ok());
  CHECK(plan.status().message() == "unit U43 is outside this rack's U1..U42");
  auto far_end = Plan(Rack(1, 42), {}, Device(F, 42, 2, v1::DEPTH_FULL));
  REQUIRE_FALSE(far_end.ok());
  CHECK(far_end.status().message() == "units U42..U43 are outside this rack's U1..U42");
}

TEST_CASE("an accepted plan claims at least one slot and only slots inside the rack") {
  for (int first : {0, 1, 2}) {
    for (bool descending : {false, true}) {
      for (bool has_rear : {false, true}) {
        const Geometry g = Rack(first, 6, descending, has_rear);
        for (int a = -3; a <= 12; ++a) {
          for (int b = a; b <= 12; ++b) {
            for (bool both : {false, true}) {
              auto plan = Plan(g, {}, Range(F, a, b, both));
              if (plan.ok()) CHECK(ClaimIsWithin(g, *plan));
            }
            auto device = Plan(g, {}, Device(F, a, b - a + 1, v1::DEPTH_UNKNOWN));
            if (device.ok()) CHECK(ClaimIsWithin(g, *device));
          }
        }
      }
    }
  }
  CHECK_FALSE(ClaimIsWithin(Rack(1, 42), {}));
  CHECK_FALSE(ClaimIsWithin(Rack(1, 42), {{F, 43}}));
  CHECK_FALSE(ClaimIsWithin(Rack(1, 42), {{F, 0}}));
  CHECK_FALSE(ClaimIsWithin(Rack(1, 42, false, false), {{R, 5}}));
  CHECK_FALSE(ClaimIsWithin(Rack(1, 42), {{v1::SIDE_UNSPECIFIED, 5}}));
  CHECK(ClaimIsWithin(Rack(1, 42), {{F, 1}, {R, 42}}));
}

TEST_CASE("a range on both sides needs no side; a device always does") {
  auto both = Plan(Rack(1, 42), {}, Range(v1::SIDE_UNSPECIFIED, 3, 4, true));
  REQUIRE(both.ok());
  CHECK(*both == Slots{{F, 3}, {F, 4}, {R, 3}, {R, 4}});
  auto open_frame = Plan(Rack(1, 42, false, false), {}, Range(v1::SIDE_UNSPECIFIED, 3, 3, true));
  REQUIRE(open_frame.ok());
  CHECK(*open_frame == Slots{{F, 3}});
  auto device = Plan(Rack(1, 42), {}, Device(v1::SIDE_UNSPECIFIED, 3, 1, v1::DEPTH_FULL));
  CHECK(device.status().code() == absl::StatusCode::kInvalidArgument);
  auto unknown_side = Plan(Rack(1, 42), {}, Range(static_cast<v1::Side>(7), 3, 4, true));
  CHECK(unknown_side.status().code() == absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace dcl::occupancy
