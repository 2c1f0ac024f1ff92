// The delivery planner's pure core: units, sides, power and weight each on its own as the
// database counts and judges them (figures a booking lacks count 0 and are named; an unknown
// load blocks; an allowance holds a rack over its budget), keep together / spread, reasons per
// rack and dimension.
#include "services/occupancy/delivery_plan.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

namespace dcl::occupancy {
namespace {

DeliveryRack Rack(const std::string& id, int units = 42) {
  DeliveryRack r;
  r.id = id;
  r.name = id;
  r.geometry.first_unit = 1;
  r.geometry.unit_count = units;
  return r;
}

DeliveryItem Item(const std::string& name, int height, v1::DepthClass depth,
                  std::optional<int64_t> power = 500, std::optional<int64_t> weight = 20) {
  DeliveryItem i;
  i.name = name;
  i.height = height;
  i.depth = depth;
  i.power_watts = power;
  i.weight_kg = weight;
  return i;
}

// Front units taken, first..last.
void Take(DeliveryRack& r, v1::Side side, int first, int last) {
  for (int u = first; u <= last; ++u) r.occupied.push_back({side, u});
}

TEST_CASE("a half-depth item goes into the tightest gap, a full-depth one claims both sides") {
  DeliveryRack r = Rack("R1", 10);
  Take(r, v1::SIDE_FRONT, 1, 1);
  Take(r, v1::SIDE_FRONT, 4, 4);  // gap U2..U3 (2 units), gap U5..U10 (6 units)
  Take(r, v1::SIDE_REAR, 1, 10);  // rear full
  const DeliveryPlan plan =
      PlanDelivery({r}, {Item("a", 2, v1::DEPTH_HALF), Item("b", 1, v1::DEPTH_FULL)}, {});
  // The rear is full: the full-depth item fits nowhere; the 2U item takes U2..U3 (best fit
  // keeps U5..U10 whole) or U5..U6 (first fit) — both place one item; first fit wins the tie.
  REQUIRE(plan.planned.size() == 1);
  CHECK(plan.planned[0].item == 0);
  CHECK(plan.planned[0].side == v1::SIDE_FRONT);
  CHECK(plan.planned[0].anchor_unit == 2);
  REQUIRE(plan.unplaced.size() == 1);
  CHECK(plan.unplaced[0].reasons ==
        std::vector<std::string>{"R1: no 1 contiguous units free on both sides"});
}

TEST_CASE("the planner places what first-fit decreasing strands on power") {
  DeliveryRack a = Rack("A", 2);
  a.power_budget_watts = 1000;
  DeliveryRack b = Rack("B", 2);
  b.power_budget_watts = 500;
  // First-fit decreasing (by height, both 2U: input order) puts X into A, and Y (900 W) then
  // fits nowhere. Placing the hungrier item first into the tightest budget places both.
  const std::vector<DeliveryItem> items = {Item("X", 2, v1::DEPTH_HALF, 400),
                                           Item("Y", 2, v1::DEPTH_HALF, 900)};
  const DeliveryPlan plan = PlanDelivery({a, b}, items, {});
  REQUIRE(plan.planned.size() == 2);
  CHECK(plan.unplaced.empty());
  CHECK(plan.planned[0].rack_id == "B");
  CHECK(plan.planned[1].rack_id == "A");
  CHECK(plan.strategy == "best fit (tightest power budget) decreasing by power");
  CHECK(plan.racks[0].power.used_after == 900);
  CHECK(plan.racks[1].power.used_after == 400);
  // Deterministic: the same input gives the same plan.
  const DeliveryPlan again = PlanDelivery({a, b}, items, {});
  REQUIRE(again.planned.size() == 2);
  for (size_t i = 0; i < 2; ++i) {
    CHECK(again.planned[i].rack_id == plan.planned[i].rack_id);
    CHECK(again.planned[i].slots == plan.planned[i].slots);
  }
}

TEST_CASE("a descending rack's anchor is the device's lowest unit, the highest number") {
  DeliveryRack r = Rack("R1", 10);
  r.geometry.descending = true;
  const DeliveryPlan plan = PlanDelivery({r}, {Item("a", 3, v1::DEPTH_HALF)}, {});
  REQUIRE(plan.planned.size() == 1);
  CHECK(plan.planned[0].anchor_unit == 3);
  CHECK(DescribeSlots(plan.planned[0].slots) == "front U1, front U2, front U3");
}

TEST_CASE("power over budget is named with the figures, the way an operator reads it") {
  DeliveryRack r = Rack("R101");
  r.power_budget_watts = 6000;
  r.power = {{"device d1", 5400}};
  DeliveryRack r2 = Rack("R102", 1);
  Take(r2, v1::SIDE_FRONT, 1, 1);
  const DeliveryPlan plan = PlanDelivery({r, r2}, {Item("srv", 2, v1::DEPTH_FULL, 800)}, {});
  REQUIRE(plan.unplaced.size() == 1);
  CHECK(plan.unplaced[0].reasons ==
        std::vector<std::string>{"R101: units free, power 5,400 of 6,000 W + 800 W over budget",
                                 "R102: no 2 contiguous units free on both sides"});
}

TEST_CASE("a reservation without a figure counts 0 and is named; a device's unknown load blocks") {
  DeliveryRack blocked = Rack("U");
  blocked.power_budget_watts = 20000;
  blocked.power = {{"device d9", std::nullopt}, {"device d8", 300}};
  blocked.power_load_unknown = true;  // d9 was booked before the budget was decided
  DeliveryRack budgeted = Rack("B");
  budgeted.power_budget_watts = 20000;
  budgeted.power = {{"reservation r1 (units only)", std::nullopt}};
  const DeliveryPlan plan =
      PlanDelivery({blocked, budgeted}, {Item("x", 1, v1::DEPTH_HALF, 500)}, {});
  REQUIRE(plan.planned.size() == 1);
  CHECK(plan.planned[0].rack_id == "B");
  const RackView& u = plan.racks[0];
  CHECK(u.power.load_unknown);
  CHECK(u.power.known_before == 300);
  CHECK(u.power.used_after == 300);
  CHECK(u.power.unknown == std::vector<std::string>{"device d9"});
  const RackView& b = plan.racks[1];
  CHECK_FALSE(b.power.load_unknown);
  CHECK(b.power.known_before == 0);
  CHECK(b.power.used_after == 500);
  CHECK(b.power.unknown == std::vector<std::string>{"reservation r1 (units only)"});

  // Into the blocked rack only what adds nothing: an item without a figure holds units only.
  const DeliveryPlan only_units = PlanDelivery(
      {blocked}, {Item("y", 1, v1::DEPTH_HALF, std::nullopt), Item("z", 1, v1::DEPTH_HALF, 500)},
      {});
  REQUIRE(only_units.planned.size() == 1);
  CHECK(only_units.planned[0].item == 0);
  CHECK(only_units.racks[0].power.used_after == 300);
  CHECK(only_units.racks[0].power.unknown ==
        std::vector<std::string>{"device d9", "item y (units only)"});
  REQUIRE(only_units.unplaced.size() == 1);
  CHECK(only_units.unplaced[0].reasons ==
        std::vector<std::string>{
            "U: units free, power load unknown (a device without a power figure): no addition"});
}

TEST_CASE("an item fits up to the budget exactly, and a rack held over its budget takes none") {
  DeliveryRack r = Rack("R");
  r.power_budget_watts = 5000;
  r.power = {{"reservation a", 450}, {"reservation b", 450}};
  const DeliveryPlan plan =
      PlanDelivery({r}, {Item("a", 1, v1::DEPTH_HALF, 4100), Item("b", 1, v1::DEPTH_HALF, 1)}, {});
  CHECK(plan.racks[0].power.known_before == 900);
  REQUIRE(plan.planned.size() == 1);
  CHECK(plan.racks[0].power.used_after == 5000);
  REQUIRE(plan.unplaced.size() == 1);
  CHECK(plan.unplaced[0].reasons ==
        std::vector<std::string>{"R: units free, power 5,000 of 5,000 W + 1 W over budget"});

  DeliveryRack over = Rack("O");
  over.weight_budget_kg = 1000;
  over.weight = {{"device d1", 1200}};
  over.weight_allowance_kg = 200;  // it stood at 1,200 kg when the budget was decided
  const DeliveryPlan held = PlanDelivery({over}, {Item("c", 1, v1::DEPTH_HALF, 100, 1)}, {});
  CHECK(held.planned.empty());
  CHECK(held.racks[0].weight.allowance == 200);
  REQUIRE(held.unplaced.size() == 1);
  CHECK(held.unplaced[0].reasons ==
        std::vector<std::string>{"O: units free, weight 1,200 of 1,000 kg + 1 kg over budget (the "
                                 "rack stands over its budget: it takes releases only)"});
}

TEST_CASE("headroom is kept free on power and weight") {
  DeliveryRack r = Rack("R1");
  r.power_budget_watts = 1000;
  r.weight_budget_kg = 100;
  DeliveryConstraints c;
  c.power_headroom_watts = 200;
  const DeliveryPlan plan =
      PlanDelivery({r}, {Item("a", 1, v1::DEPTH_HALF, 500), Item("b", 1, v1::DEPTH_HALF, 500)}, c);
  CHECK(plan.planned.size() == 1);
  REQUIRE(plan.unplaced.size() == 1);
  CHECK(plan.unplaced[0].reasons[0] ==
        "R1: units free, power 500 of 1,000 W + 500 W over budget with 200 W headroom");
}

TEST_CASE("keep together puts every item in one rack, the one that takes them all") {
  DeliveryRack small = Rack("S", 2);
  DeliveryRack big = Rack("B", 10);
  DeliveryConstraints c;
  c.keep_together = true;
  std::vector<DeliveryItem> items(3, Item("i", 2, v1::DEPTH_HALF));
  const DeliveryPlan plan = PlanDelivery({small, big}, items, c);
  REQUIRE(plan.planned.size() == 3);
  for (const PlannedItem& p : plan.planned) CHECK(p.rack_id == "B");
}

TEST_CASE("spread puts at most N items in a rack and says so for the rest") {
  DeliveryConstraints c;
  c.max_per_rack = 2;
  std::vector<DeliveryItem> items(5, Item("i", 1, v1::DEPTH_HALF));
  const DeliveryPlan plan = PlanDelivery({Rack("A"), Rack("B")}, items, c);
  CHECK(plan.planned.size() == 4);
  REQUIRE(plan.unplaced.size() == 1);
  CHECK(plan.unplaced[0].reasons[0] ==
        "A: holds 2 items of this delivery (at most 2 per rack), units free");
}

TEST_CASE("a side is honoured, and an open frame has no rear") {
  DeliveryRack frame = Rack("F");
  frame.geometry.has_rear = false;
  DeliveryConstraints c;
  c.side = v1::SIDE_REAR;
  const DeliveryPlan plan = PlanDelivery({frame, Rack("R")}, {Item("a", 1, v1::DEPTH_HALF)}, c);
  REQUIRE(plan.planned.size() == 1);
  CHECK(plan.planned[0].rack_id == "R");
  CHECK(plan.planned[0].side == v1::SIDE_REAR);
  CHECK(DescribeSlots(plan.planned[0].slots) == "rear U1");
  const DeliveryPlan none = PlanDelivery({frame}, {Item("a", 1, v1::DEPTH_HALF)}, c);
  REQUIRE(none.unplaced.size() == 1);
  CHECK(none.unplaced[0].reasons[0] == "F: no rear side (open frame)");
  CHECK(none.racks[0].free_rear_before == 0);
}

TEST_CASE("only the allowed racks are used, in the order given") {
  DeliveryConstraints c;
  c.allowed_rack_ids = {"C", "A"};
  const DeliveryPlan plan =
      PlanDelivery({Rack("A"), Rack("B"), Rack("C")}, {Item("a", 1, v1::DEPTH_HALF)}, c);
  REQUIRE(plan.planned.size() == 1);
  CHECK(plan.planned[0].rack_id == "C");
  REQUIRE(plan.racks.size() == 2);
  CHECK(plan.racks[0].rack_id == "C");
  CHECK(plan.racks[1].rack_id == "A");
}

TEST_CASE("figures read with thousands separators") {
  CHECK(Thousands(0) == "0");
  CHECK(Thousands(999) == "999");
  CHECK(Thousands(5400) == "5,400");
  CHECK(Thousands(1000000) == "1,000,000");
  CHECK(Thousands(-1234) == "-1,234");
}

}  // namespace
}  // namespace dcl::occupancy
