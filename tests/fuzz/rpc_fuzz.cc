// A black-box fuzzer over every RPC of the three real server binaries (issue 10). It starts
// reservation_server, occupancy_server and moves_server as processes on a fresh database seeded
// with an attacker organization A, a victim organization V, a third organization and one with
// the module switched off (fuzz_world.h), sends seeded random and mutated requests for every
// method of the three services (request_generator.h) from several threads, and fails when
//   1. a server process exits;
//   2. an answer's code and reason are not documented for its RPC (documented_outcomes.h), or a
//      refusal carries no dcl.v1.ErrorDetail;
//   3. an answer is INTERNAL or UNKNOWN (the database is healthy throughout);
//   4. a row belonging to V changes (org_fingerprint.h, before and after);
//   5. a request naming one of V's ids is answered differently from the same request with that
//      id replaced by a fresh random UUID (code, reason, message, metadata and details, and for
//      reading RPCs the response body, with both ids masked): another organization's id must
//      read exactly like an unknown id;
//   6. a server's health is not SERVING at the end.
// Every thread draws its requests from its own RNG, derived from --seed and the thread's index,
// and independent of the answers: `--seed=S --only_thread=T` replays thread T's sequence.
//   rpc_fuzz_test [--seed=S] [--calls=N] [--seconds=S] [--threads=T] [--only_thread=T]
// This file runs it; the server processes are server_fleet.h's, a calling thread and its checks
// on every answer fuzz_worker.h's, one call fuzz_call.h's, the report fuzz_report.h's.
#include <google/protobuf/stubs/logging.h>
#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "dcl/v1/common.pb.h"
#include "dcl/v1/inventory.grpc.pb.h"
#include "dcl/v1/moves.grpc.pb.h"
#include "dcl/v1/occupancy.grpc.pb.h"
#include "dcl/v1/reservation.grpc.pb.h"
#include "google/rpc/status.pb.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "tests/fuzz/documented_outcomes.h"
#include "tests/fuzz/fuzz_call.h"
#include "tests/fuzz/fuzz_report.h"
#include "tests/fuzz/fuzz_worker.h"
#include "tests/fuzz/fuzz_world.h"
#include "tests/fuzz/org_fingerprint.h"
#include "tests/fuzz/request_generator.h"
#include "tests/fuzz/server_fleet.h"
#include "tests/support/child_process.h"
#include "tests/support/suite_processes.h"
#include "tests/support/test_db.h"

ABSL_FLAG(uint64_t, seed, 0, "the run's seed; 0 picks one from the clock (printed either way)");
ABSL_FLAG(int64_t, calls, 20000, "calls to send in total (0: no limit, use --seconds)");
ABSL_FLAG(double, seconds, 0, "stop after this many seconds (0: no time limit)");
ABSL_FLAG(int, threads, 6, "calling threads, each with its own RNG derived from the seed");
ABSL_FLAG(int, only_thread, -1, "run only this thread's sequence (to replay a report)");
ABSL_FLAG(int, watch_deadline_ms, 150, "client deadline of a WatchMove stream");
ABSL_FLAG(int, examples, 3, "examples printed per failure class");

