// The fault history (issue 15): a seeded, reproducible mixed workload over all three services
// from 64 clients (tests/support/mixed_workload.h) on two replicas of every server and two
// sweepers, on a PostgreSQL cluster of its own with default durability, while faults strike on
// a seeded schedule; every call and its answer go to a history file; at the end an audit of the
// history against the database.
//
// Faults, one per slot of --fault_every seconds, every fault once per round of seven slots, in
// a seeded order:
//   kill-server     SIGKILL of a server replica or a sweeper, restarted 2 s later
//   pause-server    SIGSTOP of a server replica for 6 s (longer than a call's deadline), SIGCONT
//   kill-backends   pg_terminate_backend of a seeded half of the database's backends
//   pg-restart      PostgreSQL fast restart (pg_ctl restart -m fast)
//   pg-crash        PostgreSQL immediate-mode stop (no checkpoint), 1 s down, crash recovery
//   idle-locks      a session locks the stock's devices, held reservations, racks and open moves,
//                   and sits idle in transaction for 6 s: past the servers' lock (2 s) and
//                   statement (4 s) timeouts
//   slots-taken     another client takes every connection slot PostgreSQL has for 4 s
//
// It fails (exit 1) when, afterwards,
//   1. an invariant of the data does not hold (no machine held twice, one active binding per
//      machine and per service, no hold converted after its deadline, no slot booked twice,
//      placements without expiry, no open move without its destination held, one move event
//      and one history row per transition, location history rows unchanged since they were
//      first seen, sweeper expiries after their deadlines by the database clock);
//   2. an acknowledged write is missing or differs from what was acknowledged, a write answered
//      with a refusal left a row behind, or a call without an answer is not resolved by a
//      retry with the same key (Reserve) or by reading (the others);
//   3. a finished move's WatchMove stream differs from the transitions its client made;
//   4. a call is answered INTERNAL or UNKNOWN, a process exits that nobody killed, or a server
//      is not SERVING at the end.
// It prints calls per outcome and per phase, availability per phase, the time each service took
// to answer OK again after each fault, and the audit.
//   fault_history [--seconds=80] [--fault_every=10] [--seed=1] [--clients=64] [--history=PATH]
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <pqxx/pqxx>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "schema/migrator.h"
#include "tests/faults/pg_cluster.h"
#include "tests/support/mixed_workload.h"
#include "tests/support/suite_processes.h"
#include "tests/support/test_db.h"

ABSL_FLAG(double, seconds, 80, "length of the load, faults included");
ABSL_FLAG(double, fault_every, 10,
          "seconds per fault slot (the fault, then the recovery until the next one); the "
          "faults repeat in a new seeded order every seven slots");
ABSL_FLAG(uint64_t, seed, 1, "seed of the clients' choices and of the fault schedule");
ABSL_FLAG(int, clients, 64, "clients in all, spread over the three services");
ABSL_FLAG(std::string, history, "",
          "the history file (default: fault_history.tsv in Bazel's undeclared test outputs, "
          "else in the working directory)");

namespace dcl::faults {
namespace {

using namespace workload;  // NOLINT: the program drives the shared workload and its audit

// Room for 6 servers with pools of 8, 2 sweepers, the moves servers' listeners and the audit,
// so that slots-taken has to take few.
constexpr int kMaxConnections = 100;
constexpr int kSaleMachines = 10;
constexpr double kWarmup = 6;  // seconds of load before the first fault
constexpr double kTail = 4;    // seconds of load after the last fault's slot

double Since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A connection that survives the faults it outlives: reconnects when PostgreSQL restarted or
// its backend was terminated.
class Admin {
 public:
  explicit Admin(std::string url) : url_(std::move(url)) {}
  pqxx::result Exec(const std::string& sql) {
    for (int attempt = 0;; ++attempt) {
      try {
        if (conn_ == nullptr || !conn_->is_open()) conn_ = std::make_unique<pqxx::connection>(url_);
        pqxx::nontransaction tx(*conn_);
        return tx.exec(sql);
      } catch (const pqxx::broken_connection&) {
        conn_.reset();
        if (attempt >= 40) throw;
        std::this_thread::sleep_for(250ms);
      }
    }
  }

