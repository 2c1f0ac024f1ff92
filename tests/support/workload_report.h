// What the mixed workload's calls came to: outcomes per RPC and per phase, failover statistics,
// recovery after faults, failures, and (when asked) every call in a history file; and how a
// call's answer is read (a business refusal, an unknown outcome, its reason).
#ifndef DCL_TESTS_SUPPORT_WORKLOAD_REPORT_H_
#define DCL_TESTS_SUPPORT_WORKLOAD_REPORT_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"

namespace dcl::workload {

using Clock = std::chrono::steady_clock;

// Whether an answer is one the service meant to give: OK or a business refusal (as opposed to
// a lost race to retry, an unreachable database, a dead or paused server).
bool AnsweredOkOrRefused(grpc::StatusCode code);

class Report {
 public:
  Report() : epoch_(Clock::now()) {}

  // One call, as FailoverClient::Once made it: counted under its RPC and outcome and under the
  // current phase, written to the history file if there is one, and taken as the recovery of
  // `service` when it is the first OK answer to a call that started after the last fault ended.
  void Record(const std::string& service, const std::string& client, const std::string& rpc,
              const std::string& request, Clock::time_point started, const grpc::Status& status,
              const std::string& response);
  void Fail(const std::string& failure);
  void Note(const std::string& counter, int64_t by = 1);
  int64_t Counter(const std::string& counter);
  bool failed();

  // Every call from now on is also a line of `history` (tab-separated: start and end in
  // seconds since the report began, phase, client, call, outcome, request, answer or error).
  void WriteHistoryTo(std::FILE* history);
  // Calls from now on count under `phase`.
  void SetPhase(const std::string& phase);
  // The fault `name` is over (the process restarted, the database back, the locks released):
  // the first OK answer of each service to a call started from now on is its recovery.
  void FaultEnded(const std::string& name);

  void Print();

  static std::string CodeName(grpc::StatusCode code);

  static std::string ReasonOfDetails(const grpc::Status& status);

 private:
  struct PhaseCounts {
    int64_t calls = 0, ok = 0, refused = 0, aborted = 0, unknown = 0;
  };
  struct Recovery {
    std::string fault;
    std::map<std::string, double> by_service;
  };
  static double Seconds(Clock::time_point from, Clock::time_point to);

  const Clock::time_point epoch_;
  std::mutex mu_;
  std::map<std::string, int64_t> outcomes_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int64_t> counters_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> failures_ ABSL_GUARDED_BY(mu_);
  std::string phase_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> phase_order_ ABSL_GUARDED_BY(mu_) = {""};
  std::map<std::string, PhaseCounts> phases_ ABSL_GUARDED_BY(mu_);
  std::optional<Clock::time_point> fault_ended_ ABSL_GUARDED_BY(mu_);
  std::vector<Recovery> recoveries_ ABSL_GUARDED_BY(mu_);
  std::FILE* history_ ABSL_GUARDED_BY(mu_) = nullptr;
};

std::string ReasonOf(const grpc::Status& status);

// The caller cannot tell whether the write happened: the server died under the call, or the
// answer did not come in time.
bool OutcomeUnknown(const grpc::Status& status);

}  // namespace dcl::workload

#endif  // DCL_TESTS_SUPPORT_WORKLOAD_REPORT_H_
