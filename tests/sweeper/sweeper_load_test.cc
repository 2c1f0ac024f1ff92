// 100,000 due holds are swept in batches while Reserve calls (the reservation service's domain
// logic) keep succeeding; prints Reserve p50/p99 before, during and after the sweep.
//
// The due holds are on machines of another site than the one Reserve draws from, so that the
// figure shows what the sweep itself costs Reserve (row locks, WAL, I/O, CPU), not what a site
// of 100,000 machines costs Reserve's candidate scan (that is the reservation benchmark's
// question).
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <thread>

#include "absl/time/time.h"
#include "services/reservation/reservation_logic.h"
#include "sweeper/sweeper.h"
#include "tests/support/fixtures.h"
#include "tests/support/test_db.h"
#include "tests/sweeper/holds_seed.h"
#include "tests/sweeper/reserve_load.h"

namespace dcl {
namespace {

using namespace std::chrono_literals;

void Print(const char* phase, const testing::PhaseStats& s) {
  std::printf("%-14s %8lld %9.0f %9.2f %9.2f %9.2f %9.2f %8lld\n", phase,
              static_cast<long long>(s.calls), s.calls_per_second, s.p50_ms, s.p95_ms, s.p99_ms,
              s.max_ms, static_cast<long long>(s.failures));
}

TEST_CASE("100,000 due holds are swept in batches while Reserve calls keep succeeding") {
  testing::TestDatabase db;
  auto conn = db.Connect();
  const testing::HoldsOrg org = testing::SeedHoldsOrg(*conn, "acme");
  constexpr int kDue = 100000;
  testing::InsertReservations(*conn, org, kDue, "held", -60, "due-");
  const std::string shop_site = testing::InsertSiteWithDevices(*conn, org, "FRA2", 200);
  db.Exec("ANALYZE");

  auto service_pool = db.MakePool(8);
  reservation::ReservationLogic logic(*service_pool, reservation::ReservationOptions{});
  auto sweeper_pool = db.MakePool(2);
  SweeperOptions options;
  options.name = "load";
  options.batch_size = 1000;
  Sweeper sweeper(*sweeper_pool, options);

  testing::ReserveLoad load(logic, testing::PrincipalFor(org.org_id, Role::kCommerce), shop_site,
                            4);
  std::this_thread::sleep_for(4s);  // phase 0: no sweep
  load.SetPhase(1);
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<SweepResult> result = sweeper.SweepOnce();
  const double sweep_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  load.SetPhase(2);
  std::this_thread::sleep_for(2s);  // phase 2: after
  load.Stop();

  REQUIRE(result.ok());
  CHECK(result->reservations_expired == kDue);
  CHECK(result->batches == kDue / 1000);
  CHECK(db.Count("SELECT count(*) FROM reservations WHERE idempotency_key LIKE 'due-%' AND "
                 "state = 'expired'") == kDue);
  const testing::PhaseStats before = load.Stats(0);
  const testing::PhaseStats during = load.Stats(1);
  const testing::PhaseStats after = load.Stats(2);
  CHECK(before.calls > 0);
  CHECK(during.calls > 0);
  // Reserve keeps succeeding while the sweep runs.
  CHECK(before.failures == 0);
  CHECK(during.failures == 0);
  CHECK(after.failures == 0);
  // No hold of the load is left behind, none is double.
  CHECK(db.Count("SELECT count(*) FROM (SELECT device_id FROM reservations WHERE state = 'held' "
                 "GROUP BY device_id HAVING count(*) > 1) d") == 0);

  std::printf("sweep of %d due holds: %.2f s, %.0f expirations/s, %d batches\n", kDue,
              sweep_seconds, kDue / sweep_seconds, result->batches);
  std::printf("%-14s %8s %9s %9s %9s %9s %9s %8s\n", "Reserve", "calls", "calls/s", "p50 ms",
              "p95 ms", "p99 ms", "max ms", "failed");
  Print("before sweep", before);
  Print("during sweep", during);
  Print("after sweep", after);
  std::printf("p99 during / before: %.2fx\n",
              before.p99_ms > 0 ? during.p99_ms / before.p99_ms : 0.0);
}

}  // namespace
}  // namespace dcl
