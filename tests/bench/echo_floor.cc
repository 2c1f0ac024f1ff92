#include "tests/bench/echo_floor.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tests/bench/bench_csv.h"
#include "tests/bench/echo_insert.grpc.pb.h"
#include "tests/bench/run_together.h"

ABSL_FLAG(bool, token_cache, true,
          "authenticate through the token cache, as the served binaries with "
          "--token_cache_database_url do (false: every call reads its token)");

namespace dcl::bench {

std::unique_ptr<TokenCache> StartTokenCacheFromFlags(const std::string& url) {
  if (!absl::GetFlag(FLAGS_token_cache)) {
    std::printf("token cache: off (every call reads its token)\n");
    return nullptr;
  }
  TokenCache::Options options;
  options.database_url = url;
  auto cache = std::make_unique<TokenCache>(options);
  if (!cache->AwaitListening(absl::Seconds(10))) {
    std::fprintf(stderr, "token cache: not listening after 10 s\n");
    std::exit(1);
  }
  std::printf("token cache: on (a held token costs no statement)\n");
  return cache;
}

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[std::min(values.size() - 1, static_cast<size_t>(p * (values.size() - 1) + 0.5))];
}

std::vector<std::shared_ptr<grpc::Channel>> DistinctChannels(int port, int count) {
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  for (int i = 0; i < count; ++i) {
    args.SetInt("dcl.bench.channel", i);  // distinct arguments, distinct connections
    channels.push_back(grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", port),
                                                 grpc::InsecureChannelCredentials(), args));
  }
  return channels;
}

