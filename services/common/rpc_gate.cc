#include "services/common/rpc_gate.h"

#include <spdlog/spdlog.h>

#include <array>
#include <atomic>

#include "absl/strings/str_cat.h"
#include "services/common/metrics.h"

namespace dcl {
namespace {

// The gate's series in the process's registry. Each series is looked up once, through the
// family's mutex, and then kept here in an atomic slot per (RPC, code, reason) and per RPC, so
// recording a call takes no lock: calls share at most the atomics of their own series.
class RpcMetrics {
 public:
  static RpcMetrics& Get() {
    static RpcMetrics* metrics = new RpcMetrics();
    return *metrics;
  }

  // `reason` is REASON_UNSPECIFIED for OK; `code_name` and `reason_name` are the label values.
  void Record(Rpc rpc, absl::StatusCode code, v1::Reason reason, const std::string& code_name,
              const std::string& reason_name, absl::Duration elapsed, uint64_t statements) {
    const size_t r = static_cast<size_t>(rpc);
    CallsOf(rpc, code, reason, code_name, reason_name).Increment();
    Resolve(durations_[r], durations_family_, rpc).Observe(absl::ToDoubleSeconds(elapsed));
    Resolve(statements_[r], statements_family_, rpc).Observe(static_cast<double>(statements));
  }

 private:
  static constexpr size_t kCodes = 17;  // absl::StatusCode 0..16
  static constexpr size_t kReasons = static_cast<size_t>(v1::Reason_ARRAYSIZE);

  RpcMetrics()
      : calls_family_(MetricsRegistry::Default().AddCounter(
            "dcl_rpc_calls_total",
            "RPCs answered, by full method name, gRPC status code and ErrorInfo reason (empty "
            "when OK)",
            {"rpc", "code", "reason"})),
        durations_family_(MetricsRegistry::Default().AddHistogram(
            "dcl_rpc_duration_seconds",
            "time from the gate's admission to the answer, per RPC (WatchMove: the stream's life)",
            // Seconds. WatchMove's "duration" is the life of its stream, hence the long tail.
            {"rpc"}, {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 60})),
        statements_family_(MetricsRegistry::Default().AddHistogram(
            "dcl_rpc_db_statements",
            "statements the database answered for one call on its thread (authentication, "
            "BEGIN and COMMIT included; opening a connection not), per RPC",
            // Authentication is 1 (the token's SELECT in autocommit), 0 for a token the cache
            // holds; a WatchMove grows with the reads of its stream.
            {"rpc"}, {0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 64, 128})),
        calls_(new std::atomic<Counter*>[kRpcCount * kCodes * kReasons]) {
    for (size_t i = 0; i < kRpcCount * kCodes * kReasons; ++i) calls_[i].store(nullptr);
    for (auto& slot : durations_) slot.store(nullptr);
    for (auto& slot : statements_) slot.store(nullptr);
  }

  Counter& CallsOf(Rpc rpc, absl::StatusCode code, v1::Reason reason,
                   const std::string& code_name, const std::string& reason_name) {
    const size_t c = static_cast<size_t>(code);
    const int reason_number = static_cast<int>(reason);
    if (c >= kCodes || reason_number < 0 || static_cast<size_t>(reason_number) >= kReasons) {
      // A code or reason outside the tables: found through the family, under its mutex.
      return calls_family_.WithLabels({InfoOf(rpc).full_name, code_name, reason_name});
    }
    std::atomic<Counter*>& slot =
        calls_[(static_cast<size_t>(rpc) * kCodes + c) * kReasons + reason_number];
    Counter* counter = slot.load(std::memory_order_acquire);
    if (counter == nullptr) {
      // Two first calls may both look it up: the family hands both the same series.
      counter = &calls_family_.WithLabels({InfoOf(rpc).full_name, code_name, reason_name});
      slot.store(counter, std::memory_order_release);
    }
    return *counter;
  }

  static Histogram& Resolve(std::atomic<Histogram*>& slot, MetricFamily<Histogram>& family,
                            Rpc rpc) {
    Histogram* histogram = slot.load(std::memory_order_acquire);
    if (histogram == nullptr) {
      histogram = &family.WithLabels({InfoOf(rpc).full_name});
      slot.store(histogram, std::memory_order_release);
    }
    return *histogram;
  }

  MetricFamily<Counter>& calls_family_;
  MetricFamily<Histogram>& durations_family_;
  MetricFamily<Histogram>& statements_family_;
  // Filled on first use: only RPCs this process serves get series.
  const std::unique_ptr<std::atomic<Counter*>[]> calls_;
  std::array<std::atomic<Histogram*>, kRpcCount> durations_;
  std::array<std::atomic<Histogram*>, kRpcCount> statements_;
};

}  // namespace

RpcGate::RpcGate(DbPool& pool, TokenCache* tokens) : pool_(pool), tokens_(tokens) {
  RpcMetrics::Get();
}

absl::StatusOr<Principal> RpcGate::Admit(const grpc::ServerContext& ctx, Rpc rpc) {
  const auto& metadata = ctx.client_metadata();
  auto it = metadata.find("authorization");
  if (it == metadata.end()) {
    return Error(absl::StatusCode::kUnauthenticated, v1::UNAUTHENTICATED_CALLER,
                 "missing 'authorization: Bearer <token>' metadata");
  }
  const std::string token = BearerToken(std::string(it->second.data(), it->second.size()));
  if (token.empty()) {
    return Error(absl::StatusCode::kUnauthenticated, v1::UNAUTHENTICATED_CALLER,
                 "authorization metadata is not of the form 'Bearer <token>'");
  }
  absl::StatusOr<Principal> principal = Authenticate(pool_, token, tokens_);
  if (!principal.ok()) return principal.status();
  if (!RoleMayCall(principal->role, rpc)) {
    return Error(absl::StatusCode::kPermissionDenied, v1::ROLE_NOT_PERMITTED,
                 absl::StrCat("role ", RoleName(principal->role), " may not call ",
                              InfoOf(rpc).full_name))
        .Meta("role", RoleName(principal->role));
  }
  if (!principal->module_enabled) {
    return Error(absl::StatusCode::kFailedPrecondition, v1::MODULE_DISABLED,
                 "the datacenter module is switched off for this organization");
  }
  return principal;
}

absl::Status RpcGate::Unexpected(Rpc rpc, const std::exception& e) {
  spdlog::error("unhandled exception in {}: {}", InfoOf(rpc).full_name, e.what());
  return Internal("internal error");
}

void RpcGate::LogCall(Rpc rpc, const Principal* principal, const absl::Status& status,
                      absl::Duration elapsed, uint64_t statements) {
  // A std::string, not a view: StatusCodeToString returns a temporary.
  const std::string code = absl::StatusCodeToString(status.code());
  const v1::Reason reason_value = status.ok() ? v1::REASON_UNSPECIFIED : ReasonOf(status);
  const std::string reason = status.ok() ? "" : v1::Reason_Name(reason_value);
  RpcMetrics::Get().Record(rpc, status.code(), reason_value, code, reason, elapsed, statements);
  const double ms = absl::ToDoubleMilliseconds(elapsed);
  if (principal != nullptr) {
    spdlog::info("rpc={} org={} role={} code={} reason={} ms={:.1f}", InfoOf(rpc).full_name,
                 principal->org_id, RoleName(principal->role), code, reason, ms);
  } else {
    spdlog::info("rpc={} org=- role=- code={} reason={} ms={:.1f}", InfoOf(rpc).full_name, code,
                 reason, ms);
  }
}

}  // namespace dcl
