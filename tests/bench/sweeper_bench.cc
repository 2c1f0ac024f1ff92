// Sweeper benchmark (a program you run, not a timed test).
//
// Against --database_url (a migrated, disposable database: it seeds its own organizations):
//   1. expirations per second: --holds due holds swept by one Sweeper::SweepOnce, for each of
//      --batch_sizes (each batch one transaction, rows picked with FOR UPDATE SKIP LOCKED);
//   2. Reserve latency without and with a sweep running: --clients threads call the
//      reservation service's Reserve (domain logic, then Cancel) on a site of 200 free machines
//      for --baseline_seconds, then during a sweep of --holds due holds (batch 1000) on
//      another site; p50/p95/p99 of both phases. As fast as the clients go, or at
//      --reserve_rate calls per second in all (a machine that is not saturated).
//
// Run:  tests/bench/run_sweeper_bench   (throwaway PostgreSQL, migrate, run)
//   or: bazel run -c opt //tests/bench:sweeper_bench -- --database_url='host=... dbname=...'
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include <spdlog/spdlog.h>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "services/common/db.h"
#include "services/common/service_main.h"
#include "services/reservation/reservation_logic.h"
#include "sweeper/sweeper.h"
#include "tests/sweeper/holds_seed.h"
#include "tests/sweeper/reserve_load.h"

ABSL_FLAG(int, holds, 100000, "due holds per sweep");
ABSL_FLAG(std::string, batch_sizes, "100,1000,5000", "batch sizes to measure, comma-separated");
ABSL_FLAG(int, clients, 4, "concurrent Reserve clients in the latency scenario");
ABSL_FLAG(double, reserve_rate, 0,
          "Reserve calls per second of all clients together in the latency scenario (0: as fast "
          "as they go, which saturates the machine)");
ABSL_FLAG(int, latency_batch_size, 1000, "the sweep's batch size in the latency scenario");
ABSL_FLAG(int, max_rows_per_second, 0,
          "the sweep's pace in the latency scenario (the daemon's --max_rows_per_second; 0: none)");
ABSL_FLAG(int, baseline_seconds, 5, "Reserve load without a sweep before the sweep starts");

