#include "tests/fuzz/server_fleet.h"

#include <string.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "tests/fuzz/documented_outcomes.h"
#include "tests/support/suite_processes.h"

namespace dcl::fuzz {

void Start(ServerProcess& server, const std::string& database_url, int port) {
  server.process = std::make_unique<testing::ChildProcess>(
      testing::RunfilesBinary(server.binary),
      std::vector<std::string>{"--database_url=" + database_url,
                               absl::StrCat("--listen=127.0.0.1:", port)});
  server.port = testing::WaitForServingPort(*server.process, std::chrono::seconds(60));
  if (server.port == 0) {
    throw std::runtime_error(
        absl::StrCat(server.name(), " did not start:\n", server.process->Log()));
  }
}

std::string LogTail(const std::string& log, int lines) {
  size_t pos = log.size();
  for (int i = 0; i <= lines && pos != std::string::npos && pos > 0; ++i) {
    pos = log.rfind('\n', pos - 1);
  }
  const std::string tail = pos == std::string::npos ? log : log.substr(pos + 1);
  return absl::StrCat("      ", absl::StrReplaceAll(absl::StripTrailingAsciiWhitespace(tail),
                                                    {{"\n", "\n      "}}));
}

std::string SignalName(int signal_number) {
  const char* name = strsignal(signal_number);
  return absl::StrCat(signal_number, " (", name != nullptr ? name : "?", ")");
}

void ConfirmKiller(ServerProcess& server, const std::string& database_url,
                   const RequestGenerator& generator, const IdLegend& legend,
                   const std::vector<CallRecord>& suspects, Report& report) {
  std::vector<CallRecord> ordered = suspects;
  std::sort(ordered.begin(), ordered.end(),
            [](const CallRecord& a, const CallRecord& b) { return a.at < b.at; });
  if (ordered.size() > 24) ordered.resize(24);
  ServerProcess fresh{server.binary, server.service, nullptr, 0};
  Start(fresh, database_url);
  auto channel = testing::LocalChannel(fresh.port, 1000);
  for (const CallRecord& suspect : ordered) {
    const MethodDescriptor* method = nullptr;
    for (const MethodDescriptor* m : generator.methods()) {
      if (m->full_name() == suspect.rpc) method = m;
    }
    if (method == nullptr) continue;
    std::unique_ptr<Message> request(google::protobuf::MessageFactory::generated_factory()
                                         ->GetPrototype(method->input_type())
                                         ->New());
    if (!request->ParseFromString(suspect.request_bytes)) continue;
    Invoke(*method, *request, suspect.caller, channel, 1000);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    if (!fresh.process->Running()) {
      const auto signal = fresh.process->TerminatingSignal();
      report.Fail(absl::StrCat("1. ", server.name(), " killed by one request (confirmed: a fresh ",
                               "process died of it alone, signal ",
                               signal ? SignalName(*signal) : "none", ")"),
                  absl::StrCat(Locate(suspect), ": ", suspect.rpc, " {", suspect.request, "}",
                               Legend(legend, suspect.request)));
      return;
    }
  }
  report.Fail(absl::StrCat("1. ", server.name(),
                           ": no single in-flight request kills a fresh "
                           "process (see the calls in flight above)"),
              absl::StrCat(ordered.size(), " requests replayed"));
}

void CheckServers(std::vector<ServerProcess>& servers, const std::string& database_url,
                  std::atomic<bool>& stop) {
  for (ServerProcess& server : servers) {
    if (server.gone) continue;
    if (server.process->Running()) {
      server.last_alive = Clock::now();
      continue;
    }
    Death death;
    death.detected = Clock::now();
    death.last_alive = server.last_alive;
    const auto signal = server.process->TerminatingSignal();
    const auto status = server.process->WaitForExit(std::chrono::milliseconds(0));
    death.how = signal ? absl::StrCat("killed by signal ", SignalName(*signal))
                       : absl::StrCat("exited with status ", status ? *status : -1);
    death.log_tail = LogTail(server.process->Log(), 5);
    server.down->store(true);
    if (server.deaths.size() >= static_cast<size_t>(kMaxRestarts) || stop.load()) {
      stop.store(true);
      death.restarted = Clock::now();
      server.deaths.push_back(death);
      server.gone = true;
      continue;
    }
    std::printf("  ... %s %s; restarting it on port %d\n", server.name().c_str(), death.how.c_str(),
                server.port);
    std::fflush(stdout);
    const int port = server.port;
    Start(server, database_url, port);
    death.restarted = Clock::now();
    server.deaths.push_back(death);
    server.last_alive = Clock::now();
    server.down->store(false);
  }
}

void ReportDeaths(std::vector<ServerProcess>& servers, const std::string& database_url,
                  const RequestGenerator& generator, const IdLegend& legend, Report& report) {
  for (ServerProcess& server : servers) {
    std::vector<CallRecord> unavailable;
    for (const std::string& name : server.all_services()) {
      std::vector<CallRecord> from = report.UnavailableFrom(name);
      unavailable.insert(unavailable.end(), from.begin(), from.end());
    }
    std::sort(unavailable.begin(), unavailable.end(),
              [](const CallRecord& a, const CallRecord& b) { return a.at < b.at; });
    std::vector<std::vector<CallRecord>> suspects(server.deaths.size());
    for (const CallRecord& call : unavailable) {
      // A call answered UNAVAILABLE between the last sight of the server alive and shortly
      // after its restart was in flight when it died (or raced the restart).
      // The latest death that had happened by then claims it.
      bool explained = false;
      for (size_t d = server.deaths.size(); d-- > 0 && !explained;) {
        const Death& death = server.deaths[d];
        if (call.at >= death.last_alive - std::chrono::milliseconds(100) &&
            call.at <= death.restarted + std::chrono::seconds(3)) {
          suspects[d].push_back(call);
          explained = true;
        }
      }
      if (!explained) {
        report.Fail(absl::StrCat("2. UNAVAILABLE from a running server: ", call.rpc),
                    absl::StrCat(Locate(call), ": {", call.request, "}"));
      }
    }
    for (size_t d = 0; d < server.deaths.size(); ++d) {
      const Death& death = server.deaths[d];
      report.Fail(
          absl::StrCat("1. ", server.name(), " died: ", death.how),
          absl::StrCat("death ", d + 1, " of ", server.deaths.size(), ", ", suspects[d].size(),
                       " call(s) in flight; last lines of its log:\n", death.log_tail));
      for (size_t i = 0; i < suspects[d].size() && i < 3; ++i) {
        report.Fail(absl::StrCat("1. ", server.name(), " died: calls in flight (UNAVAILABLE)"),
                    absl::StrCat(Locate(suspects[d][i]), ": ", suspects[d][i].rpc, " {",
                                 suspects[d][i].request, "}"));
      }
      // Each confirmation starts a process of its own: the first few deaths are enough.
      if (d < 3) ConfirmKiller(server, database_url, generator, legend, suspects[d], report);
    }
  }
}

void CheckHealth(std::vector<ServerProcess>& servers, Report& report) {
  for (ServerProcess& server : servers) {
    auto stub = grpc::health::v1::Health::NewStub(testing::LocalChannel(server.port, 2000));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    grpc::health::v1::HealthCheckResponse response;
    const grpc::Status status =
        stub->Check(&context, grpc::health::v1::HealthCheckRequest(), &response);
    if (!status.ok() || response.status() != grpc::health::v1::HealthCheckResponse::SERVING) {
      report.Fail(absl::StrCat("6. not SERVING at the end: ", server.name()),
                  absl::StrCat(CodeName(status.error_code()), " ", status.error_message(), " ",
                               grpc::health::v1::HealthCheckResponse::ServingStatus_Name(
                                   response.status())));
    }
  }
}

}  // namespace dcl::fuzz
