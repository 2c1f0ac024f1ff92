// The one door every RPC of the three services passes through: authenticate the bearer token,
// check the role against the RPC table, check the datacenter module's switch for the caller's
// organization, run the handler's logic, log the call and count it in the process's metrics
// (calls by RPC, code and reason; duration; database statements), and convert its status to
// gRPC once.
// Handlers stay one line: gate_.Run(ctx, Rpc::kReserve, *req, [&](const Principal& p) {...}).
#ifndef DCL_SERVICES_COMMON_RPC_GATE_H_
#define DCL_SERVICES_COMMON_RPC_GATE_H_

#include <chrono>
#include <cstdint>
#include <exception>

#include <google/protobuf/message.h>
#include <grpcpp/server_context.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "services/common/auth.h"
#include "services/common/call_deadline.h"
#include "services/common/db.h"
#include "services/common/grpc_status.h"
#include "services/common/rpc_catalog.h"
#include "services/common/status.h"
#include "services/common/validation.h"

namespace dcl {

// The response header that marks a replayed answer of a write (services/common/request_ledger.h).
inline constexpr char kReplayHeader[] = "dcl-replay";

class RpcGate {
 public:
  // Registers the gate's metric families (metrics.h) in the process's registry. `tokens`: the
  // process's token cache (token_cache.h), null for none: every call reads its token.
  explicit RpcGate(DbPool& pool, TokenCache* tokens = nullptr);
  RpcGate(const RpcGate&) = delete;
  RpcGate& operator=(const RpcGate&) = delete;

  // fn: absl::Status(const Principal&). The request's string fields are checked against the
  // length and encoding limits (validation.h) after admission and before fn runs.
  template <typename Fn>
  grpc::Status Run(grpc::ServerContext* ctx, Rpc rpc, const google::protobuf::Message& request,
                   Fn&& fn) {
    const absl::Time start = absl::Now();
    const uint64_t statements_before = DbStatementsOnThisThread();
    absl::StatusOr<Principal> principal = Admit(*ctx, rpc);
    absl::Status status = principal.status();
    if (principal.ok()) status = CheckRequestLimits(request);
    if (principal.ok() && status.ok()) {
      // The write paths hand the caller's deadline to the database, which refuses to commit
      // after it (call_deadline.h).
      CallDeadlineScope deadline(CallDeadlineOf(*ctx));
      try {
        status = fn(*principal);
      } catch (const std::exception& e) {
        // Stores classify database errors; anything reaching here is a bug, not input.
        status = Unexpected(rpc, e);
      }
    }
    LogCall(rpc, principal.ok() ? &*principal : nullptr, status, absl::Now() - start,
            DbStatementsOnThisThread() - statements_before);
    return ToGrpcStatus(status);
  }

  // A write RPC that may replay an earlier answer (request_ledger.h). fn:
  // absl::Status(const Principal&, bool* replayed); when it sets *replayed and succeeds, the
  // response carries the header `dcl-replay: true`. The replay is signalled in metadata, not in
  // the response message, so that every write RPC signals it the same way whatever it returns.
  template <typename Fn>
  grpc::Status RunWrite(grpc::ServerContext* ctx, Rpc rpc, const google::protobuf::Message& request,
                        Fn&& fn) {
    bool replayed = false;
    grpc::Status status =
        Run(ctx, rpc, request, [&](const Principal& p) { return fn(p, &replayed); });
    if (status.ok() && replayed) ctx->AddInitialMetadata(kReplayHeader, "true");
    return status;
  }

  // The deadline gRPC gives the call on this server's clock; absl::InfiniteFuture() for none.
  static absl::Time CallDeadlineOf(const grpc::ServerContext& ctx) {
    const std::chrono::system_clock::time_point deadline = ctx.deadline();
    if (deadline == std::chrono::system_clock::time_point::max()) return absl::InfiniteFuture();
    return absl::FromChrono(deadline);
  }

  // Authentication, role and module switch, in that order.
  absl::StatusOr<Principal> Admit(const grpc::ServerContext& ctx, Rpc rpc);

 private:
  absl::Status Unexpected(Rpc rpc, const std::exception& e);
  // Logs the call and records it in the metrics. `statements`: what the database answered for
  // it on this thread (authentication included; see DbStatementsOnThisThread).
  void LogCall(Rpc rpc, const Principal* principal, const absl::Status& status,
               absl::Duration elapsed, uint64_t statements);

  DbPool& pool_;
  TokenCache* const tokens_;
};

}  // namespace dcl

#endif  // DCL_SERVICES_COMMON_RPC_GATE_H_
