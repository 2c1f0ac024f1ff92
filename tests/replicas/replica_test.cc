// Replicas, proven (issue 14): two replicas of each server binary and two sweepers on one
// throwaway database (tests/support/suite_processes.h), clients spread over the replicas
// running a mixed load of all three services for a bounded time, and in the middle one replica
// of each service and one sweeper SIGKILLed (restarted a few seconds later). Clients fail over:
// a call answered UNAVAILABLE or not at all is sent once more to the other replica — Reserve
// with the same idempotency key, as often as needed; any other write's first outcome is then
// unknown and is resolved by reading (GetReservation, GetMove, ListMoves at once; a booking by
// its unique reason in the database at the end).
//
// It fails when, afterwards,
//   1. an invariant of the data does not hold (audit below: no machine held twice, one active
//      binding per machine and per service, no slot booked twice, placements without expiry,
//      no open move without its destination held, one move event and one history row per
//      transition, history unchanged since the kill, sweeper expiries after their deadlines);
//   2. an acknowledged write is missing or differs from what was acknowledged;
//   3. a WatchMove stream on one moves replica does not deliver, in order and complete, the
//      transitions made through the other replica (the probe), or a finished move's stream
//      differs from the transitions its client made;
//   4. a call is answered INTERNAL or UNKNOWN, a process exits that nobody killed, or a
//      server is not SERVING at the end.
// With --through_pgbouncer the servers' and sweepers' pools go through the test run's
// PgBouncer in transaction mode (--database_pooler=transaction); the moves servers' LISTEN
// connection goes to PostgreSQL directly (--watch_database_url).
//   replica_test [--through_pgbouncer [--watch_through_pgbouncer]] [--seconds=20] [--kill_at=8]
//   [--restart_after=4]
//                [--clients=4] [--seed=1]
#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tests/support/mixed_workload.h"
#include "tests/support/suite_processes.h"
#include "tests/support/test_db.h"

ABSL_FLAG(bool, through_pgbouncer, false,
          "pools through the test run's PgBouncer in transaction mode");
ABSL_FLAG(bool, watch_through_pgbouncer, false,
          "with --through_pgbouncer: the moves servers' LISTEN goes through the pooler too, to "
          "show why it must not (the watch probe then fails)");
ABSL_FLAG(double, seconds, 20, "length of the mixed load");
ABSL_FLAG(double, kill_at, 8,
          "seconds into the load when one replica of each service and one "
          "sweeper are SIGKILLed");
ABSL_FLAG(double, restart_after, 4, "seconds until the killed processes start again");
ABSL_FLAG(int, clients, 4, "clients per service");
ABSL_FLAG(uint64_t, seed, 1, "seed of the clients' choices");

namespace dcl::replicas {
namespace {

using namespace workload;  // NOLINT: the test drives the shared workload and its audit

double Since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

int Main() {
  const bool through_pgbouncer = absl::GetFlag(FLAGS_through_pgbouncer);
  const double seconds = absl::GetFlag(FLAGS_seconds);
  const double kill_at = absl::GetFlag(FLAGS_kill_at);
  const double restart_after = absl::GetFlag(FLAGS_restart_after);
  const int clients = absl::GetFlag(FLAGS_clients);
  const uint64_t seed = absl::GetFlag(FLAGS_seed);
  if (clients < 1 || seconds <= 0 || kill_at + restart_after >= seconds) {
    std::cerr << "need --clients >= 1 and --kill_at + --restart_after < --seconds\n";
    return 2;
  }
  const auto begin = Clock::now();
  testing::TestDatabase db;
  const Seeded seeded = Seed(db, clients, 3 * clients);
  const World& world = seeded.world;

  testing::SuiteOptions options;
  if (through_pgbouncer) {
    options.database_url = db.PgBouncerUrl();
    // LISTEN must not go through the pooler (except to show what breaks when it does).
    options.watch_database_url =
        absl::GetFlag(FLAGS_watch_through_pgbouncer) ? db.PgBouncerUrl() : db.service_url();
    options.transaction_pooler = true;
  } else {
    options.database_url = db.service_url();
  }
  options.sweeper_flags = {"--interval_seconds=1"};
  std::printf(
      "replica_test: %s, 2 replicas of each server, 2 sweepers, %d clients per service, "
      "%.0f s of load, SIGKILL at %.0f s, restart %.0f s later, seed %llu\n",
      through_pgbouncer ? "through PgBouncer (transaction mode)" : "direct to PostgreSQL", clients,
      seconds, kill_at, restart_after, static_cast<unsigned long long>(seed));
  std::fflush(stdout);
  auto suite = std::make_unique<SuiteProcesses>(options);
  std::printf("  started %s in %.1f s\n", absl::StrJoin(suite->Names(), ", ").c_str(),
              Since(begin));
  PlaceMoveDevices(*suite, seeded);

  Report report;
  std::atomic<bool> killed{false};
  Workload workload(*suite, seeded, clients, seed, report, killed);
  const auto start = Clock::now();
  auto sleep_until = [&](double at) {
    std::this_thread::sleep_until(
        start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(at)));
  };
  sleep_until(kill_at);
  Reader reader(db.url());
  const std::map<std::string, std::string> history_at_kill = HistoryDigests(reader);
  const std::vector<std::string> victims = {suite->ReplicasOf(SuiteService::kReservation)[1],
                                            suite->ReplicasOf(SuiteService::kOccupancy)[1],
                                            suite->ReplicasOf(SuiteService::kMoves)[0],
                                            "sweeper-1"};
  for (const std::string& victim : victims) suite->Kill(victim, SIGKILL);
  killed.store(true);
  report.Note("processes SIGKILLed", static_cast<int64_t>(victims.size()));
  std::printf("  %5.1f s: SIGKILL %s\n", Since(start), absl::StrJoin(victims, ", ").c_str());
  std::fflush(stdout);
  sleep_until(kill_at + restart_after);
  for (const std::string& victim : victims) {
    const auto restart_begin = Clock::now();
    suite->Restart(victim);
    std::printf("  %5.1f s: %s serving again after %.2f s\n", Since(start), victim.c_str(),
                Since(restart_begin));
  }
  std::fflush(stdout);
  sleep_until(seconds);
  // Server connections the pools hold right now (the watch hubs' LISTEN connections apart).
  const int64_t backends = reader.Count(
      "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> "
      "pg_backend_pid() AND application_name <> 'dcl-move-watch'");
  workload.Stop();
  std::printf(
      "  %5.1f s: load stopped; %lld PostgreSQL backends served the pools of %zu "
      "processes\n",
      Since(start), static_cast<long long>(backends), suite->Names().size());
  if (through_pgbouncer && backends > 5) {
    report.Fail(absl::StrCat("PgBouncer's pool is 5 server connections, yet ", backends,
                             " backends served the servers"));
  }

  AuditProcesses(*suite, report);
  suite.reset();

  std::printf("\naudit:\n");
  AuditInvariants(reader, report);
  AuditHistoryUnchanged(reader, history_at_kill, "of the kill's moment", report);
  workload.AuditWrites(reader, world.org, "the kill", report);
  report.Print();
  std::printf("replica_test: %.1f s in all\n", Since(begin));
  return report.failed() ? 1 : 0;
}

}  // namespace
}  // namespace dcl::replicas

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  // A write to a server that was just killed must not kill the test that reports it.
  signal(SIGPIPE, SIG_IGN);
  try {
    return dcl::replicas::Main();
  } catch (const std::exception& e) {
    std::cerr << "replica_test: " << e.what() << std::endl;
    return 1;
  }
}
