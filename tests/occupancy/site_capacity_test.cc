// The site capacity calculator (services/occupancy/site_capacity.h) over plain structs: what is
// free, what is stranded and why, unknown never counted as free, and the forecast's arithmetic
// at a positive, zero and negative rate.
#include "services/occupancy/site_capacity.h"

#include <catch2/catch.hpp>

namespace dcl::occupancy {
namespace {

constexpr int kUnits = static_cast<int>(SiteDimension::kUnits);
constexpr int kPower = static_cast<int>(SiteDimension::kPower);
constexpr int kCooling = static_cast<int>(SiteDimension::kCooling);
constexpr int kWeight = static_cast<int>(SiteDimension::kWeight);

// A 42U rack with a rear (84 slots), `taken` of them taken.
RackFigures Rack(int64_t taken) {
  RackFigures r;
  r.rack_id = "r";
  r.slots = 84;
  r.taken_slots = taken;
  return r;
}

const TypicalDevice k450W{450, 20};

TEST_CASE("no racks: every dimension is there, all zero, and runs out never") {
  const auto site = ComputeSiteCapacity({}, k450W, 30);
  for (int i = 0; i < kSiteDimensionCount; ++i) {
    CHECK(site[i].dimension == static_cast<SiteDimension>(i));
    CHECK(site[i].racks == 0);
    CHECK(site[i].total == 0);
    CHECK(site[i].free == 0);
    CHECK(site[i].stranded == 0);
    CHECK_FALSE(site[i].days_to_exhaustion.has_value());
  }
  CHECK(std::string(SiteDimensionName(SiteDimension::kCooling)) == "cooling");
}

TEST_CASE("a rack that takes a typical device in every dimension strands nothing") {
  RackFigures r = Rack(4);
  r.power = BudgetFigures{5000, 4100, 0};
  const auto site = ComputeSiteCapacity({r}, k450W, 30);
  CHECK(site[kUnits].racks == 1);
  CHECK(site[kUnits].total == 84);
  CHECK(site[kUnits].used == 4);
  CHECK(site[kUnits].free == 80);
  CHECK(site[kUnits].stranded == 0);
  CHECK(site[kPower].racks == 1);
  CHECK(site[kPower].total == 5000);
  CHECK(site[kPower].used == 4100);
  CHECK(site[kPower].free == 900);
  CHECK(site[kPower].stranded == 0);
  CHECK(site[kCooling].racks == 0);  // no cooling budget: not counted, strands nothing
  CHECK(site[kWeight].racks == 0);
}

TEST_CASE("power short of a typical device strands the rack's units and cooling, not itself") {
  RackFigures r = Rack(10);
  r.power = BudgetFigures{2000, 1700, 0};    // 300 W free < 450 W
  r.cooling = BudgetFigures{8000, 1700, 0};  // 6300 W of heat free
  const auto site = ComputeSiteCapacity({r}, k450W, 30);
  CHECK(site[kUnits].stranded == 74);
  CHECK(site[kCooling].free == 6300);
  CHECK(site[kCooling].stranded == 6300);
  CHECK(site[kPower].free == 300);
  CHECK(site[kPower].stranded == 0);

  SECTION("a typical device of 300 W fits: nothing is stranded") {
    const auto small = ComputeSiteCapacity({r}, TypicalDevice{300, 20}, 30);
    CHECK(small[kUnits].stranded == 0);
    CHECK(small[kCooling].stranded == 0);
  }
}

TEST_CASE("a full rack strands its free power, cooling and weight (the reverse)") {
  RackFigures full = Rack(84);
  full.power = BudgetFigures{5000, 3000, 0};
  full.weight = BudgetFigures{800, 500, 0};
  RackFigures open = Rack(0);
  open.power = BudgetFigures{5000, 0, 0};
  const auto site = ComputeSiteCapacity({full, open}, k450W, 30);
  CHECK(site[kUnits].free == 84);
  CHECK(site[kUnits].stranded == 0);
  CHECK(site[kPower].free == 2000 + 5000);
  CHECK(site[kPower].stranded == 2000);
  CHECK(site[kWeight].free == 300);
  CHECK(site[kWeight].stranded == 300);
}

TEST_CASE("a typical figure of 0 still takes 1: a dimension with nothing free strands the rest") {
  RackFigures r = Rack(0);
  r.weight = BudgetFigures{500, 500, 0};
  CHECK(ComputeSiteCapacity({r}, TypicalDevice{0, 0}, 30)[kUnits].stranded == 84);
  r.weight = BudgetFigures{500, 499, 0};
  CHECK(ComputeSiteCapacity({r}, TypicalDevice{0, 0}, 30)[kUnits].stranded == 0);
}

TEST_CASE("unknown is never free: reported apart, and it strands the rack's other dimensions") {
  RackFigures unknown = Rack(2);
  unknown.power = BudgetFigures{4000, 1000, 1};  // a device without its figure
  RackFigures known = Rack(2);
  known.power = BudgetFigures{4000, 1000, 0};
  const auto site = ComputeSiteCapacity({unknown, known}, k450W, 30);
  CHECK(site[kPower].racks == 2);
  CHECK(site[kPower].total == 8000);
  CHECK(site[kPower].used == 2000);
  CHECK(site[kPower].free == 3000);  // the known rack's only
  CHECK(site[kPower].unknown_racks == 1);
  CHECK(site[kPower].unknown_free == 3000);
  CHECK(site[kPower].stranded == 0);
  CHECK(site[kUnits].free == 164);
  CHECK(site[kUnits].stranded == 82);  // the database refuses every addition there
}

TEST_CASE("a rack over its budget (an allowance) has nothing free, never less than nothing") {
  RackFigures r = Rack(0);
  r.power = BudgetFigures{2000, 2250, 0};
  const auto site = ComputeSiteCapacity({r}, k450W, 30);
  CHECK(site[kPower].free == 0);
  CHECK(site[kPower].used == 2250);
  CHECK(site[kUnits].stranded == 84);
}

TEST_CASE("the forecast: net rate over the window, days until free reaches 0") {
  RackFigures r = Rack(10);
  r.power = BudgetFigures{10000, 1000, 0};  // 9000 W free
  r.flow[kUnits] = {12, 2};                   // +10 slots in 10 days: 1 a day, 74 free
  r.flow[kPower] = {4000, 1000};              // +3000 W in 10 days: 300 W a day
  r.flow[kCooling] = {500, 500};              // no cooling budget: not counted
  const auto site = ComputeSiteCapacity({r}, k450W, 10);
  CHECK(site[kUnits].booked_in_window == 12);
  CHECK(site[kUnits].released_in_window == 2);
  CHECK(site[kUnits].net_per_day == Approx(1.0));
  REQUIRE(site[kUnits].days_to_exhaustion.has_value());
  CHECK(*site[kUnits].days_to_exhaustion == Approx(74.0));
  CHECK(site[kPower].net_per_day == Approx(300.0));
  REQUIRE(site[kPower].days_to_exhaustion.has_value());
  CHECK(*site[kPower].days_to_exhaustion == Approx(30.0));
  CHECK(site[kCooling].booked_in_window == 0);
  CHECK_FALSE(site[kCooling].days_to_exhaustion.has_value());

  SECTION("as much released as booked: the rate is 0 and free never runs out") {
    r.flow[kPower] = {1000, 1000};
    const auto flat = ComputeSiteCapacity({r}, k450W, 10);
    CHECK(flat[kPower].net_per_day == 0);
    CHECK_FALSE(flat[kPower].days_to_exhaustion.has_value());
  }
  SECTION("more released than booked: a negative rate, never") {
    r.flow[kPower] = {0, 3000};
    const auto shrinking = ComputeSiteCapacity({r}, k450W, 10);
    CHECK(shrinking[kPower].net_per_day == Approx(-300.0));
    CHECK_FALSE(shrinking[kPower].days_to_exhaustion.has_value());
  }
}

TEST_CASE("days to exhaustion: nothing free at a positive rate is 0; a non-positive rate is none") {
  CHECK(DaysToExhaustion(0, 5.0) == 0.0);
  CHECK(DaysToExhaustion(100, 4.0) == 25.0);
  CHECK_FALSE(DaysToExhaustion(100, 0.0).has_value());
  CHECK_FALSE(DaysToExhaustion(100, -1.0).has_value());
}

TEST_CASE("the typical figure is the lower median") {
  CHECK(LowerMedian({}) == 0);
  CHECK(LowerMedian({450}) == 450);
  CHECK(LowerMedian({900, 100, 450}) == 450);
  CHECK(LowerMedian({700, 100, 900, 300}) == 300);
}

}  // namespace
}  // namespace dcl::occupancy
