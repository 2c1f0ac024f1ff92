// GetSiteCapacity on a seeded site against PostgreSQL (issue 40, item 6): every figure exact —
// used, free and stranded per dimension from the budget rows and slots, the typical device the
// placed devices' median, the forecast from the bookings made and released in the window (one
// made before it is left out), unknown never free; and the sweeper's gauges carry the same.
#include <catch2/catch.hpp>
#include <limits>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "services/common/metrics.h"
#include "services/common/status.h"
#include "services/occupancy/occupancy_logic.h"
#include "sweeper/sweeper.h"
#include "tests/capacity/capacity_world.h"

namespace dcl::testing {
namespace {

const v1::SiteCapacityDimension& Dim(const v1::SiteCapacity& c, const std::string& name) {
  for (const v1::SiteCapacityDimension& d : c.dimensions()) {
    if (d.dimension() == name) return d;
  }
  FAIL("no dimension " << name);
  return c.dimensions(0);
}

// The value of one series in the process's metrics, or -1 when it is not there.
double GaugeValue(const std::string& family, const std::string& site, const std::string& dim) {
  const std::string prefix =
      absl::StrCat(family, "{site_id=\"", site, "\",dimension=\"", dim, "\"} ");
  const std::string text = MetricsRegistry::Default().Render();
  const size_t at = text.find(prefix);
  if (at == std::string::npos) return -1;
  const std::string value = text.substr(at + prefix.size(), text.find('\n', at) - at - prefix.size());
  return value == "+Inf" ? std::numeric_limits<double>::infinity() : std::stod(value);
}

TEST_CASE("GetSiteCapacity: used, free, stranded and the forecast of a seeded site, exactly") {
  CapacityWorld w;
  // A: 2,000 W and 500 kg; four 450 W / 20 kg servers leave 200 W, less than a typical one.
  const std::string a = w.BudgetedRack(2000, 500);
  std::string first_in_a;
  for (int unit = 1; unit <= 4; ++unit) {
    absl::StatusOr<v1::Booking> placed = w.Place(a, w.Device(450, 2, "front-to-rear", 20), unit);
    REQUIRE(placed.ok());
    if (unit == 1) first_in_a = placed->id();
  }
  // Made 40 days ago: outside the 30-day window (still counted as used).
  w.db.Exec(absl::StrCat("UPDATE bookings SET created_at = now() - interval '40 days' "
                         "WHERE id = '", first_in_a, "'"));
  // B: 5,000 W, no weight budget; one server placed, another placed and released.
  const std::string b = w.BudgetedRack(5000, 0);
  REQUIRE(w.Place(b, w.Device(450, 2, "front-to-rear", 20), 1).ok());
  absl::StatusOr<v1::Booking> gone = w.Place(b, w.Device(450, 2, "front-to-rear", 20), 2);
  REQUIRE(gone.ok());
  std::unique_ptr<DbPool> pool = w.db.MakePool(2);
  occupancy::OccupancyLogic logic(*pool);
  v1::ReleaseBookingRequest release;
  release.set_booking_id(gone->id());
  release.set_reason("decommissioned");
  v1::Booking released;
  REQUIRE(logic.ReleaseBooking(w.op, release, &released).ok());
  // C: no budget at all: units only.
  const std::string c = w.Rack();
  REQUIRE(w.Place(c, w.Device(450, 2, "front-to-rear", 20), 1).ok());

  v1::GetSiteCapacityRequest req;
  req.set_site_id(w.site);
  v1::SiteCapacity cap;
  REQUIRE(logic.GetSiteCapacity(w.op, req, &cap).ok());
  CHECK(cap.window_days() == 30);
  CHECK(cap.rack_count() == 3);
  CHECK(cap.typical_power_watts() == 450);  // the placed devices' median
  CHECK(cap.typical_weight_kg() == 20);
  REQUIRE(cap.dimensions_size() == 4);
  CHECK(cap.dimensions(0).dimension() == "units");
  CHECK(cap.dimensions(3).dimension() == "weight");

  const v1::SiteCapacityDimension& units = Dim(cap, "units");
  CHECK(units.racks() == 3);
  CHECK(units.total() == 3 * 84);
  CHECK(units.used() == 6);
  CHECK(units.free() == 246);
  CHECK(units.stranded() == 80);  // A's free slots: 200 W left < 450 W
  CHECK(units.booked_in_window() == 6);  // 3 in A (one is older), 2 in B, 1 in C
  CHECK(units.released_in_window() == 1);
  CHECK(units.net_per_day() == Approx(5.0 / 30));
  REQUIRE(units.has_days_to_exhaustion());
  CHECK(units.days_to_exhaustion() == Approx(246 / (5.0 / 30)));

  const v1::SiteCapacityDimension& power = Dim(cap, "power");
  CHECK(power.racks() == 2);
  CHECK(power.total() == 7000);
  CHECK(power.used() == 2250);
  CHECK(power.free() == 200 + 4550);
  CHECK(power.stranded() == 0);
  CHECK(power.unknown_racks() == 0);
  CHECK(power.booked_in_window() == 3 * 450 + 2 * 450);
  CHECK(power.released_in_window() == 450);
  CHECK(power.net_per_day() == Approx(60.0));
  REQUIRE(power.has_days_to_exhaustion());
  CHECK(power.days_to_exhaustion() == Approx(4750 / 60.0));  // 79.2 days: the alert's side

  const v1::SiteCapacityDimension& weight = Dim(cap, "weight");
  CHECK(weight.racks() == 1);
  CHECK(weight.total() == 500);
  CHECK(weight.used() == 80);
  CHECK(weight.free() == 420);
  CHECK(weight.stranded() == 420);  // A's power strands it
  CHECK(weight.net_per_day() == Approx(60.0 / 30));
  CHECK(weight.days_to_exhaustion() == Approx(210.0));

  const v1::SiteCapacityDimension& cooling = Dim(cap, "cooling");
  CHECK(cooling.racks() == 0);
  CHECK(cooling.total() == 0);
  CHECK_FALSE(cooling.has_days_to_exhaustion());

  SECTION("a typical device the caller names: 150 W fits in A, nothing is stranded") {
    req.set_typical_power_watts(150);
    v1::SiteCapacity small;
    REQUIRE(logic.GetSiteCapacity(w.op, req, &small).ok());
    CHECK(small.typical_power_watts() == 150);
    CHECK(Dim(small, "units").stranded() == 0);
    CHECK(Dim(small, "weight").stranded() == 0);
  }

  SECTION("a window of 10 days leaves out what is older") {
    w.db.Exec(absl::StrCat("UPDATE bookings SET created_at = now() - interval '20 days' "
                           "WHERE rack_id = '", c, "'"));
    req.set_window_days(10);
    v1::SiteCapacity recent;
    REQUIRE(logic.GetSiteCapacity(w.op, req, &recent).ok());
    CHECK(recent.window_days() == 10);
    CHECK(Dim(recent, "units").booked_in_window() == 5);
    CHECK(Dim(recent, "units").net_per_day() == Approx(0.4));
  }

  SECTION("a rack whose power load is not known: its free power is reported apart, never free") {
    w.db.Exec(absl::StrCat("UPDATE rack_budgets SET unknown = 1 WHERE rack_id = '", a,
                           "' AND dimension = 'power'"));
    v1::SiteCapacity unknown;
    REQUIRE(logic.GetSiteCapacity(w.op, req, &unknown).ok());
    CHECK(Dim(unknown, "power").free() == 4550);
    CHECK(Dim(unknown, "power").unknown_racks() == 1);
    CHECK(Dim(unknown, "power").unknown_free() == 200);
    CHECK(Dim(unknown, "units").stranded() == 80);
    CHECK(Dim(unknown, "weight").stranded() == 420);
  }

  SECTION("another organization's site, or none, is NOT_FOUND") {
    req.set_site_id("00000000-0000-4000-8000-000000000001");
    v1::SiteCapacity none;
    const absl::Status status = logic.GetSiteCapacity(w.op, req, &none);
    CHECK(status.code() == absl::StatusCode::kNotFound);
  }

  SECTION("the sweeper's gauges carry the same figures") {
    SweeperOptions options;
    options.name = "capacity-test";
    Sweeper sweeper(*pool, options);
    REQUIRE(sweeper.RefreshCapacityGauges().ok());
    CHECK(GaugeValue("dcl_site_capacity_free", w.site, "power") == 4750);
    CHECK(GaugeValue("dcl_site_capacity_stranded", w.site, "units") == 80);
    CHECK(GaugeValue("dcl_site_capacity_days_to_exhaustion", w.site, "power") ==
          Approx(4750 / 60.0));
    CHECK(GaugeValue("dcl_site_capacity_days_to_exhaustion", w.site, "cooling") ==
          std::numeric_limits<double>::infinity());
  }
}

}  // namespace
}  // namespace dcl::testing
