// Budgets under concurrency, with real connections and a barrier: 32 placements through
// CreateBooking, each on its own connection and transaction, released at the same instant onto
// free units of one rack whose budget fits exactly k of them. Exactly k win and every other
// one is refused with the reason of the budget that binds, 20 rounds for each budget; the
// rows equal a recomputation afterwards. The rack is designed so that one budget binds:
//   power:      one feed of 230 V x 13 A x 80 % = 2392 W (no N-1 with one feed);
//   redundancy: two such feeds; a 450 W dual PSU puts 225 W on each, 450 W on the other with
//               one lost, so N-1 binds at 5 while each feed carries 1125 W;
//   cooling:    no feeds, 2392 W of cooling;
//   rack power: no feeds, the rack's own power budget of 2250 W (0039), also met by a mix of
//               placements, reservations with figures, move holds and promotions;
//   ports:      no feeds, switch ports of 10 x 10g (0040); each server needs 2 x 10g.
// 5 x 450 = 2250 W fits, 6 x 450 = 2700 W does not: k = 5.
#include <atomic>
#include <catch2/catch.hpp>
#include <cstdio>
#include <map>
#include <memory>
#include <pqxx/pqxx>
#include <string>
#include <thread>
#include <vector>

#include "services/common/db.h"
#include "services/common/status.h"
#include "services/occupancy/booking_store.h"
#include "tests/capacity/capacity_world.h"
#include "tests/support/barrier.h"

namespace dcl::testing {
namespace {

constexpr int kContenders = 32;
constexpr int kRounds = 20;
constexpr int kFits = 5;
constexpr int kServerWatts = 450;

enum class Budget { kPower, kRedundancy, kCooling, kRackPower, kPorts };

constexpr int kServer10gPorts = 2;

// A round's outcomes: how many won, and the refusals counted by "CODE REASON", with their
// summary as the round's line prints it (" 27 FAILED_PRECONDITION POWER_BUDGET_EXCEEDED").
struct Tally {
  int won = 0;
  std::map<std::string, int> refusals;
  std::string summary;
};

Tally Count(const std::vector<absl::Status>& outcomes) {
  Tally t;
  for (const absl::Status& s : outcomes) {
    if (s.ok()) {
      ++t.won;
    } else {
      ++t.refusals[absl::StrCat(absl::StatusCodeToString(s.code()), " ",
                                v1::Reason_Name(ReasonOf(s)))];
    }
  }
  for (const auto& [what, n] : t.refusals) absl::StrAppend(&t.summary, " ", n, " ", what);
  return t;
}

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
    if (budget == Budget::kPorts) {
      w.SetSwitchPorts(rack, absl::StrCat(R"({"10g": )", kFits * kServer10gPorts, "}"));
      for (const std::string& device : devices) {
        w.SetNetworkPorts(device, absl::StrCat(R"({"10g": )", kServer10gPorts, "}"));
      }
    }

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