 private:
  const std::string url_;
  std::unique_ptr<pqxx::connection> conn_;
};

struct Context {
  OwnCluster& cluster;
  SuiteProcesses& suite;
  const testing::TestDatabase& db;
  const World& world;
  Report& report;
  Admin& admin;
  std::mt19937_64& rng;
};

// Each fault: inject it, hold it, lift it; returns a line for the log.
std::string KillServer(Context& c) {
  std::vector<std::string> names = c.suite.Names();
  const std::string victim = names[c.rng() % names.size()];
  c.suite.Kill(victim, SIGKILL);
  std::this_thread::sleep_for(2s);
  const auto begin = Clock::now();
  c.suite.Restart(victim);
  return absl::StrFormat("SIGKILL %s, restarted after 2 s (serving %.2f s later)", victim,
                         Since(begin));
}

std::string PauseServer(Context& c) {
  std::vector<std::string> servers;
  for (const std::string& name : c.suite.Names()) {
    if (c.suite.Port(name) != 0) servers.push_back(name);
  }
  const std::string victim = servers[c.rng() % servers.size()];
  c.suite.Signal(victim, SIGSTOP);
  std::this_thread::sleep_for(6s);
  c.suite.Signal(victim, SIGCONT);
  return absl::StrCat("SIGSTOP ", victim, " for 6 s, SIGCONT");
}

std::string KillBackends(Context& c) {
  const pqxx::result backends = c.admin.Exec(absl::StrCat(
      "SELECT pid FROM pg_stat_activity WHERE datname = '", c.db.name(),
      "' AND pid <> pg_backend_pid() ORDER BY pid"));
  int terminated = 0;
  for (const auto& row : backends) {
    if (c.rng() % 2 != 0) continue;
    c.admin.Exec(absl::StrCat("SELECT pg_terminate_backend(", row[0].as<int>(), ")"));
    ++terminated;
  }
  return absl::StrCat("pg_terminate_backend of ", terminated, " of ", backends.size(),
                      " backends");
}

std::string PgRestart(Context& c) {
  const auto begin = Clock::now();
  c.cluster.FastRestart();
  return absl::StrFormat("PostgreSQL fast restart, %.2f s", Since(begin));
}

std::string PgCrash(Context& c) {
  const auto begin = Clock::now();
  c.cluster.CrashStop();
  std::this_thread::sleep_for(1s);
  c.cluster.Start();
  return absl::StrFormat("PostgreSQL immediate stop, 1 s down, crash recovery: back after %.2f s",
                         Since(begin));
}

std::string IdleLocks(Context& c) {
  pqxx::connection conn(c.db.url());
  pqxx::work tx(conn);
  // Taking the locks may deadlock with a server's transaction or wait long for one: then this
  // attempt ends (the caller tries again), the servers' transactions carry on.
  tx.exec("SET LOCAL lock_timeout = '2s'");
  const std::string org = c.world.org;
  int64_t rows = 0;
  for (const std::string& sql : {
           absl::StrCat("SELECT id FROM devices WHERE org_id = '", org, "' AND site_id = '",
                        c.world.sale_site, "' FOR UPDATE"),
           absl::StrCat("SELECT id FROM reservations WHERE org_id = '", org,
                        "' AND state = 'held' FOR UPDATE"),
           absl::StrCat("SELECT id FROM racks WHERE org_id = '", org, "' FOR UPDATE"),
           absl::StrCat("SELECT id FROM moves WHERE org_id = '", org,
                        "' AND state NOT IN ('completed', 'cancelled', 'failed') FOR UPDATE"),
       }) {
    rows += static_cast<int64_t>(tx.exec(sql).size());
  }
  std::this_thread::sleep_for(6s);  // idle in transaction, the locks held
  tx.abort();
  return absl::StrCat("a session held ", rows, " row locks idle in transaction for 6 s");
}

std::string TakeSlots(Context& c) {
  // As the services' role: superuser_reserved_connections stay free for the audit's superuser.
  std::vector<std::unique_ptr<pqxx::connection>> taken;
  std::string refusal;
  for (int i = 0; i < kMaxConnections; ++i) {
    try {
      taken.push_back(std::make_unique<pqxx::connection>(c.db.service_url()));
    } catch (const std::exception& e) {
      refusal = e.what();
      break;
    }
  }
  if (refusal.find("too many clients") == std::string::npos &&
      refusal.find("remaining connection slots") == std::string::npos) {
    c.report.Fail("slots-taken did not exhaust the connection slots: " + refusal);
  }
  std::this_thread::sleep_for(4s);
  return absl::StrCat("another client took the ", taken.size(),
                      " free connection slots for 4 s");
}

struct Fault {
  const char* name;
  std::string (*inject)(Context&);
};

constexpr Fault kFaults[] = {
    {"kill-server", KillServer}, {"pause-server", PauseServer}, {"kill-backends", KillBackends},
    {"pg-restart", PgRestart},   {"pg-crash", PgCrash},         {"idle-locks", IdleLocks},
    {"slots-taken", TakeSlots},
};

std::string HistoryPath() {
  if (!absl::GetFlag(FLAGS_history).empty()) return absl::GetFlag(FLAGS_history);
  if (const char* outputs = std::getenv("TEST_UNDECLARED_OUTPUTS_DIR")) {
    return absl::StrCat(outputs, "/fault_history.tsv");
  }
  return "fault_history.tsv";
}

// Template, service role and the test database on the program's own cluster, found by
// TestDatabase through the same variables tests/run sets for the shared one.
void PrepareTemplate(const OwnCluster& cluster) {
  {
    pqxx::connection admin(cluster.conninfo() + " dbname=postgres");
    pqxx::nontransaction tx(admin);
    tx.exec("CREATE DATABASE dcl_template");
  }
  auto migrations = ParseMigrations(EmbeddedMigrationFiles());
  if (!migrations.ok()) throw std::runtime_error(migrations.status().ToString());
  auto migrated = Migrate(cluster.conninfo() + " dbname=dcl_template", *migrations);
  if (!migrated.ok()) throw std::runtime_error(migrated.status().ToString());
  {
    pqxx::connection admin(cluster.conninfo() + " dbname=postgres");
    pqxx::nontransaction tx(admin);
    tx.exec("CREATE ROLE dcl_service LOGIN IN ROLE dcl_app");
  }
  setenv("DCL_TEST_CONNINFO", cluster.conninfo().c_str(), 1);
  setenv("DCL_TEST_TEMPLATE", "dcl_template", 1);
  setenv("DCL_TEST_SERVICE_ROLE", "dcl_service", 1);
}

int Main() {
  const double seconds = absl::GetFlag(FLAGS_seconds);
  const uint64_t seed = absl::GetFlag(FLAGS_seed);
  const int clients = absl::GetFlag(FLAGS_clients);
  const double slot = absl::GetFlag(FLAGS_fault_every);
  const int slots = static_cast<int>((seconds - kWarmup - kTail) / slot);
  if (clients < 3 || slot < 8 || slots < 1) {
    std::cerr << "need --clients >= 3, --fault_every >= 8 and --seconds >= --fault_every + "
              << kWarmup + kTail << "\n";
    return 2;
  }
  const auto begin = Clock::now();
  OwnCluster cluster(kMaxConnections);
  PrepareTemplate(cluster);
  testing::TestDatabase db;
  // Clients per service: the reservation clients take what does not divide.
  const int per_service = clients / 3;
  const int reservation_count = clients - 2 * per_service;
  const Seeded seeded = Seed(db, reservation_count, kSaleMachines);
  const World& world = seeded.world;

  testing::SuiteOptions options;
  options.database_url = db.service_url();
  options.server_flags = {"--pool_size=8", "--lock_timeout_ms=2000",
                          "--statement_timeout_ms=4000"};
  options.sweeper_flags = {"--interval_seconds=1"};
  std::printf(
      "fault_history: own PostgreSQL (fsync on) on port %d, 2 replicas of each server, 2 "
      "sweepers, %d clients (%d reservation, %d occupancy, %d moves), %.0f s, seed %llu\n",
      cluster.port(), clients, reservation_count, per_service, per_service, seconds,
      static_cast<unsigned long long>(seed));
  std::fflush(stdout);
  auto suite = std::make_unique<SuiteProcesses>(options);
  PlaceMoveDevices(*suite, seeded);

  Report report;
  const std::string history_path = HistoryPath();
  std::FILE* history = std::fopen(history_path.c_str(), "w");
  if (history == nullptr) throw std::runtime_error("cannot write " + history_path);
  report.WriteHistoryTo(history);
  report.SetPhase("0 steady");

  std::vector<std::unique_ptr<ReservationClient>> reservation_clients;
  std::vector<std::unique_ptr<OccupancyClient>> occupancy_clients;
  std::vector<std::unique_ptr<MoveClient>> move_clients;
  for (int c = 0; c < reservation_count; ++c) {
    reservation_clients.push_back(
        std::make_unique<ReservationClient>(*suite, world, c, seeded.services[c], seed, report));
  }
  for (int c = 0; c < per_service; ++c) {
    occupancy_clients.push_back(std::make_unique<OccupancyClient>(
        *suite, world, c, seeded.occupancy_devices[c], seed, report));
    move_clients.push_back(
        std::make_unique<MoveClient>(*suite, world, c, seeded.move_devices[c], seed, report));
  }

  std::atomic<bool> stop{false};
  const auto start = Clock::now();
  std::vector<std::thread> threads;
  // Whatever ends the run (an exception too), the clients stop before their state goes away.
  struct StopClients {
    std::atomic<bool>& stop;
    std::vector<std::thread>& threads;
    ~StopClients() {
      stop.store(true);
      for (std::thread& thread : threads) {
        if (thread.joinable()) thread.join();
      }
    }
  } stop_clients{stop, threads};
  for (auto& client : reservation_clients) {
    threads.emplace_back([&stop, &client] { client->Run(stop); });
  }
  for (auto& client : occupancy_clients) {
    threads.emplace_back([&stop, &client] { client->Run(stop); });
  }
  for (auto& client : move_clients) {
    threads.emplace_back([&stop, &client] { client->Run(stop); });
  }
  auto sleep_until = [&](double at) {
    std::this_thread::sleep_until(
        start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(at)));
  };