LoadRun RunEchoInsert(const std::vector<std::shared_ptr<grpc::Channel>>& channels, int clients,
                      double seconds, const std::string& authorization, const EchoShape& shape) {
  using Clock = std::chrono::steady_clock;
  std::vector<LoadRun> per(clients);
  std::vector<double> cpu(clients, 0);
  std::atomic<bool> printed{false};
  LoadRun total;
  total.seconds = RunTogether(clients, [&](int c, const std::function<void()>& start) {
    auto stub = EchoInsertService::NewStub(channels[c % channels.size()]);
    start();
    const double cpu_start = ThisThreadCpuSeconds();
    const auto until = Clock::now() + std::chrono::duration<double>(seconds);
    for (int i = 0; shape.calls_per_client > 0 ? i < shape.calls_per_client : Clock::now() < until;
         ++i) {
      EchoInsertRequest request;
      request.set_payload(absl::StrCat("floor-", c, "-", i));
      request.set_round_trips(shape.cycle[i % shape.cycle.size()]);
      EchoInsertResponse response;
      grpc::ClientContext context;
      context.AddMetadata("authorization", authorization);
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
      const auto t0 = Clock::now();
      const grpc::Status status = stub->Insert(&context, request, &response);
      per[c].latency_ms.push_back(
          std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
      if (!status.ok()) {
        ++per[c].failed;
        if (!printed.exchange(true)) {
          std::fprintf(stderr, "echo-insert floor: call failed: %d %s\n",
                       static_cast<int>(status.error_code()), status.error_message().c_str());
        }
      }
    }
    cpu[c] = ThisThreadCpuSeconds() - cpu_start;
  });
  for (int c = 0; c < clients; ++c) {
    total.latency_ms.insert(total.latency_ms.end(), per[c].latency_ms.begin(),
                            per[c].latency_ms.end());
    total.failed += per[c].failed;
    total.load_generator_cpu_seconds += cpu[c];
  }
  return total;
}

void AnnouncePhase(const std::string& what, double seconds, int clients) {
  std::printf("-- measuring: %s for %.1f s at %d client%s\n", what.c_str(), seconds, clients,
              clients == 1 ? "" : "s");
  std::fflush(stdout);
}

void AnnouncePhaseEnd(const std::string& what, long long calls, double seconds) {
  std::printf("-- measured: %s: %lld calls in %.2f s\n", what.c_str(), calls, seconds);
  std::fflush(stdout);
}

FloorRun MeasureEchoInsertFloor(const std::string& url,
                                const std::vector<std::shared_ptr<grpc::Channel>>& channels,
                                int clients, double seconds, const std::string& authorization,
                                const std::string& benchmark, const std::string& scenario,
                                double ceiling, const EchoShape& shape) {
  RunEchoInsert(channels, clients, 0.5, authorization, shape);  // each connection prepares once
  FloorRun floor;
  const CpuSeconds before = ReadCpuSeconds(url);
  AnnouncePhase(shape.run, seconds, clients);
  floor.run = RunEchoInsert(channels, clients, seconds, authorization, shape);
  AnnouncePhaseEnd(shape.run, static_cast<long long>(floor.run.latency_ms.size()),
                   floor.run.seconds);
  const CpuSeconds after = ReadCpuSeconds(url);
  floor.cpu = MeasureServerCpuPerCall(before, after, floor.run.load_generator_cpu_seconds,
                                      static_cast<long long>(floor.run.latency_ms.size()));
  AppendCsv({benchmark, scenario, shape.run, clients, floor.run.calls_per_second(),
             Percentile(floor.run.latency_ms, 0.50), Percentile(floor.run.latency_ms, 0.95),
             Percentile(floor.run.latency_ms, 0.99), ceiling, floor.cpu.server_ms,
             floor.cpu.database_ms});
  return floor;
}

int PrintAgainstFloor(const std::string& rpc, const LoadRun& real, const ServerCpuPerCall& real_cpu,
                      const LoadRun& floor, const ServerCpuPerCall& floor_cpu,
                      const FloorGoals& goals) {
  const double calls_ratio = real.calls_per_second() / floor.calls_per_second();
  const double cpu_ratio = real_cpu.total_ms() > 0 && floor_cpu.total_ms() > 0
                               ? real_cpu.total_ms() / floor_cpu.total_ms()
                               : -1;
  const double real_p99 = Percentile(real.latency_ms, 0.99);
  std::printf(
      "   echo-insert floor: %.0f calls/s, p50 %.2f ms, p99 %.2f ms, %lld failed; CPU per "
      "call server + PostgreSQL %.3f ms\n",
      floor.calls_per_second(), Percentile(floor.latency_ms, 0.50),
      Percentile(floor.latency_ms, 0.99), floor.failed, floor_cpu.total_ms());
  std::printf(
      "   %s: %.0f calls/s, p50 %.2f ms, p99 %.2f ms; CPU per call server + PostgreSQL "
      "%.3f ms\n",
      rpc.c_str(), real.calls_per_second(), Percentile(real.latency_ms, 0.50), real_p99,
      real_cpu.total_ms());
  int missed = 0;
  auto verdict = [&](bool met) {
    if (!met) ++missed;
    return met ? "met" : "MISSED";
  };
  if (!goals.print) {
    std::printf("   %s / floor: calls/s %.3f, CPU per call %.2fx\n", rpc.c_str(), calls_ratio,
                cpu_ratio);
  } else {
    std::printf("   %s / floor: calls/s %.3f (goal >= %.2f: %s), CPU per call %.2fx", rpc.c_str(),
                calls_ratio, goals.min_calls_ratio, verdict(calls_ratio >= goals.min_calls_ratio),
                cpu_ratio);
    if (goals.max_cpu_ratio > 0) {
      std::printf(" (goal <= %.1fx: %s)", goals.max_cpu_ratio,
                  verdict(cpu_ratio > 0 && cpu_ratio <= goals.max_cpu_ratio));
    }
    if (goals.max_p99_ms > 0) {
      std::printf(", p99 %.2f ms (goal <= %.0f ms: %s)", real_p99, goals.max_p99_ms,
                  verdict(real_p99 <= goals.max_p99_ms));
    }
    std::printf("\n");
  }
  std::fflush(stdout);
  return missed;
}

}  // namespace dcl::bench
