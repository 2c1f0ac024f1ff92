// PlanDelivery and ReserveDelivery against a real PostgreSQL: a plan writes nothing and reads
// unknowns as the worst case; a reservation of a whole delivery is one transaction, all or
// nothing, its colliding units named; each item is then placed out of its own reservation
// without a free instant; the sweeper releases a lapsed delivery like any other reservation.
#include <catch2/catch.hpp>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
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