namespace dcl::fuzz {
namespace {

int Main() {
  uint64_t seed = absl::GetFlag(FLAGS_seed);
  if (seed == 0) {
    seed = static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
  }
  const int64_t total_calls = absl::GetFlag(FLAGS_calls);
  const double seconds = absl::GetFlag(FLAGS_seconds);
  const int only_thread = absl::GetFlag(FLAGS_only_thread);
  const int threads = only_thread >= 0 ? 1 : absl::GetFlag(FLAGS_threads);
  if (threads < 1 || (total_calls <= 0 && seconds <= 0)) {
    std::cerr << "need --threads >= 1 and a bound: --calls or --seconds\n";
    return 2;
  }
  std::cout << "rpc_fuzz: seed=" << seed << " threads=" << threads
            << (only_thread >= 0 ? absl::StrCat(" only_thread=", only_thread) : "")
            << " calls=" << total_calls << " seconds=" << seconds
            << "\n  reproduce: --seed=" << seed << " (one thread: --only_thread=T)" << std::endl;

  testing::TestDatabase db;
  const World world = SeedWorld(db);
  std::cout << "seeded: attacker " << world.attacker.id << " (" << world.attacker.objects.size()
            << " objects), victim " << world.victim.id << " (" << world.victim.objects.size()
            << " objects), third " << world.third.id << ", dormant " << world.dormant.id
            << std::endl;

  std::vector<ServerProcess> servers(3);
  servers[0].binary = "services/reservation/reservation_server";
  servers[0].service = v1::ReservationService::service_full_name();
  servers[1].binary = "services/occupancy/occupancy_server";
  servers[1].service = v1::OccupancyService::service_full_name();
  servers[1].also = {v1::InventoryService::service_full_name()};
  servers[2].binary = "services/moves/moves_server";
  servers[2].service = v1::MoveService::service_full_name();
  for (ServerProcess& server : servers) Start(server, db.service_url());

  std::vector<const google::protobuf::ServiceDescriptor*> services;
  for (const ServerProcess& server : servers) {
    for (const std::string& name : server.all_services()) {
      services.push_back(
          google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(name));
    }
  }
  const RequestGenerator generator(world, services);
  const std::map<std::string, OutcomeSet> outcomes = ReadDocumentedOutcomes(kApiDocPath);
  Report report(absl::GetFlag(FLAGS_examples));
  for (const MethodDescriptor* method : generator.methods()) {
    if (outcomes.count(method->full_name()) == 0) {
      report.Fail("2. RPC without documented outcomes", method->full_name());
    }
  }
  for (const std::string& method : generator.MethodsWithoutTemplates()) {
    std::cout << "note: no template for " << method << " (random and mutated empty requests)\n";
  }

  OrgFingerprint fingerprint(db, world.victim.id);
  const std::map<std::string, std::string> before = fingerprint.Take();
  {
    std::vector<std::string> rows;
    for (const auto& [table, digest] : before) {
      rows.push_back(absl::StrCat(table, " ", digest.substr(0, digest.find(':'))));
    }
    std::cout << "victim fingerprint over " << before.size()
              << " tables (rows): " << absl::StrJoin(rows, ", ") << std::endl;
  }

  Shared shared;
  shared.generator = &generator;
  shared.outcomes = &outcomes;
  const IdLegend legend = BuildLegend(world);
  shared.legend = &legend;
  for (const ServerProcess& server : servers) {
    for (const std::string& name : server.all_services()) {
      shared.ports[name] = server.port;
      shared.down[name] = server.down.get();
    }
  }
  shared.report = &report;
  shared.seed = seed;
  shared.quota = total_calls > 0 ? (total_calls + threads - 1) / threads : 0;
  shared.watch_deadline_ms = absl::GetFlag(FLAGS_watch_deadline_ms);

  const auto start = Clock::now();
  std::vector<std::map<std::string, int64_t>> histograms(threads);
  std::vector<std::thread> workers;
  std::atomic<int> running{threads};
  for (int i = 0; i < threads; ++i) {
    workers.emplace_back([&, i] {
      Worker worker(shared, only_thread >= 0 ? only_thread : i);
      worker.Run(&histograms[i]);
      running.fetch_sub(1);
    });
  }
  // 1. Every server is watched while the threads call (and after they are done). A dead one is
  // restarted on its port while the threads wait for it.
  auto last_progress = start;
  while (running.load() > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    CheckServers(servers, db.service_url(), shared.stop);
    const auto now = Clock::now();
    if (seconds > 0 && now - start >= std::chrono::duration<double>(seconds)) {
      shared.stop.store(true);
    }
    if (now - last_progress >= std::chrono::seconds(10)) {
      last_progress = now;
      const double elapsed = std::chrono::duration<double>(now - start).count();
      std::printf("  ... %lld calls in %.0f s\n", static_cast<long long>(shared.calls.load()),
                  elapsed);
      std::fflush(stdout);
    }
  }
  for (std::thread& worker : workers) worker.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  shared.stop.store(true);
  CheckServers(servers, db.service_url(), shared.stop);

  ReportDeaths(servers, db.service_url(), generator, legend, report);

  // 4. Nothing of V changed.
  const std::map<std::string, std::string> after = fingerprint.Take();
  for (const auto& [table, digest] : before) {
    if (after.at(table) != digest) {
      report.Fail(absl::StrCat("4. a row of the victim organization changed: ", table),
                  absl::StrCat(table, ": rows:md5 ", digest, " → ", after.at(table),
                               "; rows selected by ", fingerprint.conditions().at(table)));
    }
  }

  // The fingerprint sees a change of one of V's rows, directly and through a foreign key (a
  // fingerprint that cannot change would pass everything).
  db.Exec(absl::StrCat("UPDATE sites SET name = name || '-probe' WHERE org_id = '", world.victim.id,
                       "'"));
  db.Exec(
      absl::StrCat("UPDATE booking_slots SET released_at = now() WHERE released_at IS NULL "
                   "AND booking_id IN (SELECT id FROM bookings WHERE org_id = '",
                   world.victim.id, "')"));
  {
    const std::map<std::string, std::string> probed = fingerprint.Take();
    for (const char* table : {"sites", "booking_slots"}) {
      if (probed.at(table) == after.at(table)) {
        report.Fail("4. the victim fingerprint does not see a change", table);
      }
    }
  }

  // 6. Health.
  CheckHealth(servers, report);

  std::map<std::string, int64_t> histogram;
  for (const auto& h : histograms) {
    for (const auto& [key, count] : h) histogram[key] += count;
  }
  std::set<std::string> called;
  for (const auto& [key, count] : histogram) called.insert(key.substr(0, key.find(' ')));
  std::cout << "\noutcomes (rpc code reason: calls):\n";
  for (const auto& [key, count] : histogram) std::cout << "  " << key << ": " << count << "\n";
  for (const MethodDescriptor* method : generator.methods()) {
    if (called.count(absl::StrCat(method->service()->name(), ".", method->name())) == 0) {
      std::cout << "note: " << method->full_name() << " was not called (too few calls)\n";
    }
  }
  const int64_t calls = shared.calls.load();
  std::printf(
      "\nseed=%llu threads=%d calls=%lld in %.1f s = %.0f calls/s; %lld requests named "
      "another organization's id (each compared with an unknown id)\n",
      static_cast<unsigned long long>(seed), threads, static_cast<long long>(calls), elapsed,
      elapsed > 0 ? calls / elapsed : 0.0, static_cast<long long>(shared.foreign_id_checks.load()));
  std::fflush(stdout);
  report.Print(std::cout);
  std::cout << "reproduce: --seed=" << seed << std::endl;
  return report.failed() ? 1 : 0;
}

}  // namespace
}  // namespace dcl::fuzz

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  // Serializing a string field with invalid UTF-8 (on purpose) makes protobuf log an error per
  // call; the answers say what matters.
  google::protobuf::SetLogHandler(
      [](google::protobuf::LogLevel, const char*, int, const std::string&) {});
  // A write to a server that died must not kill the fuzzer that reports it.
  signal(SIGPIPE, SIG_IGN);
  try {
    return dcl::fuzz::Main();
  } catch (const std::exception& e) {
    std::cerr << "rpc_fuzz: " << e.what() << std::endl;
    return 1;
  }
}
