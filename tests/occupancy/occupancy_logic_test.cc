// The occupancy service's logic against a real PostgreSQL: elevation, capacity with unknowns
// kept apart and as the database counts it (reservations' own figures, an allowance, a load
// that is unknown), the dry run, and bad input refused with nothing written.
#include "services/occupancy/occupancy_logic.h"

#include <catch2/catch.hpp>
#include <string>

#include "services/common/status.h"
#include "tests/support/fixtures.h"
#include "tests/support/test_db.h"

namespace dcl::occupancy {
namespace {

using testing::TestDatabase;

v1::ErrorDetail DetailOf(const absl::Status& status) {
  auto detail = GetErrorDetail(status);
  REQUIRE(detail.has_value());
  return *detail;
}

struct Fixture {
  TestDatabase db;
  std::string org, site;
  Principal op;
  std::unique_ptr<DbPool> pool;
  std::unique_ptr<OccupancyLogic> logic;
  Fixture() {
    org = testing::CreateOrg(db, "acme");
    site = testing::CreateSite(db, org, "FRA1");
    op = testing::PrincipalFor(org, Role::kDcOperator);
    pool = db.MakePool(2);
    logic = std::make_unique<OccupancyLogic>(*pool);
  }
  std::string Rack(testing::RackSpec spec = {}) { return testing::CreateRack(db, org, site, spec); }
  std::string Device(int height, const std::string& depth, int power = -1, int weight = -1) {
    testing::DeviceSpec spec;
    spec.height_units = height;
    spec.depth_class = depth;
    spec.power_draw_watts = power;
    spec.weight_kg = weight;
    return testing::CreateDevice(db, org, site, spec);
  }
  absl::Status Place(const std::string& rack, const std::string& device, v1::Side side, int unit,
                     v1::Booking* out = nullptr) {
    v1::PlaceDeviceRequest req;
    req.set_rack_id(rack);
    req.set_device_id(device);
    req.set_side(side);
    req.set_unit(unit);
    v1::Booking ignored;
    return logic->PlaceDevice(op, req, out != nullptr ? out : &ignored);
  }
  int64_t Written() const {
    return db.Count(
        "SELECT (SELECT count(*) FROM bookings) + (SELECT count(*) FROM booking_slots)");
  }
};

TEST_CASE("the elevation lists every active slot in unit order with its booking and kind") {
  Fixture f;
  testing::RackSpec spec;
  spec.first_unit = 0;
  spec.unit_count = 20;
  spec.numbering = "descending";
  const std::string rack = f.Rack(spec);
  const std::string device = f.Device(2, "full");
  v1::Booking placed;
  REQUIRE(f.Place(rack, device, v1::SIDE_FRONT, 10, &placed).ok());
  v1::BlockUnitsRequest block;
  block.set_rack_id(rack);
  block.set_side(v1::SIDE_REAR);
  block.set_first_unit(3);
  block.set_last_unit(3);
  block.set_reason("cable tray");
  v1::Booking blocked;
  REQUIRE(f.logic->BlockUnits(f.op, block, &blocked).ok());

  v1::GetRackRequest req;
  req.set_rack_id(rack);
  v1::Rack out;
  REQUIRE(f.logic->GetRack(f.op, req, &out).ok());
  CHECK(out.geometry().first_unit() == 0);
  CHECK(out.geometry().unit_count() == 20);
  CHECK(out.geometry().numbering() == v1::NUMBERING_DESCENDING);
  CHECK(out.geometry().has_rear());
  REQUIRE(out.occupied_size() == 5);
  // Descending: a 2U device at U10 occupies U9 and U10.
  CHECK(out.occupied(0).slot().unit() == 3);
  CHECK(out.occupied(0).kind() == v1::BOOKING_BLOCKING);
  CHECK(out.occupied(0).booking_id() == blocked.id());
  CHECK(out.occupied(1).slot().unit() == 9);
  CHECK(out.occupied(1).slot().side() == v1::SIDE_FRONT);
  CHECK(out.occupied(2).slot().unit() == 9);
  CHECK(out.occupied(2).slot().side() == v1::SIDE_REAR);
  CHECK(out.occupied(4).slot().unit() == 10);
  CHECK(out.occupied(4).kind() == v1::BOOKING_PLACEMENT);
  CHECK(out.occupied(4).device_id() == device);
}

TEST_CASE("capacity reports each dimension on its own and unknowns as unknown") {
  Fixture f;
  testing::RackSpec spec;
  spec.unit_count = 10;
  const std::string rack = f.Rack(spec);
  REQUIRE(f.Place(rack, f.Device(2, "full", 200, -1), v1::SIDE_FRONT, 1).ok());
  REQUIRE(f.Place(rack, f.Device(1, "half", -1, 30), v1::SIDE_FRONT, 5).ok());
  REQUIRE(f.Place(rack, f.Device(1, "half", 150, 20), v1::SIDE_REAR, 5).ok());
  // A device of unknown power stands in a budgeted rack only as it stood before the database
  // decided budgets (schema 0039 refuses it now): the budget comes as an upgrade found it.
  testing::BudgetRackBeforeTheRule(f.db, rack, 1000);  // weight budget unknown
  v1::ReserveUnitsRequest reserve;
  reserve.set_rack_id(rack);
  reserve.set_side(v1::SIDE_REAR);
  reserve.set_first_unit(8);
  reserve.set_last_unit(10);
  v1::Booking reservation;
  REQUIRE(f.logic->ReserveUnits(f.op, reserve, &reservation).ok());

  v1::GetRackCapacityRequest req;
  req.set_rack_id(rack);
  v1::RackCapacity cap;
  REQUIRE(f.logic->GetRackCapacity(f.op, req, &cap).ok());
  CHECK(cap.has_rear());
  CHECK(cap.free_front_units() == 10 - 3);         // U1, U2, U5
  CHECK(cap.free_rear_units() == 10 - 2 - 1 - 3);  // U1, U2, U5, U8..U10
  CHECK(cap.power_watts().budget_known());
  CHECK(cap.power_watts().budget() == 1000);
  CHECK(cap.power_watts().known_used() == 350);
  // The device without a draw, and the rack reservation: nobody knows what will stand there.
  CHECK(cap.power_watts().items_with_unknown_value() == 2);
  CHECK_FALSE(cap.weight_kg().budget_known());
  CHECK(cap.weight_kg().known_used() == 50);
  CHECK(cap.weight_kg().items_with_unknown_value() == 2);
}

TEST_CASE("capacity counts a reservation's own figures; one without them holds units only") {
  Fixture f;
  testing::RackSpec spec;
  spec.unit_count = 10;
  const std::string rack = f.Rack(spec);
  // Budgeted after it was created: the database decides the budget (its rows are built).
  f.db.Exec("UPDATE racks SET power_budget_watts = 1000 WHERE id = '" + rack + "'");
  REQUIRE(f.Place(rack, f.Device(1, "half", 200, 20), v1::SIDE_FRONT, 1).ok());
  v1::ReserveUnitsRequest reserve;
  reserve.set_rack_id(rack);
  reserve.set_side(v1::SIDE_FRONT);
  reserve.set_first_unit(3);
  reserve.set_last_unit(4);
  reserve.set_power_watts(300);
  v1::Booking held;
  REQUIRE(f.logic->ReserveUnits(f.op, reserve, &held).ok());
  reserve.clear_power_watts();
  reserve.set_first_unit(6);
  reserve.set_last_unit(6);
  v1::Booking units_only;
  REQUIRE(f.logic->ReserveUnits(f.op, reserve, &units_only).ok());

  v1::GetRackCapacityRequest req;
  req.set_rack_id(rack);
  v1::RackCapacity cap;
  REQUIRE(f.logic->GetRackCapacity(f.op, req, &cap).ok());
  const v1::CapacityDimension& power = cap.power_watts();
  CHECK(power.known_used() == 500);
  CHECK(power.allowance() == 0);
  CHECK_FALSE(power.load_unknown());
  REQUIRE(power.counted_size() == 2);
  CHECK(power.counted(1).booking_id() == held.id());
  CHECK(power.counted(1).value() == 300);
  REQUIRE(power.unknown_size() == 1);
  CHECK(power.unknown(0).booking_id() == units_only.id());
  CHECK(power.unknown(0).reason() == "rack reservation: holds units only, no power figure given");
  // The weight: no budget, the device's figure, both reservations without one.
  CHECK(cap.weight_kg().known_used() == 20);
  CHECK(cap.weight_kg().unknown_size() == 2);
  // Exactly what the database counts.
  CHECK(f.db.Count("SELECT used FROM rack_budgets WHERE rack_id = '" + rack +
                   "' AND dimension = 'power'") == power.known_used());
}

TEST_CASE("capacity of a rack that stood over its budget: the allowance, and a load unknown") {
  Fixture f;
  testing::RackSpec spec;
  spec.unit_count = 10;
  const std::string rack = f.Rack(spec);
  REQUIRE(f.Place(rack, f.Device(1, "half", 800, 20), v1::SIDE_FRONT, 1).ok());
  v1::Booking unknown;
  REQUIRE(f.Place(rack, f.Device(1, "half", -1, 20), v1::SIDE_FRONT, 2, &unknown).ok());
  // The budget as it was before the database decided it, then adopted as migration 0039 adopts
  // the racks that stood: 300 W over, one device without a figure.
  f.db.Exec(
      "ALTER TABLE racks DISABLE TRIGGER racks_rebuild_budgets; "
      "UPDATE racks SET power_budget_watts = 500 WHERE id = '" +
      rack +
      "'; "
      "ALTER TABLE racks ENABLE TRIGGER racks_rebuild_budgets; "
      "SELECT dcl_rack_budgets_adopt('" +
      rack + "')");
  v1::GetRackCapacityRequest req;
  req.set_rack_id(rack);
  v1::RackCapacity cap;
  REQUIRE(f.logic->GetRackCapacity(f.op, req, &cap).ok());
  const v1::CapacityDimension& power = cap.power_watts();
  CHECK(power.budget() == 500);
  CHECK(power.known_used() == 800);
  CHECK(power.allowance() == 300);
  CHECK(power.load_unknown());
  REQUIRE(power.unknown_size() == 1);
  CHECK(power.unknown(0).booking_id() == unknown.id());
  // The database agrees: a reservation of 1 W is refused, one that adds nothing is not.
  v1::ReserveUnitsRequest reserve;
  reserve.set_rack_id(rack);
  reserve.set_side(v1::SIDE_FRONT);
  reserve.set_first_unit(5);
  reserve.set_last_unit(5);
  reserve.set_power_watts(1);
  v1::Booking held;
  CHECK_FALSE(f.logic->ReserveUnits(f.op, reserve, &held).ok());
  reserve.set_power_watts(0);
  CHECK(f.logic->ReserveUnits(f.op, reserve, &held).ok());
}

TEST_CASE("an open frame has no free rear units and refuses the rear") {
  Fixture f;
  testing::RackSpec spec;
  spec.has_rear = false;
  spec.unit_count = 12;
  const std::string rack = f.Rack(spec);
  REQUIRE(f.Place(rack, f.Device(1, "unknown"), v1::SIDE_FRONT, 1).ok());
  absl::Status rear = f.Place(rack, f.Device(1, "half"), v1::SIDE_REAR, 2);
  CHECK(DetailOf(rear).reason() == v1::SIDE_NOT_AVAILABLE);
  v1::GetRackCapacityRequest req;
  req.set_rack_id(rack);
  v1::RackCapacity cap;
  REQUIRE(f.logic->GetRackCapacity(f.op, req, &cap).ok());
  CHECK_FALSE(cap.has_rear());
  CHECK(cap.free_front_units() == 11);
  CHECK(cap.free_rear_units() == 0);
  CHECK_FALSE(cap.power_watts().budget_known());
  CHECK(cap.power_watts().items_with_unknown_value() == 1);
}

TEST_CASE("the dry run gives the readable result and writes nothing") {
  Fixture f;
  const std::string rack = f.Rack();
  REQUIRE(f.Place(rack, f.Device(1, "half"), v1::SIDE_FRONT, 10).ok());
  const int64_t before = f.Written();
  v1::PlanBookingRequest req;
  req.mutable_booking()->set_rack_id(rack);
  req.mutable_booking()->set_kind(v1::BOOKING_PLACEMENT);
  req.mutable_booking()->set_device_id(f.Device(3, "full"));
  req.mutable_booking()->set_side(v1::SIDE_FRONT);
  req.mutable_booking()->set_first_unit(9);
  v1::PlanBookingResponse out;
  REQUIRE(f.logic->PlanBooking(f.op, req, &out).ok());
  CHECK_FALSE(out.ok());
  CHECK(out.rejection().reason() == v1::UNIT_OCCUPIED);
  REQUIRE(out.rejection().colliding_slots_size() == 1);
  CHECK(out.rejection().colliding_slots(0).unit() == 10);

  req.mutable_booking()->set_first_unit(11);
  out.Clear();
  REQUIRE(f.logic->PlanBooking(f.op, req, &out).ok());
  CHECK(out.ok());
  CHECK(out.slots_size() == 6);
  CHECK(f.Written() == before);
}

TEST_CASE("bad input is INVALID_ARGUMENT or NOT_FOUND and writes nothing") {
  Fixture f;
  const std::string rack = f.Rack();
  const std::string device = f.Device(1, "full");
  const std::string other_org = testing::CreateOrg(f.db, "globex");
  const std::string other_site = testing::CreateSite(f.db, other_org, "AMS1");
  const std::string foreign_rack = testing::CreateRack(f.db, other_org, other_site);
  const std::string missing = "00000000-0000-4000-8000-000000000001";

  CHECK(f.Place(missing, device, v1::SIDE_FRONT, 1).code() == absl::StatusCode::kNotFound);
  CHECK(f.Place(foreign_rack, device, v1::SIDE_FRONT, 1).code() == absl::StatusCode::kNotFound);
  CHECK(f.Place(rack, missing, v1::SIDE_FRONT, 1).code() == absl::StatusCode::kNotFound);
  CHECK(f.Place("rack-1", device, v1::SIDE_FRONT, 1).code() == absl::StatusCode::kInvalidArgument);
  CHECK(f.Place(rack, device, v1::SIDE_UNSPECIFIED, 1).code() ==
        absl::StatusCode::kInvalidArgument);
  absl::Status out_of_bounds = f.Place(rack, device, v1::SIDE_FRONT, 43);
  CHECK(out_of_bounds.code() == absl::StatusCode::kFailedPrecondition);
  CHECK(DetailOf(out_of_bounds).reason() == v1::OUT_OF_BOUNDS);

  v1::BlockUnitsRequest block;
  block.set_rack_id(rack);
  block.set_side(v1::SIDE_FRONT);
  block.set_first_unit(10);
  block.set_last_unit(9);  // inverted
  v1::Booking booking;
  absl::Status inverted = f.logic->BlockUnits(f.op, block, &booking);
  CHECK(inverted.code() == absl::StatusCode::kInvalidArgument);
  CHECK(DetailOf(inverted).metadata().at("field") == "last_unit");

  v1::ReserveUnitsRequest reserve;
  reserve.set_rack_id(rack);
  reserve.set_side(v1::SIDE_FRONT);
  reserve.set_first_unit(1);
  reserve.set_last_unit(2);
  reserve.set_ttl_seconds(-5);
  CHECK(f.logic->ReserveUnits(f.op, reserve, &booking).code() ==
        absl::StatusCode::kInvalidArgument);
  reserve.set_ttl_seconds(0);
  reserve.set_reason(std::string(3000, 'x'));
  CHECK(f.logic->ReserveUnits(f.op, reserve, &booking).code() ==
        absl::StatusCode::kInvalidArgument);

  v1::ReleaseBookingRequest release;
  release.set_booking_id(missing);
  CHECK(f.logic->ReleaseBooking(f.op, release, &booking).code() == absl::StatusCode::kNotFound);
  release.set_booking_id("nope");
  CHECK(f.logic->ReleaseBooking(f.op, release, &booking).code() ==
        absl::StatusCode::kInvalidArgument);

  v1::GetRackRequest get;
  get.set_rack_id(foreign_rack);
  v1::Rack r;
  CHECK(f.logic->GetRack(f.op, get, &r).code() == absl::StatusCode::kNotFound);
  CHECK(f.Written() == 0);
}

TEST_CASE("another organization's booking cannot be released and answers NOT_FOUND") {
  Fixture f;
  const std::string rack = f.Rack();
  v1::Booking placed;
  REQUIRE(f.Place(rack, f.Device(1, "half"), v1::SIDE_FRONT, 3, &placed).ok());
  const std::string other_org = testing::CreateOrg(f.db, "globex");
  v1::ReleaseBookingRequest release;
  release.set_booking_id(placed.id());
  v1::Booking out;
  CHECK(f.logic->ReleaseBooking(testing::PrincipalFor(other_org, Role::kDcOperator), release, &out)
            .code() == absl::StatusCode::kNotFound);
  CHECK(f.db.Count("SELECT count(*) FROM booking_slots WHERE released_at IS NULL") == 1);
}

}  // namespace
}  // namespace dcl::occupancy
