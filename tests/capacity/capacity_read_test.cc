// The reads answer what the database decides (issue 40, item 5): GetRackCapacity per feed with
// the N-1 view, heat against the cooling budget and the rack's airflow, read from the budget rows
// the bookings changed; and PlanBooking's answer for one more device equals the write's, reason
// for reason, over 1,000 generated racks with feeds, cooling, airflow and power budgets, without
// writing anything or keeping a lock.
#include <catch2/catch.hpp>
#include <map>
#include <memory>
#include <optional>
#include <pqxx/pqxx>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "services/common/status.h"
#include "services/occupancy/booking_store.h"
#include "services/occupancy/occupancy_logic.h"
#include "tests/capacity/capacity_world.h"

namespace dcl::testing {
namespace {

using occupancy::BookingSpec;
using occupancy::DeviceFootprintSpec;

const v1::FeedCapacity* FeedNamed(const v1::RackCapacity& c, const std::string& name) {
  for (const v1::FeedCapacity& f : c.feeds()) {
    if (f.name() == name) return &f;
  }
  return nullptr;
}

int64_t CarriedIfLost(const v1::FeedCapacity& f, const std::string& lost) {
  for (const v1::FeedLoss& loss : f.if_lost()) {
    if (loss.lost_feed() == lost) return loss.carried_watts();
  }
  return -1;
}

BookingSpec Placement(const std::string& rack, const std::string& device, int unit) {
  return DeviceFootprintSpec(v1::BOOKING_PLACEMENT, rack, device, v1::SIDE_FRONT, unit, "read");
}

// PlanBooking for a placement, in a transaction of its own that stays open until `then` ran.
template <typename Then>
occupancy::PlanOutcome PlanThen(TestDatabase& db, const Principal& op, const BookingSpec& spec,
                                Then then) {
  std::unique_ptr<pqxx::connection> conn = db.Connect();
  pqxx::work tx(*conn);
  absl::StatusOr<occupancy::PlanOutcome> plan = occupancy::PlanBooking(tx, op, spec);
  REQUIRE(plan.ok());
  then();
  tx.commit();
  return *plan;
}

TEST_CASE("GetRackCapacity reads each feed with its N-1 view, the heat and the airflow") {
  CapacityWorld w;
  const std::string rack = w.Rack(5000, "front-to-rear");
  w.Feed(rack, "A", 230, 16);  // 2944 W available each
  w.Feed(rack, "B", 230, 16, "single-phase", 80);
  // A dual-PSU 1000 W server: 500 W on each feed, all of it on the other with one lost. Then a
  // single-PSU 400 W server: dcl chooses A (equal headroom, by name); it goes dark with A and
  // adds nothing to B when A is lost.
  REQUIRE(w.Place(rack, w.Device(1000, 2), 1).ok());
  absl::StatusOr<v1::Booking> single = w.Place(rack, w.Device(400, 1), 2);
  REQUIRE(single.ok());
  REQUIRE(single->power_feeds_size() == 1);
  CHECK(single->power_feeds(0) == "A");

  std::unique_ptr<DbPool> pool = w.db.MakePool(2);
  occupancy::OccupancyLogic logic(*pool);
  v1::GetRackCapacityRequest req;
  req.set_rack_id(rack);
  v1::RackCapacity c;
  REQUIRE(logic.GetRackCapacity(w.op, req, &c).ok());

  REQUIRE(c.feeds_size() == 2);
  const v1::FeedCapacity* a = FeedNamed(c, "A");
  const v1::FeedCapacity* b = FeedNamed(c, "B");
  REQUIRE(a != nullptr);
  REQUIRE(b != nullptr);
  CHECK(a->voltage() == 230);
  CHECK(a->amperage() == 16);
  CHECK(a->phase() == "single-phase");
  CHECK(a->max_utilization_percent() == 80);
  CHECK(a->available_watts() == 2944);
  CHECK(a->used_watts() == 900);
  CHECK(b->used_watts() == 500);
  REQUIRE(a->if_lost_size() == 1);
  CHECK(CarriedIfLost(*a, "B") == 1400);  // the dual-PSU server whole, and the single-PSU one
  CHECK(CarriedIfLost(*b, "A") == 1000);  // the dual-PSU server whole only
  CHECK(a->headroom_watts() == 2944 - 1400);
  CHECK(b->headroom_watts() == 2944 - 1000);
  // The figures are the budget rows' own.
  CHECK(a->used_watts() == w.FeedUsed(rack, "A"));
  CHECK(CarriedIfLost(*a, "B") == w.LostUsed(rack, "B", "A"));

  CHECK(c.cooling_watts().budget_known());
  CHECK(c.cooling_watts().budget() == 5000);
  CHECK(c.cooling_watts().known_used() == 1400);
  CHECK(c.cooling_watts().known_used() == w.CoolingUsed(rack));
  CHECK(c.cooling_watts().counted_size() == 2);
  CHECK(c.airflow() == "front-to-rear");
  CHECK_FALSE(c.power_watts().budget_known());  // no power budget of the rack's own
  CHECK(c.power_watts().known_used() == 1400);

  SECTION("a rack without feeds, cooling and airflow says so") {
    const std::string bare = w.Rack();
    req.set_rack_id(bare);
    v1::RackCapacity none;
    REQUIRE(logic.GetRackCapacity(w.op, req, &none).ok());
    CHECK(none.feeds_size() == 0);
    CHECK_FALSE(none.cooling_watts().budget_known());
    CHECK(none.airflow().empty());
  }
}

TEST_CASE("PlanBooking refuses per dimension as the write does, and writes and locks nothing") {
  CapacityWorld w;
  const std::string rack = w.Rack(0, "front-to-rear");
  w.Feed(rack, "A", 230, 16);
  w.Feed(rack, "B", 230, 16);
  REQUIRE(w.Place(rack, w.Device(1000, 2), 1).ok());
  REQUIRE(w.Place(rack, w.Device(400, 1), 2).ok());  // on A: B lost leaves A carrying 1400 W
  const std::string cool = w.Rack(1000);

  struct Case {
    const char* what;
    std::string rack;
    std::string device;
    v1::Reason reason;
  };
  const std::vector<Case> cases = {
      {"fits", rack, w.Device(1100, 2), v1::REASON_UNSPECIFIED},
      {"N-1: A would carry 3000 W with B lost", rack, w.Device(1600, 2), v1::FEED_REDUNDANCY_LOST},
      {"airflow against the rack's", rack, w.Device(100, 2, "rear-to-front"), v1::AIRFLOW_MISMATCH},
      {"no airflow known", rack, w.Device(100, 2, "mixed"), v1::AIRFLOW_UNKNOWN},
      {"no power figure", rack, w.Device(-1, 2), v1::POWER_UNKNOWN},
      {"no power port count", rack, w.Device(100, -1), v1::POWER_PORTS_UNKNOWN},
      {"heat over the cooling budget", cool, w.Device(1200, 1), v1::COOLING_BUDGET_EXCEEDED},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    INFO(c.what);
    const int unit = 10 + static_cast<int>(i);  // what fits stays placed
    const BookingSpec spec = Placement(c.rack, c.device, unit);
    const int64_t bookings_before = w.db.Count("SELECT count(*) FROM bookings");
    const int64_t carried_before = w.LostUsed(rack, "B", "A");
    // While the plan's transaction is still open, another connection takes every budget row of
    // the rack without waiting: the trial write's row locks went with its savepoint.
    const occupancy::PlanOutcome plan = PlanThen(w.db, w.op, spec, [&] {
      std::unique_ptr<pqxx::connection> other = w.db.Connect();
      pqxx::work tx(*other);
      CHECK_NOTHROW(tx.exec(absl::StrCat("SELECT 1 FROM rack_budgets WHERE rack_id = '", c.rack,
                                         "' FOR UPDATE NOWAIT")));
      tx.abort();
    });
    CHECK(ReasonOf(plan.rejection) == c.reason);
    CHECK(plan.rejection.ok() == (c.reason == v1::REASON_UNSPECIFIED));
    CHECK(w.db.Count("SELECT count(*) FROM bookings") == bookings_before);
    CHECK(w.LostUsed(rack, "B", "A") == carried_before);
    CHECK(w.Drift() == 0);
    // The write, asked the same, answers the same.
    const absl::Status written = w.Place(c.rack, c.device, unit).status();
    CHECK(ReasonOf(written) == c.reason);
    CHECK(std::string(written.message()) == std::string(plan.rejection.message()));
  }
}

// Figures for the generated racks: a value in [lo, hi], or unknown (-1) `unknown_percent` times.
int Figure(std::mt19937& rng, int lo, int hi, int unknown_percent) {
  if (std::uniform_int_distribution<int>(1, 100)(rng) <= unknown_percent) return -1;
  return std::uniform_int_distribution<int>(lo, hi)(rng);
}

TEST_CASE("over 1,000 generated racks PlanBooking's answer is the write's, reason for reason") {
  CapacityWorld w;
  std::mt19937 rng(4020261206);
  auto pick = [&](std::initializer_list<const char*> options) {
    std::vector<const char*> v(options);
    return std::string(v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)]);
  };
  auto chance = [&](int percent) {
    return std::uniform_int_distribution<int>(1, 100)(rng) <= percent;
  };
  auto sql = [](int v) { return v < 0 ? std::string("NULL") : std::to_string(v); };
  auto text = [](const std::string& v) { return v.empty() ? "NULL" : absl::StrCat("'", v, "'"); };
  // One connection for every fixture (CapacityWorld's helpers connect per statement).
  std::unique_ptr<pqxx::connection> conn = w.db.Connect();
  auto device = [&](pqxx::work& tx) {
    return tx
        .exec1(absl::StrCat(
            "INSERT INTO devices (org_id, site_id, vendor, model, height_units, depth_class, "
            "power_draw_watts, power_port_count, airflow) VALUES ('",
            w.org, "', '", w.site, "', 'Dell', 'R650', 1, 'half', ", sql(Figure(rng, 0, 2500, 8)),
            ", ", sql(Figure(rng, 0, 3, 8)), ", ",
            text(pick({"front-to-rear", "front-to-rear", "front-to-rear", "rear-to-front",
                       "left-to-right", "mixed", ""})),
            ") RETURNING id::text"))[0]
        .as<std::string>();
  };
  std::map<std::string, int> seen;
  for (int i = 0; i < 1000; ++i) {
    // The rack, its budgets and feeds committed first: a feed's rows are built at commit.
    pqxx::work setup(*conn);
    const std::string rack =
        setup
            .exec1(absl::StrCat(
                "INSERT INTO racks (org_id, site_id, name, first_unit, unit_count, numbering, "
                "has_rear, cooling_budget_watts, airflow, power_budget_watts) VALUES ('",
                w.org, "', '", w.site, "', 'G", i, "', 1, 42, 'ascending', true, ",
                sql(chance(40) ? Figure(rng, 500, 8000, 0) : -1), ", ",
                text(chance(35) ? pick({"front-to-rear", "rear-to-front"}) : ""), ", ",
                sql(chance(25) ? Figure(rng, 500, 8000, 0) : -1), ") RETURNING id::text"))[0]
            .as<std::string>();
    const int feeds = std::uniform_int_distribution<int>(0, 3)(rng);
    for (int f = 0; f < feeds; ++f) {
      setup.exec0(absl::StrCat(
          "INSERT INTO power_feeds (rack_id, name, voltage, amperage, phase, max_utilization) "
          "VALUES ('",
          rack, "', '", std::string(1, static_cast<char>('A' + f)), "', ", chance(50) ? 230 : 208,
          ", ", Figure(rng, 4, 32, 0), ", '", chance(30) ? "three-phase" : "single-phase", "', ",
          Figure(rng, 50, 100, 0), ")"));
    }
    const int standing = std::uniform_int_distribution<int>(0, 6)(rng);
    std::vector<std::string> devices;
    for (int k = 0; k <= standing; ++k) devices.push_back(device(setup));
    setup.commit();
    // What stands there already: whatever the rules let in.
    pqxx::work place(*conn);
    for (int unit = 1; unit <= standing; ++unit) {
      (void)occupancy::CreateBooking(place, w.op, Placement(rack, devices[unit - 1], unit));
    }
    place.commit();

    const BookingSpec spec = Placement(rack, devices.back(), 20);
    pqxx::work tx(*conn);
    absl::StatusOr<occupancy::PlanOutcome> plan = occupancy::PlanBooking(tx, w.op, spec);
    REQUIRE(plan.ok());
    absl::StatusOr<v1::Booking> written = occupancy::CreateBooking(tx, w.op, spec);
    tx.abort();
    INFO("rack " << i << ": plan " << plan->rejection << "; write " << written.status());
    CHECK(plan->rejection.ok() == written.ok());
    CHECK(ReasonOf(plan->rejection) == ReasonOf(written.status()));
    CHECK(std::string(plan->rejection.message()) == std::string(written.status().message()));
    ++seen[written.ok() ? "fits" : v1::Reason_Name(ReasonOf(written.status()))];
  }
  CHECK(w.Drift() == 0);
  for (const auto& [situation, n] : seen) WARN(situation << ": " << n);
  // Every rule came up often enough to have been compared.
  for (const char* situation :
       {"fits", "FEED_REDUNDANCY_LOST", "POWER_BUDGET_EXCEEDED", "COOLING_BUDGET_EXCEEDED",
        "AIRFLOW_MISMATCH", "AIRFLOW_UNKNOWN", "POWER_UNKNOWN", "POWER_PORTS_UNKNOWN"}) {
    INFO(situation);
    CHECK(seen[situation] >= 10);
  }
}

}  // namespace
}  // namespace dcl::testing
