// Budgets under concurrency, with real connections and a barrier: 32 placements through
// CreateBooking, each on its own connection and transaction, released at the same instant onto
// free units of one rack whose budget fits exactly k of them. Exactly k win and every other
// one is refused with the reason of the budget that binds, 20 rounds for each budget; the
// rows equal a recomputation afterwards. The rack is designed so that one budget binds:
//   power:      one feed of 230 V x 13 A x 80 % = 2392 W (no N-1 with one feed);
//   redundancy: two such feeds; a 450 W dual PSU puts 225 W on each, 450 W on the other with
//               one lost, so N-1 binds at 5 while each feed carries 1125 W;
//   cooling:    no feeds, 2392 W of cooling;
//   rack power: no feeds, the rack's own power budget of 2250 W (0039).
// 5 x 450 = 2250 W fits, 6 x 450 = 2700 W does not: k = 5.
#include <atomic>
#include <catch2/catch.hpp>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "services/common/db.h"
#include "services/common/status.h"
#include "tests/capacity/capacity_world.h"
#include "tests/support/barrier.h"

namespace dcl::testing {
namespace {

constexpr int kContenders = 32;
constexpr int kRounds = 20;
constexpr int kFits = 5;
constexpr int kServerWatts = 450;

enum class Budget { kPower, kRedundancy, kCooling, kRackPower };

void Race(Budget budget, v1::Reason expected_refusal, const char* label) {
  CapacityWorld w;
  std::vector<std::unique_ptr<DbPool>> pools;
  for (int i = 0; i < kContenders; ++i) pools.push_back(w.db.MakePool(1));
  for (int round = 1; round <= kRounds; ++round) {
    const std::string rack = budget == Budget::kRackPower
                                 ? w.BudgetedRack(kFits * kServerWatts, 0)
                                 : w.Rack(budget == Budget::kCooling ? 2392 : 0);
    if (budget == Budget::kPower || budget == Budget::kRedundancy) w.Feed(rack, "A", 230, 13);
    if (budget == Budget::kRedundancy) w.Feed(rack, "B", 230, 13);
    const std::vector<std::string> devices = w.Devices(kContenders, kServerWatts, 2);

    Barrier barrier(kContenders);
    std::vector<absl::Status> outcomes(kContenders);
    std::vector<std::thread> threads;
    for (int i = 0; i < kContenders; ++i) {
      threads.emplace_back([&, i] {
        barrier.ArriveAndWait();
        outcomes[i] = w.Place(*pools[i], rack, devices[i], i + 1).status();
      });
    }
    for (std::thread& t : threads) t.join();

    int won = 0;
    std::map<std::string, int> refusals;
    for (const absl::Status& s : outcomes) {
      if (s.ok()) {
        ++won;
      } else {
        ++refusals[absl::StrCat(absl::StatusCodeToString(s.code()), " ",
                                v1::Reason_Name(ReasonOf(s)))];
      }
    }
    std::string summary;
    for (const auto& [what, n] : refusals) absl::StrAppend(&summary, " ", n, " ", what);
    std::printf("%s round %d: %d placed,%s\n", label, round, won, summary.c_str());
    std::fflush(stdout);
    INFO(label << " round " << round << ": " << won << " placed," << summary);
    CHECK(won == kFits);
    CHECK(refusals.size() == 1);
    CHECK(refusals[absl::StrCat("FAILED_PRECONDITION ", v1::Reason_Name(expected_refusal))] ==
          kContenders - kFits);
    CHECK(w.db.Count(
              absl::StrCat("SELECT count(*) FROM bookings WHERE rack_id = '", rack, "'")) == kFits);
    if (budget == Budget::kCooling) {
      CHECK(w.CoolingUsed(rack) == kFits * kServerWatts);
    } else if (budget == Budget::kRackPower) {
      CHECK(w.BudgetColumn(rack, "power") == kFits * kServerWatts);
    } else if (budget == Budget::kPower) {
      CHECK(w.FeedUsed(rack, "A") == kFits * kServerWatts);
    } else {
      CHECK(w.FeedUsed(rack, "A") == kFits * kServerWatts / 2);
      CHECK(w.LostUsed(rack, "B", "A") == kFits * kServerWatts);
    }
  }
  CHECK(w.Drift() == 0);
}

TEST_CASE("32 placements race for a feed that fits 5: 5 placed, 27 POWER_BUDGET_EXCEEDED") {
  Race(Budget::kPower, v1::POWER_BUDGET_EXCEEDED, "power");
}

TEST_CASE("32 placements race for N-1 room for 5: 5 placed, 27 FEED_REDUNDANCY_LOST") {
  Race(Budget::kRedundancy, v1::FEED_REDUNDANCY_LOST, "redundancy");
}

TEST_CASE("32 placements race for cooling for 5: 5 placed, 27 COOLING_BUDGET_EXCEEDED") {
  Race(Budget::kCooling, v1::COOLING_BUDGET_EXCEEDED, "cooling");
}

TEST_CASE("32 placements race for a rack power budget of 5: 5 placed, 27 POWER_BUDGET_EXCEEDED") {
  Race(Budget::kRackPower, v1::POWER_BUDGET_EXCEEDED, "rack power");
}

}  // namespace
}  // namespace dcl::testing
