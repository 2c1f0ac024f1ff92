// The rack's own power and weight budgets of schema/migrations/0039 against a real PostgreSQL,
// through the booking write path: the five 450 W servers into a 2,000 W rack, the weight,
// unknown figures, reservations that carry figures (and those that hold units only), promotion
// exchanging a reservation's figures for the device's, racks over budget or with unknown loads
// before the rule arrived, and figures that cannot be lowered behind the rules' back.
#include <catch2/catch.hpp>
#include <pqxx/pqxx>
#include <string>

#include "absl/strings/str_cat.h"
#include "services/common/status.h"
#include "services/occupancy/booking_store.h"
#include "tests/capacity/capacity_world.h"

namespace dcl::testing {
namespace {

using occupancy::BookingSpec;
using occupancy::DeviceFootprintSpec;
using occupancy::UnitRangeSpec;

// A rack reservation of front U`unit` for an hour, with optional figures (-1 = none).
absl::StatusOr<v1::Booking> Reserve(CapacityWorld& w, DbPool& pool, const std::string& rack,
                                    int unit, int power_watts, int weight_kg) {
  BookingSpec spec = UnitRangeSpec(v1::BOOKING_RESERVATION, rack, v1::SIDE_FRONT, false, unit,
                                   unit, "delivery", 3600);
  if (power_watts >= 0) spec.power_watts = power_watts;
  if (weight_kg >= 0) spec.weight_kg = weight_kg;
  return pool.Transact([&](pqxx::work& tx) { return occupancy::CreateBooking(tx, w.op, spec); });
}

absl::Status Release(CapacityWorld& w, DbPool& pool, const std::string& booking,
                     v1::BookingKind kind) {
  return pool
      .Transact([&](pqxx::work& tx) {
        return occupancy::ReleaseBooking(tx, w.op, booking, kind, "gone");
      })
      .status();
}

// The rack stood before 0039 with `power_budget_watts`: the budget is set with the triggers off
// (as the column was before the rule) and the rack adopted as the migration adopts it.
void BudgetBeforeTheRule(CapacityWorld& w, const std::string& rack, int power_budget_watts) {
  w.db.Exec(absl::StrCat(
      "SET LOCAL session_replication_role = replica; UPDATE racks SET power_budget_watts = ",
      power_budget_watts, " WHERE id = '", rack,
      "'; SET LOCAL session_replication_role = origin; SELECT dcl_rack_budgets_adopt('", rack,
      "')"));
}

TEST_CASE("five 450 W servers into a 2,000 W rack: four placed, the fifth POWER_BUDGET_EXCEEDED") {
  CapacityWorld w;
  const std::string rack = w.BudgetedRack(2000, 0);
  for (int unit = 1; unit <= 4; ++unit) REQUIRE(w.Place(rack, w.Device(450, 2), unit).ok());
  CHECK(w.BudgetColumn(rack, "power") == 1800);
  const std::string fifth = w.Device(450, 2);
  const absl::Status refused = w.Place(rack, fifth, 5).status();
  REQUIRE(refused.code() == absl::StatusCode::kFailedPrecondition);
  CHECK(ReasonOf(refused) == v1::POWER_BUDGET_EXCEEDED);
  CHECK(MetaOf(refused, "dimension") == "power");
  CHECK(MetaOf(refused, "rack_name") == "R1");
  CHECK(MetaOf(refused, "used_watts") == "2250");
  CHECK(MetaOf(refused, "capacity_watts") == "2000");
  CHECK(MetaOf(refused, "over_watts") == "250");
  CHECK(MetaOf(refused, "device_id") == fifth);
  CHECK(std::string(refused.message()) ==
        "rack R1: power 2250 W of its 2000 W budget (over by 250 W)");
  CHECK(w.db.Count(absl::StrCat("SELECT count(*) FROM bookings WHERE rack_id = '", rack, "'")) ==
        4);
  // 200 W still fit exactly.
  REQUIRE(w.Place(rack, w.Device(200, 1), 6).ok());
  CHECK(w.BudgetColumn(rack, "power") == 2000);
  CHECK(w.Drift() == 0);
}

TEST_CASE("weight: the rack's limit in kg, WEIGHT_BUDGET_EXCEEDED with the figures") {
  CapacityWorld w;
  const std::string rack = w.BudgetedRack(0, 100);
  for (int unit = 1; unit <= 3; ++unit) {
    REQUIRE(w.Place(rack, w.Device(-1, -1, "", 30), unit).ok());
  }
  const absl::Status refused = w.Place(rack, w.Device(-1, -1, "", 30), 4).status();
  CHECK(ReasonOf(refused) == v1::WEIGHT_BUDGET_EXCEEDED);
  CHECK(MetaOf(refused, "used_kg") == "120");
  CHECK(MetaOf(refused, "capacity_kg") == "100");
  CHECK(MetaOf(refused, "over_kg") == "20");
  CHECK(w.BudgetColumn(rack, "weight") == 90);
  CHECK(w.BudgetColumn(rack, "power") == -1);  // no power budget, no row: power not needed
  CHECK(w.Drift() == 0);
}

TEST_CASE("a budgeted rack refuses a device without the figure it needs, naming the field") {
  CapacityWorld w;
  const std::string rack = w.BudgetedRack(5000, 500);
  const absl::Status no_power = w.Place(rack, w.Device(-1, -1, "", 20), 1).status();
  CHECK(ReasonOf(no_power) == v1::POWER_UNKNOWN);
  CHECK(MetaOf(no_power, "missing") == "power_draw_watts");
  const absl::Status no_weight = w.Place(rack, w.Device(300, 1, "", -1), 1).status();
  CHECK(ReasonOf(no_weight) == v1::WEIGHT_UNKNOWN);
  CHECK(MetaOf(no_weight, "missing") == "weight_kg");
  CHECK(w.BudgetColumn(rack, "power") == 0);
  CHECK(w.BudgetColumn(rack, "weight") == 0);
}

TEST_CASE("reservations count the figures they carry; without figures they hold units only") {
  CapacityWorld w;
  const std::string rack = w.BudgetedRack(2000, 0);
  auto pool = w.db.MakePool(1);
  auto with_figures = Reserve(w, *pool, rack, 1, 900, -1);
  REQUIRE(with_figures.ok());
  CHECK(w.BudgetColumn(rack, "power") == 900);
  auto units_only = Reserve(w, *pool, rack, 2, -1, -1);
  REQUIRE(units_only.ok());
  CHECK(w.BudgetColumn(rack, "power") == 900);

  const absl::Status too_much = Reserve(w, *pool, rack, 3, 1101, -1).status();
  CHECK(ReasonOf(too_much) == v1::POWER_BUDGET_EXCEEDED);
  CHECK(MetaOf(too_much, "used_watts") == "2001");
  CHECK(MetaOf(too_much, "device_id").empty());
  CHECK(std::string(too_much.message()) ==
        "rack R1: power 2001 W of its 2000 W budget (over by 1 W): the reservation does not fit");
  CHECK(w.db.Count(absl::StrCat("SELECT count(*) FROM bookings WHERE rack_id = '", rack,
                                "' AND released_at IS NULL")) == 2);

  SECTION("promotion exchanges the reserved figure for the device's") {
    REQUIRE(pool->Transact([&](pqxx::work& tx) {
                  return occupancy::PromoteReservation(
                      tx, w.op, with_figures->id(),
                      DeviceFootprintSpec(v1::BOOKING_PLACEMENT, rack, w.Device(450, 2),
                                          v1::SIDE_FRONT, 1, ""));
                })
                .ok());
    CHECK(w.BudgetColumn(rack, "power") == 450);
    CHECK(w.Drift() == 0);
  }
  SECTION("a device needing more than remains is refused at promotion, the hold intact") {
    // 900 reserved + a 1,200 W device promoted out of the units-only reservation: 2,100 W.
    const absl::Status refused =
        pool->Transact([&](pqxx::work& tx) {
              return occupancy::PromoteReservation(
                  tx, w.op, units_only->id(),
                  DeviceFootprintSpec(v1::BOOKING_PLACEMENT, rack, w.Device(1200, 2),
                                      v1::SIDE_FRONT, 2, ""));
            })
            .status();
    CHECK(ReasonOf(refused) == v1::POWER_BUDGET_EXCEEDED);
    CHECK(MetaOf(refused, "used_watts") == "2100");
    CHECK(w.db.Count(absl::StrCat("SELECT count(*) FROM bookings WHERE id = '", units_only->id(),
                                  "' AND kind = 'reservation' AND released_at IS NULL")) == 1);
  }
  SECTION("a release gives the reserved figure back") {
    REQUIRE(Release(w, *pool, with_figures->id(), v1::BOOKING_RESERVATION).ok());
    CHECK(w.BudgetColumn(rack, "power") == 0);
    CHECK(w.Drift() == 0);
  }
}

TEST_CASE("a rack over its budget before the rule: releases pass, additions wait until under") {
  CapacityWorld w;
  const std::string rack = w.Rack();
  std::vector<std::string> placed;
  for (int unit = 1; unit <= 5; ++unit) {
    auto booking = w.Place(rack, w.Device(450, 2), unit);
    REQUIRE(booking.ok());
    placed.push_back(booking->id());
  }
  BudgetBeforeTheRule(w, rack, 2000);
  CHECK(w.BudgetColumn(rack, "power") == 2250);
  CHECK(w.BudgetColumn(rack, "power", "allowance") == 250);
  CHECK(w.Drift() == 0);

  const absl::Status refused = w.Place(rack, w.Device(10, 1), 10).status();
  CHECK(ReasonOf(refused) == v1::POWER_BUDGET_EXCEEDED);
  CHECK(MetaOf(refused, "allowance_watts") == "250");
  CHECK(MetaOf(refused, "used_watts") == "2260");

  auto pool = w.db.MakePool(1);
  REQUIRE(Release(w, *pool, placed[0], v1::BOOKING_PLACEMENT).ok());
  CHECK(w.BudgetColumn(rack, "power") == 1800);
  CHECK(w.BudgetColumn(rack, "power", "allowance") == 0);  // under: held to the budget exactly
  REQUIRE(w.Place(rack, w.Device(200, 1), 10).ok());
  CHECK(ReasonOf(w.Place(rack, w.Device(1, 1), 11).status()) == v1::POWER_BUDGET_EXCEEDED);
  CHECK(w.Drift() == 0);
}

TEST_CASE("a rack with devices of unknown power before the rule takes nothing until they are set") {
  CapacityWorld w;
  const std::string rack = w.Rack();
  REQUIRE(w.Place(rack, w.Device(450, 2), 1).ok());
  const std::string unknown = w.Device(-1, 2);
  REQUIRE(w.Place(rack, unknown, 2).ok());
  BudgetBeforeTheRule(w, rack, 2000);
  CHECK(w.BudgetColumn(rack, "power") == 450);
  CHECK(w.BudgetColumn(rack, "power", "unknown") == 1);

  const absl::Status refused = w.Place(rack, w.Device(100, 1), 10).status();
  CHECK(ReasonOf(refused) == v1::POWER_UNKNOWN);
  CHECK(MetaOf(refused, "unknown_devices") == "1");
  CHECK(MetaOf(refused, "device_ids") == unknown);
  CHECK(MetaOf(refused, "missing") == "power_draw_watts");

  // Setting the figure records what stands there, even over the budget, and lifts the block.
  w.db.Exec(absl::StrCat("UPDATE devices SET power_draw_watts = 1700 WHERE id = '", unknown, "'"));
  CHECK(w.BudgetColumn(rack, "power") == 2150);
  CHECK(w.BudgetColumn(rack, "power", "unknown") == 0);
  CHECK(w.BudgetColumn(rack, "power", "allowance") == 150);
  CHECK(ReasonOf(w.Place(rack, w.Device(1, 1), 10).status()) == v1::POWER_BUDGET_EXCEEDED);
  CHECK(w.Drift() == 0);
}

TEST_CASE("an active booking's figures cannot be lowered by any writer; a budget not below load") {
  CapacityWorld w;
  const std::string rack = w.BudgetedRack(2000, 0);
  auto placed = w.Place(rack, w.Device(450, 2), 1);
  REQUIRE(placed.ok());
  CHECK_THROWS_WITH(w.db.Exec(absl::StrCat("UPDATE bookings SET power_watts = 0 WHERE id = '",
                                           placed->id(), "'")),
                    Catch::Contains("bookings_figures_fixed") ||
                        Catch::Contains("fixed when it is made"));
  CHECK(w.BudgetColumn(rack, "power") == 450);
  CHECK_THROWS_AS(w.db.Exec(absl::StrCat("UPDATE racks SET power_budget_watts = 400 WHERE id = '",
                                         rack, "'")),
                  pqxx::check_violation);
  w.db.Exec(absl::StrCat("UPDATE racks SET power_budget_watts = 450 WHERE id = '", rack, "'"));
  CHECK(w.BudgetColumn(rack, "power") == 450);
  CHECK(ReasonOf(w.Place(rack, w.Device(1, 1), 2).status()) == v1::POWER_BUDGET_EXCEEDED);
  CHECK(w.Drift() == 0);
}

}  // namespace
}  // namespace dcl::testing