    Tally tally = Count(outcomes);
    const int won = tally.won;
    std::map<std::string, int>& refusals = tally.refusals;
    const std::string& summary = tally.summary;
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
    } else if (budget == Budget::kPorts) {
      CHECK(w.PortsUsed(rack, "10g") == kFits * kServer10gPorts);
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

TEST_CASE("32 placements race for 10g ports for 5: 5 placed, 27 PORTS_EXHAUSTED") {
  Race(Budget::kPorts, v1::PORTS_EXHAUSTED, "ports");
}

TEST_CASE("32 placements race for a rack power budget of 5: 5 placed, 27 POWER_BUDGET_EXCEEDED") {
  Race(Budget::kRackPower, v1::POWER_BUDGET_EXCEEDED, "rack power");
}

// The same budget met by every kind of booking at once, as the services write them: placements
// (PlaceDevice), rack reservations carrying a server's figure (ReserveDelivery), move holds
// (StartMove's destination) and promotions of units-only reservations (a delivered server placed
// out of its reservation). Whatever the mix, exactly k win, every other one is refused with the
// budget's reason, and the row equals a recomputation.
TEST_CASE("32 mixed bookings race for a rack power budget of 5: placements, reservations with "
          "figures, move holds and promotions; 5 win") {
  CapacityWorld w;
  std::vector<std::unique_ptr<DbPool>> pools;
  for (int i = 0; i < kContenders; ++i) pools.push_back(w.db.MakePool(1));
  for (int round = 1; round <= kRounds; ++round) {
    const std::string rack = w.BudgetedRack(kFits * kServerWatts, 0);
    const std::vector<std::string> devices = w.Devices(kContenders, kServerWatts, 2);
    // Every fourth contender promotes a units-only reservation of its unit, made beforehand.
    std::vector<std::string> reserved(kContenders);
    for (int i = 3; i < kContenders; i += 4) {
      auto r = pools[0]->Transact([&](pqxx::work& tx) {
        return occupancy::CreateBooking(
            tx, w.op,
            occupancy::UnitRangeSpec(v1::BOOKING_RESERVATION, rack, v1::SIDE_FRONT, false, i + 1,
                                     i + 1, "delivery", 3600));
      });
      REQUIRE(r.ok());
      reserved[i] = r->id();
    }
    auto contend = [&](int i) -> absl::Status {
      DbPool& pool = *pools[i];
      const int unit = i + 1;
      switch (i % 4) {
        case 0:
          return w.Place(pool, rack, devices[i], unit).status();
        case 1: {
          occupancy::BookingSpec spec = occupancy::UnitRangeSpec(
              v1::BOOKING_RESERVATION, rack, v1::SIDE_FRONT, false, unit, unit, "delivery", 3600);
          spec.power_watts = kServerWatts;
          return pool
              .Transact([&](pqxx::work& tx) { return occupancy::CreateBooking(tx, w.op, spec); })
              .status();
        }
        case 2:
          return pool
              .Transact([&](pqxx::work& tx) {
                return occupancy::CreateBooking(
                    tx, w.op,
                    occupancy::DeviceFootprintSpec(v1::BOOKING_MOVE_HOLD, rack, devices[i],
                                                   v1::SIDE_FRONT, unit, "move"));
              })
              .status();
        default:
          return pool
              .Transact([&](pqxx::work& tx) {
                return occupancy::PromoteReservation(
                    tx, w.op, reserved[i],
                    occupancy::DeviceFootprintSpec(v1::BOOKING_PLACEMENT, rack, devices[i],
                                                   v1::SIDE_FRONT, unit, "delivered"));
              })
              .status();
      }
    };
    Barrier barrier(kContenders);
    std::vector<absl::Status> outcomes(kContenders);
    std::vector<std::thread> threads;
    for (int i = 0; i < kContenders; ++i) {
      threads.emplace_back([&, i] {
        barrier.ArriveAndWait();
        outcomes[i] = contend(i);
      });
    }
    for (std::thread& t : threads) t.join();

    Tally tally = Count(outcomes);
    const int won = tally.won;
    std::map<std::string, int>& refusals = tally.refusals;
    const std::string& summary = tally.summary;
    std::map<int, int> won_by_kind;
    for (int i = 0; i < kContenders; ++i) {
      if (outcomes[i].ok()) ++won_by_kind[i % 4];
    }
    std::printf("mixed round %d: %d won (placements %d, reservations %d, move holds %d, "
                "promotions %d),%s\n",
                round, won, won_by_kind[0], won_by_kind[1], won_by_kind[2], won_by_kind[3],
                summary.c_str());
    std::fflush(stdout);
    INFO("mixed round " << round << ": " << won << " won," << summary);
    CHECK(won == kFits);
    CHECK(refusals.size() == 1);
    CHECK(refusals["FAILED_PRECONDITION POWER_BUDGET_EXCEEDED"] == kContenders - kFits);
    CHECK(w.BudgetColumn(rack, "power") == kFits * kServerWatts);
  }
  CHECK(w.Drift() == 0);
}

// Schema 0041: a device's airflow changed while it is being placed into a rack with an airflow.
// One of the two commits first and the other is judged against it: exactly one wins each round,
// and no placed device ever opposes its rack.
TEST_CASE("a placement and an opposing airflow change race: exactly one wins, 20 rounds") {
  CapacityWorld w;
  std::unique_ptr<DbPool> placing = w.db.MakePool(1);
  std::unique_ptr<pqxx::connection> changing = w.db.Connect();
  std::map<std::string, int> outcomes;
  for (int round = 1; round <= kRounds; ++round) {
    const std::string rack = w.Rack(0, "front-to-rear");
    const std::string device = w.Devices(1, kServerWatts, 2)[0];
    Barrier barrier(2);
    absl::Status placed;
    bool changed = false;
    std::thread place([&] {
      barrier.ArriveAndWait();
      placed = w.Place(*placing, rack, device, 1).status();
    });
    std::thread change([&] {
      barrier.ArriveAndWait();
      try {
        pqxx::work tx(*changing);
        tx.exec0(
            absl::StrCat("UPDATE devices SET airflow = 'rear-to-front' WHERE id = '", device, "'"));
        tx.commit();
        changed = true;
      } catch (const pqxx::check_violation& e) {
        CHECK(std::string(e.what()).find("cannot become rear-to-front") != std::string::npos);
      }
    });
    place.join();
    change.join();
    INFO("round " << round << ": placed " << placed << ", changed " << changed);
    CHECK(placed.ok() != changed);
    if (!placed.ok()) CHECK(ReasonOf(placed) == v1::AIRFLOW_MISMATCH);
    ++outcomes[placed.ok() ? "placed, change refused" : "changed, placement refused"];
  }
  for (const auto& [what, n] : outcomes)
    std::printf("airflow race: %d rounds %s\n", n, what.c_str());
  CHECK(w.db.Count("SELECT count(*) FROM bookings b JOIN racks r ON r.id = b.rack_id "
                   "JOIN devices d ON d.id = b.device_id WHERE b.released_at IS NULL "
                   "AND dcl_airflow_refusal(r.airflow, d.airflow) IS NOT NULL") == 0);
}

}  // namespace
}  // namespace dcl::testing
