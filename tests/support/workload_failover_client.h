// A client of one service of the mixed workload with a connection to each replica: a call goes
// to the preferred replica and, when its outcome is unknown, once more to the other (or, for a
// call safe to repeat, alternately until one answers); every attempt is recorded in the Report.
#ifndef DCL_TESTS_SUPPORT_WORKLOAD_FAILOVER_CLIENT_H_
#define DCL_TESTS_SUPPORT_WORKLOAD_FAILOVER_CLIENT_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/support/suite_processes.h"
#include "tests/support/workload_report.h"

namespace dcl::workload {

using testing::SuiteProcesses;
using testing::SuiteService;
using namespace std::chrono_literals;

constexpr auto kCallDeadline = 5s;
// Reads that resolve an unknown outcome try this often, 250 ms apart: long enough to outlast a
// restart of PostgreSQL or of a server.
constexpr int kReadAttempts = 60;

struct Answer {
  grpc::Status status;
  bool in_doubt = false;  // an earlier attempt of this request had an unknown outcome
};

template <typename Service>
class FailoverClient {
 public:
  FailoverClient(SuiteProcesses& suite, SuiteService service, int index, std::string token,
                 Report& report)
      : preferred_(index % 2),
        token_(std::move(token)),
        report_(report),
        service_(ServiceName(service)),
        name_(absl::StrCat(service_, "-client-", index)) {
    for (const std::string& name : suite.ReplicasOf(service)) {
      auto channel = testing::LocalChannel(suite.Port(name), index);
      // Connected before the load: a call on a channel still connecting fails at once with
      // UNAVAILABLE, which would count as an outage that never happened.
      channel->WaitForConnected(std::chrono::system_clock::now() + 10s);
      stubs_.push_back(Service::NewStub(channel));
    }
  }

  typename Service::Stub& stub(int replica) { return *stubs_[replica]; }
  int replicas() const { return static_cast<int>(stubs_.size()); }
  int preferred() const { return preferred_; }
  // The replica the next call goes to first.
  void Prefer(int replica) { preferred_ = replica; }
  const std::string& token() const { return token_; }

  // One attempt on `replica`.
  template <typename Request, typename Response>
  grpc::Status Once(int replica,
                    grpc::Status (Service::Stub::*method)(grpc::ClientContext*, const Request&,
                                                          Response*),
                    const std::string& rpc, const Request& request, Response* response) {
    grpc::ClientContext context;
    context.AddMetadata("authorization", "Bearer " + token_);
    context.set_deadline(std::chrono::system_clock::now() + kCallDeadline);
    const auto started = Clock::now();
    const grpc::Status status = (stub(replica).*method)(&context, request, response);
    std::string answer = status.ok() ? response->ShortDebugString() : "";
    if (answer.size() > 400) answer = answer.substr(0, 400) + "...";
    report_.Record(service_, name_, rpc, request.ShortDebugString(), started, status, answer);
    return status;
  }

  // The request on the preferred replica; when its outcome is unknown, the same request once
  // more on the other replica (or, with `retry_while_unknown`, alternating until an answer:
  // only for requests that are safe to repeat). The client then prefers the replica that
  // answered.
  template <typename Request, typename Response>
  Answer Call(grpc::Status (Service::Stub::*method)(grpc::ClientContext*, const Request&,
                                                    Response*),
              const std::string& rpc, const Request& request, Response* response,
              bool retry_while_unknown = false) {
    Answer answer;
    const int attempts = retry_while_unknown ? 8 : 2;
    int aborted = 0;
    for (int attempt = 0; attempt < attempts; ++attempt) {
      if (attempt > 0) {
        answer.in_doubt = true;
        preferred_ = (preferred_ + 1) % replicas();
        report_.Note(absl::StrCat("retries on the other replica: ", rpc));
        // A pause before each retry, as a client should, so that an outage is not a busy loop.
        std::this_thread::sleep_for(attempt >= 2 ? 250ms : 50ms);
      }
      answer.status = Once(preferred_, method, rpc, request, response);
      // ABORTED wrote nothing (a lost race, a lock or statement timeout): retried at once, on
      // the same replica, without putting the request in doubt.
      while (answer.status.error_code() == grpc::StatusCode::ABORTED && ++aborted <= 3) {
        report_.Note(absl::StrCat("retries after ABORTED: ", rpc));
        std::this_thread::sleep_for(50ms * aborted);
        answer.status = Once(preferred_, method, rpc, request, response);
      }
      if (!OutcomeUnknown(answer.status)) return answer;
    }
    std::this_thread::sleep_for(100ms);  // no replica answers: back off before the next call
    return answer;
  }

 private:
  static std::string ServiceName(SuiteService service) {
    switch (service) {
      case SuiteService::kReservation:
        return "reservation";
      case SuiteService::kOccupancy:
        return "occupancy";
      case SuiteService::kMoves:
        return "moves";
    }
    return "";
  }

  std::vector<std::unique_ptr<typename Service::Stub>> stubs_;
  int preferred_;
  const std::string token_;
  Report& report_;
  const std::string service_;
  const std::string name_;  // in the history file
};

}  // namespace dcl::workload

#endif  // DCL_TESTS_SUPPORT_WORKLOAD_FAILOVER_CLIENT_H_