  // The schedule: every fault once per round of seven slots, in an order the seed decides.
  std::mt19937_64 rng(seed);
  std::vector<Fault> schedule;
  while (static_cast<int>(schedule.size()) < slots) {
    std::vector<Fault> round(std::begin(kFaults), std::end(kFaults));
    std::shuffle(round.begin(), round.end(), rng);
    schedule.insert(schedule.end(), round.begin(), round.end());
  }
  Admin admin(db.url());
  Context context{cluster, *suite, db, world, report, admin, rng};
  // Location history rows as first seen, before each fault: none may change or vanish later.
  std::map<std::string, std::string> history_seen;
  auto remember_history = [&] {
    Reader reader(db.url());
    for (const auto& [id, digest] : HistoryDigests(reader)) {
      auto [it, inserted] = history_seen.emplace(id, digest);
      if (!inserted && it->second != digest) {
        report.Fail(absl::StrCat("1. location history row ", id, " changed under the load"));
      }
    }
  };
  for (int i = 0; i < slots; ++i) {
    const double at = kWarmup + i * slot;
    sleep_until(at);
    remember_history();
    const Fault& fault = schedule[i];
    report.SetPhase(absl::StrCat(i + 1, " ", fault.name, " (during)"));
    const double injected = Since(start);
    std::string what;
    for (int attempt = 1; what.empty(); ++attempt) {
      try {
        what = fault.inject(context);
      } catch (const std::exception& e) {
        // Not the services' failure: the fault itself could not be injected this time.
        report.Note(absl::StrCat(fault.name, ": injection attempts that failed"));
        if (attempt == 3) {
          report.Fail(absl::StrCat("fault ", fault.name, " could not be injected: ", e.what()));
          what = "not injected";
        }
      }
    }
    report.FaultEnded(absl::StrCat(i + 1, " ", fault.name));
    report.SetPhase(absl::StrCat(i + 1, " ", fault.name, " (after)"));
    std::printf("  %5.1f s .. %5.1f s: %s\n", injected, Since(start), what.c_str());
    std::fflush(stdout);
  }
  sleep_until(seconds);
  report.SetPhase(absl::StrCat(slots + 1, " end"));
  stop.store(true);
  for (std::thread& thread : threads) thread.join();
  threads.clear();
  for (auto& client : reservation_clients) client->ResolveUnanswered();
  std::printf("  %5.1f s: load stopped, unanswered calls resolved\n", Since(start));

  AuditProcesses(*suite, report);
  suite.reset();
  std::fclose(history);

  std::printf("\naudit:\n");
  Reader reader(db.url());
  AuditInvariants(reader, report);
  AuditHistoryUnchanged(reader, history_seen, "as first seen before each fault", report);
  AuditHolds(reader, world.org, reservation_clients, report);
  AuditBookings(reader, world.org, occupancy_clients, report);
  std::vector<const MoveRecord*> moves;
  for (const auto& client : move_clients) {
    for (const MoveRecord& move : client->moves()) moves.push_back(&move);
  }
  AuditMoves(reader, moves, report);
  report.Print();
  std::printf("history: %s\nfault_history: %.1f s in all\n", history_path.c_str(), Since(begin));
  return report.failed() ? 1 : 0;
}

}  // namespace
}  // namespace dcl::faults

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  // A write to a server that was just killed must not kill the program that reports it.
  signal(SIGPIPE, SIG_IGN);
  try {
    return dcl::faults::Main();
  } catch (const std::exception& e) {
    std::cerr << "fault_history: " << e.what() << std::endl;
    return 1;
  }
}
