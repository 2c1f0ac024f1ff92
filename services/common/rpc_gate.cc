#include "services/common/rpc_gate.h"

#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"

namespace dcl {

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
  absl::StatusOr<Principal> principal = Authenticate(pool_, token);
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
                      absl::Duration elapsed) {
  // A std::string, not a view: StatusCodeToString returns a temporary.
  const std::string code = absl::StatusCodeToString(status.code());
  const std::string reason = status.ok() ? "" : v1::Reason_Name(ReasonOf(status));
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
