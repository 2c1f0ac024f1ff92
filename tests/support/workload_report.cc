#include "tests/support/workload_report.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "google/rpc/status.pb.h"

namespace dcl::workload {

bool AnsweredOkOrRefused(grpc::StatusCode code) {
  return code == grpc::StatusCode::OK || code == grpc::StatusCode::FAILED_PRECONDITION ||
         code == grpc::StatusCode::RESOURCE_EXHAUSTED || code == grpc::StatusCode::NOT_FOUND ||
         code == grpc::StatusCode::ALREADY_EXISTS;
}

void Report::Record(const std::string& service, const std::string& client, const std::string& rpc,
                    const std::string& request, Clock::time_point started,
                    const grpc::Status& status, const std::string& response) {
  const std::string reason = ReasonOfDetails(status);
  const std::string code = CodeName(status.error_code());
  const auto now = Clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  ++outcomes_[absl::StrCat(rpc, " ", code, reason.empty() ? "" : "/", reason)];
  PhaseCounts& phase = phases_[phase_];
  ++phase.calls;
  if (status.ok()) ++phase.ok;
  if (!status.ok() && AnsweredOkOrRefused(status.error_code())) ++phase.refused;
  if (status.error_code() == grpc::StatusCode::ABORTED) ++phase.aborted;
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE ||
      status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    ++phase.unknown;
  }
  if (status.error_code() == grpc::StatusCode::INTERNAL ||
      status.error_code() == grpc::StatusCode::UNKNOWN) {
    failures_.push_back(absl::StrCat("4. ", rpc, " answered ", code, ": ", status.error_message()));
  }
  if (status.ok() && fault_ended_.has_value() && started >= *fault_ended_) {
    auto& recovery = recoveries_.back();
    if (recovery.by_service.count(service) == 0) {
      recovery.by_service[service] = Seconds(*fault_ended_, now);
    }
  }
  if (history_ != nullptr) {
    std::fprintf(history_, "%.3f\t%.3f\t%s\t%s\t%s\t%s%s%s\t%s\t%s\n", Seconds(epoch_, started),
                 Seconds(epoch_, now), phase_.c_str(), client.c_str(), rpc.c_str(), code.c_str(),
                 reason.empty() ? "" : "/", reason.c_str(), request.c_str(),
                 status.ok() ? response.c_str() : status.error_message().c_str());
  }
}

void Report::Fail(const std::string& failure) {
  std::lock_guard<std::mutex> lock(mu_);
  failures_.push_back(failure);
}

void Report::Note(const std::string& counter, int64_t by) {
  std::lock_guard<std::mutex> lock(mu_);
  counters_[counter] += by;
}

int64_t Report::Counter(const std::string& counter) {
  std::lock_guard<std::mutex> lock(mu_);
  return counters_[counter];
}

bool Report::failed() {
  std::lock_guard<std::mutex> lock(mu_);
  return !failures_.empty();
}

void Report::WriteHistoryTo(std::FILE* history) {
  std::lock_guard<std::mutex> lock(mu_);
  history_ = history;
  std::fprintf(history_, "start_s\tend_s\tphase\tclient\tcall\toutcome\trequest\tanswer\n");
}

void Report::SetPhase(const std::string& phase) {
  std::lock_guard<std::mutex> lock(mu_);
  phase_ = phase;
  if (std::find(phase_order_.begin(), phase_order_.end(), phase) == phase_order_.end()) {
    phase_order_.push_back(phase);
  }
}

void Report::FaultEnded(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  fault_ended_ = Clock::now();
  recoveries_.push_back({name, {}});
}

void Report::Print() {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t calls = 0;
  for (const auto& [key, count] : outcomes_) calls += count;
  std::printf("\ncalls per outcome (%lld calls):\n", static_cast<long long>(calls));
  for (const auto& [key, count] : outcomes_) {
    std::printf("  %-62s %7lld\n", key.c_str(), static_cast<long long>(count));
  }
  if (phase_order_.size() > 1) {
    std::printf("\ncalls per phase (available = answered OK or with a business refusal):\n");
    std::printf("  %-34s %7s %7s %7s %7s %7s %9s\n", "phase", "calls", "ok", "refused", "aborted",
                "unknown", "available");
    for (const std::string& name : phase_order_) {
      const PhaseCounts& phase = phases_[name];
      if (phase.calls == 0) continue;
      std::printf("  %-34s %7lld %7lld %7lld %7lld %7lld %8.1f%%\n", name.c_str(),
                  static_cast<long long>(phase.calls), static_cast<long long>(phase.ok),
                  static_cast<long long>(phase.refused), static_cast<long long>(phase.aborted),
                  static_cast<long long>(phase.unknown),
                  phase.calls == 0 ? 0.0 : 100.0 * (phase.ok + phase.refused) / phase.calls);
    }
  }
  if (!recoveries_.empty()) {
    std::printf(
        "\ntime to recover after each fault (first OK answer per service to a call "
        "started after the fault ended):\n");
    for (const Recovery& recovery : recoveries_) {
      std::string per_service;
      for (const char* service : {"reservation", "occupancy", "moves"}) {
        auto it = recovery.by_service.find(service);
        absl::StrAppend(&per_service, "  ", service, " ",
                        it == recovery.by_service.end() ? std::string("none")
                                                        : absl::StrFormat("%.2f s", it->second));
      }
      std::printf("  %-34s%s\n", recovery.fault.c_str(), per_service.c_str());
    }
  }
  std::printf("\nfailover and resolution:\n");
  for (const auto& [key, count] : counters_) {
    std::printf("  %-62s %7lld\n", key.c_str(), static_cast<long long>(count));
  }
  if (failures_.empty()) {
    std::printf("\nRESULT: PASS\n");
  } else {
    std::printf("\nRESULT: FAIL (%zu)\n", failures_.size());
    for (size_t i = 0; i < failures_.size() && i < 60; ++i) {
      std::printf("  %s\n", failures_[i].c_str());
    }
  }
  std::fflush(stdout);
}

std::string Report::CodeName(grpc::StatusCode code) {
  static const char* const kNames[] = {"OK",
                                       "CANCELLED",
                                       "UNKNOWN",
                                       "INVALID_ARGUMENT",
                                       "DEADLINE_EXCEEDED",
                                       "NOT_FOUND",
                                       "ALREADY_EXISTS",
                                       "PERMISSION_DENIED",
                                       "RESOURCE_EXHAUSTED",
                                       "FAILED_PRECONDITION",
                                       "ABORTED",
                                       "OUT_OF_RANGE",
                                       "UNIMPLEMENTED",
                                       "INTERNAL",
                                       "UNAVAILABLE",
                                       "DATA_LOSS",
                                       "UNAUTHENTICATED"};
  const int index = static_cast<int>(code);
  return index >= 0 && index <= 16 ? kNames[index] : absl::StrCat("CODE_", index);
}

std::string Report::ReasonOfDetails(const grpc::Status& status) {
  google::rpc::Status details;
  if (status.error_details().empty() || !details.ParseFromString(status.error_details())) {
    return "";
  }
  for (const auto& any : details.details()) {
    google::rpc::ErrorInfo info;
    if (any.Is<google::rpc::ErrorInfo>() && any.UnpackTo(&info)) return info.reason();
  }
  return "";
}

double Report::Seconds(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

std::string ReasonOf(const grpc::Status& status) { return Report::ReasonOfDetails(status); }

bool OutcomeUnknown(const grpc::Status& status) {
  return status.error_code() == grpc::StatusCode::UNAVAILABLE ||
         status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
}

}  // namespace dcl::workload
