// The rolling upgrade, proven (issue 25), driven by tests/daytwo/rolling-upgrade (which builds
// the previous release from git and prepares the database): the replica test's world and mixed
// load (tests/support/mixed_workload.h) served by the PREVIOUS release's binaries (two replicas
// of every server, two sweepers) on the previous release's schema; while they serve, this
// release's migrations are applied (in-process, the migrator of this workspace); then every
// process is stopped with SIGTERM (its calls drain) and started again with THIS release's binary,
// one at a time; the load goes on throughout. Then the replica test's audit: every invariant,
// every acknowledged write present as acknowledged, WatchMove streams complete, no call
// answered INTERNAL or UNKNOWN (calls cut by a stop are retried on the other replica), every
// process running and serving at the end.
//   rolling_upgrade --previous_bin_dir=DIR [--seconds=40] [--upgrade_at=10] [--clients=3]
// DIR holds the previous release's reservation_server, occupancy_server, moves_server and
// sweeper. Needs DCL_TEST_CONNINFO, DCL_TEST_TEMPLATE (migrated by the previous release) and
// DCL_TEST_SERVICE_ROLE, as tests/run sets them.
#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "schema/migrator.h"
#include "tests/support/mixed_workload.h"
#include "tests/support/suite_processes.h"
#include "tests/support/test_db.h"

ABSL_FLAG(std::string, previous_bin_dir, "", "the previous release's server and sweeper binaries");
ABSL_FLAG(double, seconds, 40, "length of the mixed load");
ABSL_FLAG(double, upgrade_at, 10, "seconds into the load when the new migrations are applied");
ABSL_FLAG(double, pause, 2, "seconds between replacing one process and the next");
ABSL_FLAG(int, clients, 3, "clients per service");
ABSL_FLAG(uint64_t, seed, 1, "seed of the clients' choices");

namespace dcl::daytwo {
namespace {

using namespace workload;  // NOLINT: the program drives the shared workload and its audit

double Since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

int Main() {
  const std::string previous = absl::GetFlag(FLAGS_previous_bin_dir);
  const double seconds = absl::GetFlag(FLAGS_seconds);
  const double upgrade_at = absl::GetFlag(FLAGS_upgrade_at);
  const int clients = absl::GetFlag(FLAGS_clients);
  const uint64_t seed = absl::GetFlag(FLAGS_seed);
  if (previous.empty() || clients < 1 || upgrade_at >= seconds) {
    std::cerr << "need --previous_bin_dir, --clients >= 1 and --upgrade_at < --seconds\n";
    return 2;
  }
  testing::TestDatabase db;  // the previous release's schema (DCL_TEST_TEMPLATE)
  const Seeded seeded = Seed(db, clients, 3 * clients);
  const World& world = seeded.world;

  testing::SuiteOptions options;
  options.database_url = db.service_url();
  options.sweeper_flags = {"--interval_seconds=1"};
  options.binary_dir = previous;
  auto suite = std::make_unique<SuiteProcesses>(options);
  std::printf("rolling_upgrade: previous release %s serving: %s\n", previous.c_str(),
              absl::StrJoin(suite->Names(), ", ").c_str());
  std::fflush(stdout);
  PlaceMoveDevices(*suite, seeded);

  Report report;
  std::atomic<bool> upgrading{false};
  Workload workload(*suite, seeded, clients, seed, report, upgrading);
  const auto start = Clock::now();
  auto sleep_until = [&](double at) {
    std::this_thread::sleep_until(
        start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(at)));
  };

  sleep_until(upgrade_at);
  report.SetPhase("migrations applied under the previous release");
  auto migrations = ParseMigrations(EmbeddedMigrationFiles());
  if (!migrations.ok()) throw std::runtime_error(migrations.status().ToString());
  const auto migrate_begin = Clock::now();
  auto migrated = Migrate(db.url(), *migrations);
  if (!migrated.ok()) {
    report.Fail("0. the new release's migrations failed: " + migrated.status().ToString());
  } else {
    std::printf("  %5.1f s: %d new migrations applied in %.2f s while the previous release "
                "served\n",
                Since(start), migrated->applied, Since(migrate_begin));
  }
  Reader reader(db.url());
  const std::map<std::string, std::string> history_before = HistoryDigests(reader);
  report.SetPhase("replicas replaced one by one");
  upgrading.store(true);
  for (const std::string& name : suite->Names()) {
    const auto replace_begin = Clock::now();
    suite->Kill(name, SIGTERM);
    suite->RestartWith(name, "");
    report.Note("processes replaced by the new release");
    std::printf("  %5.1f s: %s replaced, serving again after %.2f s\n", Since(start),
                name.c_str(), Since(replace_begin));
    std::fflush(stdout);
    std::this_thread::sleep_for(std::chrono::duration<double>(absl::GetFlag(FLAGS_pause)));
  }
  report.SetPhase("new release");
  sleep_until(seconds);
  workload.Stop();
  std::printf("  %5.1f s: load stopped\n", Since(start));

  AuditProcesses(*suite, report);
  suite.reset();
  std::printf("\naudit:\n");
  AuditInvariants(reader, report);
  AuditHistoryUnchanged(reader, history_before, "of the upgrade's start", report);
  workload.AuditWrites(reader, world.org, "the upgrade", report);
  report.Print();
  return report.failed() ? 1 : 0;
}

}  // namespace
}  // namespace dcl::daytwo

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  signal(SIGPIPE, SIG_IGN);
  try {
    return dcl::daytwo::Main();
  } catch (const std::exception& e) {
    std::cerr << "rolling_upgrade: " << e.what() << std::endl;
    return 1;
  }
}