namespace dcl {
namespace {

std::string UniqueName(const std::string& what) {
  return absl::StrCat("sweeper-bench-", what, "-", getpid(), "-",
                      absl::ToUnixMillis(absl::Now()));
}

struct SweepFigures {
  double seconds = 0;
  int64_t expired = 0;
  int batches = 0;
};

// The cluster's WAL so far (pg_stat_wal): what a sweep wrote is the difference.
struct WalSoFar {
  double bytes = 0;
  double records = 0;
  double full_page_images = 0;
};
WalSoFar ReadWal(pqxx::connection& conn) {
  pqxx::row row = pqxx::nontransaction(conn).exec1(
      "SELECT wal_bytes::float8, wal_records::float8, wal_fpi::float8 FROM pg_stat_wal");
  return {row[0].as<double>(), row[1].as<double>(), row[2].as<double>()};
}

SweepFigures Sweep(DbPool& pool, int batch_size, int max_rows_per_second = 0) {
  SweeperOptions options;
  options.name = UniqueName("sweeper");
  options.batch_size = batch_size;
  options.max_rows_per_second = max_rows_per_second;
  Sweeper sweeper(pool, options);
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<SweepResult> result = sweeper.SweepOnce();
  SweepFigures figures;
  figures.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!result.ok()) {
    std::fprintf(stderr, "sweep failed: %s\n", result.status().ToString().c_str());
    std::exit(1);
  }
  figures.expired = result->reservations_expired;
  figures.batches = result->batches;
  return figures;
}

void PrintLoad(const char* phase, const testing::PhaseStats& s) {
  std::printf("| %-13s | %7lld | %7.0f | %7.2f | %7.2f | %7.2f | %7.2f | %6lld |\n", phase,
              static_cast<long long>(s.calls), s.calls_per_second, s.p50_ms, s.p95_ms, s.p99_ms,
              s.max_ms, static_cast<long long>(s.failures));
}

int Main() {
  DbOptions db_options = DbOptionsFromFlags();
  if (db_options.url.empty()) {
    std::fprintf(stderr, "set --database_url or DCL_DATABASE_URL (a migrated, disposable db)\n");
    return 2;
  }
  const int holds = absl::GetFlag(FLAGS_holds);
  std::vector<int> batch_sizes;
  for (absl::string_view part : absl::StrSplit(absl::GetFlag(FLAGS_batch_sizes), ',')) {
    int size = 0;
    if (!absl::SimpleAtoi(part, &size) || size < 1) {
      std::fprintf(stderr, "bad --batch_sizes\n");
      return 2;
    }
    batch_sizes.push_back(size);
  }
  pqxx::connection conn(db_options.url);
  db_options.pool_size = 2;
  DbPool sweeper_pool(db_options);

  std::printf("## 1. Expirations per second (%d due holds, one sweep)\n\n", holds);
  // WAL per expired row, the sweep starting right after a checkpoint: every heap and index page
  // it touches first writes a full-page image, as the first sweep after each checkpoint does in
  // production (wal_compression shrinks those images: DCL_BENCH_PG_OPTS).
  std::printf("| batch | seed s | sweep s | batches | expirations/s | WAL bytes/row | WAL "
              "records/row | full-page images/row |\n");
  std::printf("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
  for (int batch_size : batch_sizes) {
    const auto seed_start = std::chrono::steady_clock::now();
    const testing::HoldsOrg org = testing::SeedHoldsOrg(conn, UniqueName("org"));
    testing::InsertReservations(conn, org, holds, "held", -60, "due-");
    pqxx::nontransaction(conn).exec("ANALYZE reservations");
    const double seed_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - seed_start).count();
    pqxx::nontransaction(conn).exec("CHECKPOINT");
    const WalSoFar wal_before = ReadWal(conn);
    const SweepFigures f = Sweep(sweeper_pool, batch_size);
    const WalSoFar wal_after = ReadWal(conn);
    const double rows = std::max<double>(1, f.expired);
    std::printf("| %d | %.1f | %.2f | %d | %.0f | %.0f | %.2f | %.3f |\n", batch_size,
                seed_seconds, f.seconds, f.batches, f.expired / f.seconds,
                (wal_after.bytes - wal_before.bytes) / rows,
                (wal_after.records - wal_before.records) / rows,
                (wal_after.full_page_images - wal_before.full_page_images) / rows);
    std::fflush(stdout);
  }

  const int clients = absl::GetFlag(FLAGS_clients);
  const double reserve_rate = absl::GetFlag(FLAGS_reserve_rate);
  std::printf("\n## 2. Reserve latency without / with a sweep of %d due holds (%d clients, %s)\n\n",
              holds, clients,
              reserve_rate > 0 ? absl::StrCat(reserve_rate, " calls/s in all").c_str()
                               : "as fast as they go");
  const testing::HoldsOrg org = testing::SeedHoldsOrg(conn, UniqueName("org"));
  testing::InsertReservations(conn, org, holds, "held", -60, "due-");
  const std::string shop_site = testing::InsertSiteWithDevices(conn, org, "FRA2", 200);
  pqxx::nontransaction(conn).exec("ANALYZE");
  DbOptions service_options = DbOptionsFromFlags();
  service_options.pool_size = clients + 2;
  DbPool service_pool(service_options);
  reservation::ReservationLogic logic(service_pool, reservation::ReservationOptions{});
  Principal commerce;
  commerce.org_id = org.org_id;
  commerce.role = Role::kCommerce;
  commerce.token_id = "bench";
  testing::ReserveLoad load(logic, commerce, shop_site, clients, reserve_rate);
  std::this_thread::sleep_for(std::chrono::seconds(absl::GetFlag(FLAGS_baseline_seconds)));
  load.SetPhase(1);
  const SweepFigures f = Sweep(sweeper_pool, absl::GetFlag(FLAGS_latency_batch_size),
                               absl::GetFlag(FLAGS_max_rows_per_second));
  load.Stop();
  const testing::PhaseStats without = load.Stats(0);
  const testing::PhaseStats with = load.Stats(1);
  std::printf("| Reserve       |   calls | calls/s |  p50 ms |  p95 ms |  p99 ms |  max ms | failed |\n");
  std::printf("| :--           |    ---: |    ---: |    ---: |    ---: |    ---: |    ---: |   ---: |\n");
  PrintLoad("no sweep", without);
  PrintLoad("during sweep", with);
  std::printf("\nsweep during load: %.2f s, %.0f expirations/s; Reserve p99 during / without: "
              "%.2fx\n",
              f.seconds, f.expired / f.seconds,
              without.p99_ms > 0 ? with.p99_ms / without.p99_ms : 0.0);
  for (const auto& [reason, count] : with.failure_reasons) {
    std::printf("  failed during sweep: %s x%lld\n", reason.c_str(),
                static_cast<long long>(count));
  }
  return 0;
}

}  // namespace
}  // namespace dcl

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  spdlog::set_level(spdlog::level::warn);  // the table, not one log line per sweep
  dcl::TurnOffMutexDeadlockDetection();    // as the daemon runs
  return dcl::Main();
}
