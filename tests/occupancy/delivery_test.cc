// PlanDelivery and ReserveDelivery against a real PostgreSQL: a plan writes nothing and reads
// what the database counts (a reservation's own figures, none for one that holds units only); a
// reservation of a whole delivery is one transaction, all or nothing, its colliding units named,
// each item's known figures held in the rack's budgets; each item is then placed out of its own
// reservation without a free instant; the sweeper releases a lapsed delivery like any other.
#include <catch2/catch.hpp>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "services/common/status.h"
#include "services/occupancy/booking_store.h"
#include "services/occupancy/occupancy_logic.h"
#include "tests/support/barrier.h"
#include "tests/support/fixtures.h"
#include "tests/support/site.h"
#include "tests/support/test_db.h"

namespace dcl::occupancy {
namespace {

using testing::TestDatabase;

// Two racks: R101 of ten units with a 6 kW budget, R102 of four units.
testing::RackSpec Rack101() {
  testing::RackSpec spec;
  spec.name = "R101";
  spec.unit_count = 10;
  spec.power_budget_watts = 6000;
  return spec;
}
testing::RackSpec Rack102() {
  testing::RackSpec spec;
  spec.name = "R102";
  spec.unit_count = 4;
  return spec;
}

struct Site : testing::Site {
  Site() : testing::Site({Rack101(), Rack102()}), r1(racks[0]), r2(racks[1]) {}
  const std::string r1;
  const std::string r2;
};

v1::ErrorDetail DetailOf(const absl::Status& status) {
  auto detail = GetErrorDetail(status);
  REQUIRE(detail.has_value());
  return *detail;
}

v1::PlanDeliveryRequest Request(const Site& s, const std::vector<std::string>& devices) {
  v1::PlanDeliveryRequest req;
  req.set_site_id(s.site);
  for (const std::string& d : devices) req.add_items()->set_device_id(d);
  return req;
}

TEST_CASE("a plan names the rack, side and units of each item, the figures per rack, and writes "
          "nothing") {
  Site s;
  auto pool = s.db.MakePool(2);
  OccupancyLogic logic(*pool);
  // R101 already draws 5,400 W.
  const std::string hungry = s.Device(1, "full", 5400);
  v1::PlaceDeviceRequest place;
  place.set_rack_id(s.r1);
  place.set_device_id(hungry);
  place.set_side(v1::SIDE_FRONT);
  place.set_unit(1);
  v1::Booking placed;
  REQUIRE(logic.PlaceDevice(s.op, place, &placed).ok());
  const int64_t before = s.Bookings();

  v1::PlanDeliveryRequest req = Request(s, {s.Device(2, "full", 800)});
  v1::DeliverySpec* spec = req.add_items()->mutable_spec();
  spec->set_height_units(1);
  spec->set_depth_class(v1::DEPTH_HALF);
  spec->set_power_draw_watts(300);
  spec->set_count(2);
  spec->set_label("edge");
  v1::DeliveryPlan plan;
  REQUIRE(logic.PlanDelivery(s.op, req, &plan).ok());
  CHECK(s.Bookings() == before);
  // The 800 W server fits only R102 (no budget there): R101 would go 200 W over.
  REQUIRE(plan.planned_size() == 3);
  CHECK(plan.planned(0).rack_name() == "R102");
  CHECK(plan.planned(0).slots_size() == 4);
  CHECK(plan.planned(1).name() == "edge #1");
  REQUIRE(plan.racks_size() == 2);
  CHECK(plan.racks(0).rack_name() == "R101");
  CHECK(plan.racks(0).power_watts().known_before() == 5400);
  CHECK(plan.racks(0).free_front_before() == 9);
}

TEST_CASE("an item that fits nowhere says why, per rack and dimension") {
  Site s;
  auto pool = s.db.MakePool(2);
  OccupancyLogic logic(*pool);
  const std::string hungry = s.Device(1, "full", 5400);
  v1::PlaceDeviceRequest place;
  place.set_rack_id(s.r1);
  place.set_device_id(hungry);
  place.set_side(v1::SIDE_FRONT);
  place.set_unit(1);
  v1::Booking placed;
  REQUIRE(logic.PlaceDevice(s.op, place, &placed).ok());
  v1::PlanDeliveryRequest req = Request(s, {s.Device(5, "full", 800)});
  v1::DeliveryPlan plan;
  REQUIRE(logic.PlanDelivery(s.op, req, &plan).ok());
  REQUIRE(plan.unplaced_size() == 1);
  CHECK(plan.unplaced(0).reasons(0) ==
        "R101: units free, power 5,400 of 6,000 W + 800 W over budget");
  CHECK(plan.unplaced(0).reasons(1) == "R102: no 5 contiguous units free on both sides");
}

// A rack whose power budget the database decides: budgeted after it was created, so its budget
// rows are built (schema 0039) whatever a rack created with a budget gets.
std::string BudgetedRack(Site& s, const std::string& name, int power_budget_watts) {
  testing::RackSpec spec;
  spec.name = name;
  spec.unit_count = 10;
  const std::string rack = testing::CreateRack(s.db, s.org, s.site, spec);
  s.db.Exec(absl::StrCat("UPDATE racks SET power_budget_watts = ", power_budget_watts,
                         " WHERE id = '", rack, "'"));
  return rack;
}

v1::PlanDeliveryRequest SpecRequest(const Site& s, const std::string& rack, int power_watts,
                                    int count) {
  v1::PlanDeliveryRequest req;
  req.set_site_id(s.site);
  v1::DeliverySpec* spec = req.add_items()->mutable_spec();
  spec->set_height_units(1);
  spec->set_depth_class(v1::DEPTH_HALF);
  spec->set_power_draw_watts(power_watts);
  spec->set_count(count);
  spec->set_label(absl::StrCat(power_watts, " W"));
  req.mutable_constraints()->add_rack_ids(rack);
  return req;
}

int64_t PowerUsed(const Site& s, const std::string& rack) {
  return s.db.Count(absl::StrCat("SELECT used FROM rack_budgets WHERE rack_id = '", rack,
                                 "' AND dimension = 'power'"));
}

TEST_CASE(
    "two 450 W servers reserved in a 5,000 W rack count 900 W, and the next plan uses "
    "the rest") {
  Site s;
  auto pool = s.db.MakePool(2);
  OccupancyLogic logic(*pool);
  const std::string rack = BudgetedRack(s, "R201", 5000);
  v1::ReserveDeliveryRequest reserve;
  *reserve.mutable_plan_request() = SpecRequest(s, rack, 450, 2);
  v1::DeliveryReservation reserved;
  REQUIRE(logic.ReserveDelivery(s.op, reserve, &reserved).ok());
  REQUIRE(reserved.reservations_size() == 2);
  CHECK(PowerUsed(s, rack) == 900);

  // The next delivery reads 900 of 5,000 W, not two unknowns, and plans 4,100 W into the rest.
  v1::DeliveryPlan plan;
  REQUIRE(logic.PlanDelivery(s.op, SpecRequest(s, rack, 4100, 1), &plan).ok());
  REQUIRE(plan.racks_size() == 1);
  CHECK(plan.racks(0).power_watts().known_before() == 900);
  CHECK(plan.racks(0).power_watts().unknown_size() == 0);
  CHECK(plan.planned_size() == 1);
  // One watt more fits nowhere, and says why.
  v1::DeliveryPlan over;
  REQUIRE(logic.PlanDelivery(s.op, SpecRequest(s, rack, 4101, 1), &over).ok());
  CHECK(over.planned_size() == 0);
  REQUIRE(over.unplaced_size() == 1);
  CHECK(over.unplaced(0).reasons(0) ==
        "R201: units free, power 900 of 5,000 W + 4,101 W over budget");
}

TEST_CASE("a delivery's reservations hold its items' figures; an item without one holds units") {
  Site s;
  auto pool = s.db.MakePool(2);
  OccupancyLogic logic(*pool);
  const std::string rack = BudgetedRack(s, "R201", 5000);
  v1::ReserveDeliveryRequest reserve;
  *reserve.mutable_plan_request() = SpecRequest(s, rack, 450, 2);
  v1::DeliverySpec* bare = reserve.mutable_plan_request()->add_items()->mutable_spec();
  bare->set_height_units(1);
  bare->set_depth_class(v1::DEPTH_HALF);
  bare->set_label("no figures");
  v1::DeliveryReservation reserved;
  REQUIRE(logic.ReserveDelivery(s.op, reserve, &reserved).ok());
  REQUIRE(reserved.reservations_size() == 3);
  for (int i = 0; i < 2; ++i) {
    CHECK(reserved.plan().planned(i).power_watts() == 450);
    CHECK(reserved.reservations(i).power_watts() == 450);
    CHECK_FALSE(reserved.reservations(i).has_weight_kg());
  }
  CHECK_FALSE(reserved.plan().planned(2).has_power_watts());
  CHECK_FALSE(reserved.reservations(2).has_power_watts());
  CHECK(s.db.Count("SELECT count(*) FROM bookings WHERE power_watts = 450") == 2);
  CHECK(s.db.Count("SELECT count(*) FROM bookings WHERE kind = 'reservation' AND "
                   "power_watts IS NULL") == 1);
  CHECK(PowerUsed(s, rack) == 900);

  // A later plan lists the one without a figure as holding units only.
  v1::DeliveryPlan plan;
  REQUIRE(logic.PlanDelivery(s.op, SpecRequest(s, rack, 100, 1), &plan).ok());
  CHECK(plan.racks(0).power_watts().known_before() == 900);
  REQUIRE(plan.racks(0).power_watts().unknown_size() == 1);
  CHECK(plan.racks(0).power_watts().unknown(0) ==
        "reservation " + reserved.reservations(2).id() + " (units only)");

  // Planned items reserved as given carry their figures too.
  v1::ReserveDeliveryRequest again;
  *again.mutable_planned()->mutable_items() = plan.planned();
  v1::DeliveryReservation out;
  REQUIRE(logic.ReserveDelivery(s.op, again, &out).ok());
  CHECK(out.reservations(0).power_watts() == 100);
  CHECK(PowerUsed(s, rack) == 1000);
}

TEST_CASE(
    "a delivery the planner refuses, forced through ReserveUnits, is refused by the "
    "database") {
  Site s;
  auto pool = s.db.MakePool(2);
  OccupancyLogic logic(*pool);
  const std::string rack = BudgetedRack(s, "R201", 5000);
  v1::ReserveDeliveryRequest reserve;
  *reserve.mutable_plan_request() = SpecRequest(s, rack, 450, 2);
  v1::DeliveryReservation reserved;
  REQUIRE(logic.ReserveDelivery(s.op, reserve, &reserved).ok());

  // A third delivery of 4,200 W: the planner finds no room, nothing reserved.
  v1::ReserveDeliveryRequest third;
  *third.mutable_plan_request() = SpecRequest(s, rack, 4200, 1);
  v1::DeliveryReservation refused;
  const absl::Status planned = logic.ReserveDelivery(s.op, third, &refused);
  CHECK(DetailOf(planned).reason() == v1::NO_CAPACITY);
  const int64_t before = s.Bookings();

  // The same units reserved by hand with the figure: the database refuses it.
  v1::ReserveUnitsRequest units;
  units.set_rack_id(rack);
  units.set_side(v1::SIDE_FRONT);
  units.set_first_unit(5);
  units.set_last_unit(5);
  units.set_power_watts(4200);
  v1::Booking booking;
  const absl::Status forced = logic.ReserveUnits(s.op, units, &booking);
  CHECK(forced.code() == absl::StatusCode::kFailedPrecondition);
  CHECK(DetailOf(forced).reason() == v1::POWER_BUDGET_EXCEEDED);
  CHECK(DetailOf(forced).metadata().at("used_watts") == "5100");
  CHECK(DetailOf(forced).metadata().at("over_watts") == "100");
  CHECK(s.Bookings() == before);
  CHECK(PowerUsed(s, rack) == 900);

  // What is left, exactly, is taken, and the answer says what the reservation holds.
  units.set_power_watts(4100);
  units.set_weight_kg(30);
  REQUIRE(logic.ReserveUnits(s.op, units, &booking).ok());
  CHECK(booking.power_watts() == 4100);
  CHECK(booking.weight_kg() == 30);
  CHECK(PowerUsed(s, rack) == 5000);
  // Without figures it holds units only: the answer has none, the budget is unchanged.
  units.clear_power_watts();
  units.clear_weight_kg();
  units.set_first_unit(6);
  units.set_last_unit(6);
  REQUIRE(logic.ReserveUnits(s.op, units, &booking).ok());
  CHECK_FALSE(booking.has_power_watts());
  CHECK_FALSE(booking.has_weight_kg());
  CHECK(PowerUsed(s, rack) == 5000);
}

TEST_CASE("a delivery's bad input is refused before anything is read or written") {
  Site s;
  auto pool = s.db.MakePool(2);
  OccupancyLogic logic(*pool);
  v1::DeliveryPlan plan;
  v1::PlanDeliveryRequest no_depth;
  no_depth.set_site_id(s.site);
  no_depth.add_items()->mutable_spec()->set_height_units(1);
  CHECK(logic.PlanDelivery(s.op, no_depth, &plan).code() == absl::StatusCode::kInvalidArgument);
  v1::PlanDeliveryRequest empty;
  empty.set_site_id(s.site);
  CHECK(logic.PlanDelivery(s.op, empty, &plan).code() == absl::StatusCode::kInvalidArgument);
  const std::string other = testing::CreateOrg(s.db, "globex");
  CHECK(logic.PlanDelivery(testing::PrincipalFor(other, Role::kDcOperator),
                           Request(s, {s.Device(1, "half", 1)}), &plan)
            .code() == absl::StatusCode::kNotFound);
  v1::PlanDeliveryRequest foreign_rack = Request(s, {s.Device(1, "half", 1)});
  foreign_rack.mutable_constraints()->add_rack_ids("00000000-0000-0000-0000-000000000001");
  CHECK(logic.PlanDelivery(s.op, foreign_rack, &plan).code() == absl::StatusCode::kNotFound);
  const std::string d = s.Device(1, "half", 1);
  CHECK(logic.PlanDelivery(s.op, Request(s, {d, d}), &plan).code() ==
        absl::StatusCode::kInvalidArgument);
}

TEST_CASE("a delivery is reserved in one step and placed server by server out of it") {
  Site s;
  auto pool = s.db.MakePool(2);
  OccupancyLogic logic(*pool);
  const std::vector<std::string> devices = {s.Device(2, "half", 300), s.Device(1, "full", 300),
                                            s.Device(3, "half", 300)};
  v1::ReserveDeliveryRequest reserve;
  *reserve.mutable_plan_request() = Request(s, devices);
  reserve.set_ttl_seconds(3600);
  reserve.set_request_id("delivery-tuesday");
  v1::DeliveryReservation reserved;
  bool replayed = false;
  REQUIRE(logic.ReserveDelivery(s.op, reserve, &reserved, &replayed).ok());
  CHECK_FALSE(replayed);
  REQUIRE(reserved.reservations_size() == 3);
  CHECK(s.db.Count("SELECT count(*) FROM bookings WHERE kind = 'reservation'") == 3);
  // A retry after a lost reply gets the same answer, nothing written twice.
  v1::DeliveryReservation again;
  REQUIRE(logic.ReserveDelivery(s.op, reserve, &again, &replayed).ok());
  CHECK(replayed);
  CHECK(again.reservations(0).id() == reserved.reservations(0).id());
  CHECK(s.db.Count("SELECT count(*) FROM bookings") == 3);

  for (int i = 0; i < 3; ++i) {
    const v1::PlannedDeliveryItem& item = reserved.plan().planned(i);
    v1::PlaceDeviceRequest place;
    place.set_rack_id(item.rack_id());
    place.set_device_id(item.device_id());
    place.set_side(item.side());
    place.set_unit(item.unit());
    place.set_reservation_id(reserved.reservations(i).id());
    v1::Booking placed;
    absl::Status st = logic.PlaceDevice(s.op, place, &placed);
    REQUIRE(st.ok());
    // Each item's reservation was exactly its units: promoted in place.
    CHECK(placed.id() == reserved.reservations(i).id());
  }
  CHECK(s.db.Count("SELECT count(*) FROM bookings WHERE kind = 'placement' AND "
                   "released_at IS NULL") == 3);
  CHECK(s.db.Count("SELECT count(*) FROM booking_slots WHERE released_at IS NOT NULL") == 0);
}

TEST_CASE("a booking that lands between plan and reserve fails the whole delivery, units named") {
  Site s;
  auto pool = s.db.MakePool(2);
  OccupancyLogic logic(*pool);
  v1::DeliveryPlan plan;
  REQUIRE(logic.PlanDelivery(s.op, Request(s, {s.Device(2, "half", 100), s.Device(1, "half", 100)}),
                             &plan)
              .ok());
  REQUIRE(plan.planned_size() == 2);
  // Someone blocks one unit of the second item's units after the plan was read.
  const v1::PlannedDeliveryItem& second = plan.planned(1);
  v1::BlockUnitsRequest block;
  block.set_rack_id(second.rack_id());
  block.set_side(second.slots(0).side());
  block.set_first_unit(second.slots(0).unit());
  block.set_last_unit(second.slots(0).unit());
  v1::Booking blocked;
  REQUIRE(logic.BlockUnits(s.op, block, &blocked).ok());
  const int64_t before = s.Bookings();

  v1::ReserveDeliveryRequest reserve;
  *reserve.mutable_planned()->mutable_items() = plan.planned();
  v1::DeliveryReservation out;
  absl::Status st = logic.ReserveDelivery(s.op, reserve, &out);
  const v1::ErrorDetail d = DetailOf(st);
  CHECK(st.code() == absl::StatusCode::kFailedPrecondition);
  CHECK(d.reason() == v1::UNIT_OCCUPIED);
  REQUIRE(d.colliding_slots_size() == 1);
  CHECK(d.colliding_slots(0).unit() == second.slots(0).unit());
  CHECK(d.metadata().at("collisions") ==
        second.rack_name() + (second.slots(0).side() == v1::SIDE_FRONT ? ": front U" : ": rear U") +
            std::to_string(second.slots(0).unit()));
  // All or nothing: the first item's units were not reserved either.
  CHECK(s.Bookings() == before);
}

TEST_CASE("a delivery colliding in many racks names the first units of three and counts the rest") {
  Site s;
  auto pool = s.db.MakePool(1);
  OccupancyLogic logic(*pool);
  // Eight racks; in each, units the stale plan put an item on were blocked since: U3 front,
  // and in the first rack U1-U10 front (ten units, one item).
  v1::ReserveDeliveryRequest reserve;
  for (int r = 0; r < 8; ++r) {
    testing::RackSpec spec;
    spec.name = "S" + std::to_string(r);
    spec.unit_count = 12;
    const std::string rack = testing::CreateRack(s.db, s.org, s.site, spec);
    const int first = r == 0 ? 1 : 3;
    const int last = r == 0 ? 10 : 3;
    v1::PlannedDeliveryItem* item = reserve.mutable_planned()->add_items();
    item->set_item(r);
    item->set_name("srv " + std::to_string(r));
    item->set_rack_id(rack);
    item->set_rack_name(spec.name);
    item->set_side(v1::SIDE_FRONT);
    item->set_unit(first);
    for (int unit = first; unit <= last; ++unit) {
      v1::Slot* slot = item->add_slots();
      slot->set_side(v1::SIDE_FRONT);
      slot->set_unit(unit);
    }
    v1::BlockUnitsRequest block;
    block.set_rack_id(rack);
    block.set_side(v1::SIDE_FRONT);
    block.set_first_unit(first);
    block.set_last_unit(last);
    v1::Booking blocked;
    REQUIRE(logic.BlockUnits(s.op, block, &blocked).ok());
  }
  const int64_t before = s.Bookings();
  v1::DeliveryReservation out;
  const absl::Status st = logic.ReserveDelivery(s.op, reserve, &out);
  const v1::ErrorDetail d = DetailOf(st);
  CHECK(d.reason() == v1::UNIT_OCCUPIED);
  CHECK(d.metadata().at("collisions") ==
        "S0: front U1, front U2, front U3, front U4, front U5, front U6, front U7, front U8 and "
        "2 more; S1: front U3; S2: front U3");
  CHECK(d.metadata().at("collision_racks") == "8");
  CHECK(d.metadata().at("collision_units") == "17");
  CHECK(absl::EndsWith(st.message(), "S2: front U3; and 5 more racks"));
  CHECK(d.colliding_slots_size() == 10);  // those named
  CHECK(s.Bookings() == before);
}

TEST_CASE("two reservations of one plan at once: one delivery reserved, the other names units") {
  Site s;
  auto setup = s.db.MakePool(1);
  OccupancyLogic logic(*setup);
  v1::DeliveryPlan plan;
  REQUIRE(logic.PlanDelivery(s.op, Request(s, {s.Device(2, "full", 100), s.Device(1, "half", 100),
                                               s.Device(1, "half", 100)}),
                             &plan)
              .ok());
  v1::ReserveDeliveryRequest reserve;
  *reserve.mutable_planned()->mutable_items() = plan.planned();
  auto pool1 = s.db.MakePool(1);
  auto pool2 = s.db.MakePool(1);
  OccupancyLogic l1(*pool1);
  OccupancyLogic l2(*pool2);
  testing::Barrier barrier(2);
  absl::Status st1, st2;
  v1::DeliveryReservation o1, o2;
  std::thread t1([&] {
    barrier.ArriveAndWait();
    st1 = l1.ReserveDelivery(s.op, reserve, &o1);
  });
  std::thread t2([&] {
    barrier.ArriveAndWait();
    st2 = l2.ReserveDelivery(s.op, reserve, &o2);
  });
  t1.join();
  t2.join();
  REQUIRE(st1.ok() != st2.ok());
  const absl::Status& lost = st1.ok() ? st2 : st1;
  CHECK(DetailOf(lost).reason() == v1::UNIT_OCCUPIED);
  CHECK(s.db.Count("SELECT count(*) FROM bookings WHERE kind = 'reservation'") == 3);
  CHECK(s.db.Count("SELECT count(*) FROM bookings b WHERE NOT EXISTS "
                   "(SELECT 1 FROM booking_slots x WHERE x.booking_id = b.id)") == 0);
}

TEST_CASE("a delivery that does not fit whole is refused NO_CAPACITY and reserves nothing") {
  Site s;
  auto pool = s.db.MakePool(2);
  OccupancyLogic logic(*pool);
  v1::ReserveDeliveryRequest reserve;
  *reserve.mutable_plan_request() =
      Request(s, {s.Device(2, "full", 100), s.Device(20, "full", 100)});
  v1::DeliveryReservation out;
  absl::Status st = logic.ReserveDelivery(s.op, reserve, &out);
  CHECK(DetailOf(st).reason() == v1::NO_CAPACITY);
  CHECK(DetailOf(st).metadata().at("unplaced") == "1");
  CHECK(s.Bookings() == 0);
}

TEST_CASE("the sweeper releases a lapsed delivery's reservations like any other") {
  Site s;
  auto pool = s.db.MakePool(2);
  OccupancyLogic logic(*pool);
  v1::ReserveDeliveryRequest reserve;
  *reserve.mutable_plan_request() =
      Request(s, {s.Device(2, "full", 100), s.Device(1, "half", 100)});
  reserve.set_ttl_seconds(60);
  v1::DeliveryReservation out;
  REQUIRE(logic.ReserveDelivery(s.op, reserve, &out).ok());
  auto sweep = [&] {
    return pool->Transact([&](pqxx::work& tx) -> absl::StatusOr<int64_t> {
      return ReleaseLapsedReservations(tx, 100, "sweeper", "expired");
    });
  };
  CHECK(*sweep() == 0);  // not lapsed yet
  s.db.Exec("UPDATE bookings SET expires_at = now() - interval '1 second'");
  CHECK(*sweep() == 2);
  CHECK(s.db.Count("SELECT count(*) FROM booking_slots WHERE released_at IS NULL") == 0);
  // A released reservation is not placed into.
  v1::PlaceDeviceRequest place;
  place.set_rack_id(out.plan().planned(1).rack_id());
  place.set_device_id(out.plan().planned(1).device_id());
  place.set_side(out.plan().planned(1).side());
  place.set_unit(out.plan().planned(1).unit());
  place.set_reservation_id(out.reservations(1).id());
  v1::Booking placed;
  CHECK(DetailOf(logic.PlaceDevice(s.op, place, &placed)).reason() == v1::WRONG_STATE);
}

}  // namespace
}  // namespace dcl::occupancy
