// The load generator's side of the echo-insert floor (echo_insert_service.h), and the lines that
// put a real RPC beside it: calls/s, p50/p99, CPU per call with the load generator apart, and
// the ratios the goals are stated in.
#ifndef DCL_TESTS_BENCH_ECHO_FLOOR_H_
#define DCL_TESTS_BENCH_ECHO_FLOOR_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <vector>

#include "services/common/token_cache.h"
#include "tests/bench/cpu_meter.h"
#include "tests/bench/echo_insert.pb.h"

namespace dcl::bench {

// What one load run measured: every call's latency, the run's length, and the CPU its client
// threads spent (ThisThreadCpuSeconds, summed over the threads while they made calls).
struct LoadRun {
  std::vector<double> latency_ms;
  double seconds = 0;
  double load_generator_cpu_seconds = 0;
  long long failed = 0;  // calls that did not answer OK
  double calls_per_second() const { return seconds > 0 ? latency_ms.size() / seconds : 0; }
};

double Percentile(std::vector<double> values, double p);

// The served binaries' token cache (services/common/token_cache.h) on `url`, listening, for the
// benchmark's gate; null with --token_cache=false (every call reads its token, as before the
// cache). Both the real RPC and the floor pass the same gate.
std::unique_ptr<TokenCache> StartTokenCacheFromFlags(const std::string& url);

// `count` channels to the in-process server on 127.0.0.1:`port`, each over its own TCP
// connection, for the load generator's clients to share round robin.
std::vector<std::shared_ptr<grpc::Channel>> DistinctChannels(int port, int count);

// What each echo call asks for: call i of a client sends round_trips = cycle[i % size]
// (echo_insert.proto). The CSV row is named `run`.
struct EchoShape {
  std::string run = "echo-insert floor";
  std::vector<RoundTrips> cycle = {ROUND_TRIPS_FLOOR};
  int calls_per_client = 0;  // > 0: that many calls each, all released together; `seconds` unused
};

// `clients` threads, each with its own stub on channels[client % size], call
// EchoInsertService.Insert with `authorization` for `seconds`, shaped by `shape`. A failed call
// is counted and the first is printed: the floor must be all OK to be a floor.
LoadRun RunEchoInsert(const std::vector<std::shared_ptr<grpc::Channel>>& channels, int clients,
                      double seconds, const std::string& authorization,
                      const EchoShape& shape = {});

// "-- measuring: <what> for <seconds> s at <n> clients" when a measured phase begins and
// "-- measured: <what>: N calls in S s" when it ends, flushed at once: a profiler watching the
// benchmark's output (tests/bench/profile_phases.py) records inside the phase it was asked for
// (its first announcement, or its first at a given number of clients), and turns its samples into
// milliseconds per call with the phase's own count.
void AnnouncePhase(const std::string& what, double seconds, int clients);
void AnnouncePhaseEnd(const std::string& what, long long calls, double seconds);

// The floor as both benchmarks measure it: a warm-up of half a second, then `clients` calling
// for `seconds`, with the server's and PostgreSQL's CPU per call (`url` names the cluster), and
// its CSV row (run `shape.run`) under `benchmark` and `scenario` beside `ceiling`.
struct FloorRun {
  LoadRun run;
  ServerCpuPerCall cpu;
};
FloorRun MeasureEchoInsertFloor(const std::string& url,
                                const std::vector<std::shared_ptr<grpc::Channel>>& channels,
                                int clients, double seconds, const std::string& authorization,
                                const std::string& benchmark, const std::string& scenario,
                                double ceiling, const EchoShape& shape = {});

// The floor's row and, beside it, the real RPC's ratios:
//   echo-insert floor   N calls/s  p50  p99   CPU server + PostgreSQL per call
//   <rpc> / floor: calls/s X (goal), CPU per call Y (goal), p99 Z ms (goal)
// Goals are printed only where `goals` says so (the issue states them at 32 clients).
struct FloorGoals {
  bool print = false;
  double min_calls_ratio = 0.5;  // real calls/s >= this x floor calls/s
  double max_cpu_ratio = 2.0;    // real CPU per call <= this x floor's (-1: no goal)
  double max_p99_ms = -1;        // -1: no goal
};
// Returns the number of goals missed (0 when none are printed).
int PrintAgainstFloor(const std::string& rpc, const LoadRun& real, const ServerCpuPerCall& real_cpu,
                      const LoadRun& floor, const ServerCpuPerCall& floor_cpu,
                      const FloorGoals& goals);

}  // namespace dcl::bench

#endif  // DCL_TESTS_BENCH_ECHO_FLOOR_H_
