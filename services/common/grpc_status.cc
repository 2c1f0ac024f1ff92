#include "services/common/grpc_status.h"

#include "google/rpc/status.pb.h"
#include "services/common/status.h"

namespace dcl {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  v1::ErrorDetail detail;
  if (auto existing = GetErrorDetail(status)) {
    detail = *existing;
  } else {
    detail.set_reason(ReasonOf(status));
    detail.set_message(std::string(status.message()));
  }
  google::rpc::ErrorInfo info;
  info.set_reason(v1::Reason_Name(detail.reason()));
  info.set_domain("dcl.v1");
  for (const auto& [key, value] : detail.metadata()) (*info.mutable_metadata())[key] = value;

  google::rpc::Status rpc_status;
  rpc_status.set_code(static_cast<int>(status.code()));
  rpc_status.set_message(detail.message());
  rpc_status.add_details()->PackFrom(info);
  rpc_status.add_details()->PackFrom(detail);
  // absl and gRPC share the canonical code numbering.
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), detail.message(),
                      rpc_status.SerializeAsString());
}

std::optional<v1::ErrorDetail> ErrorDetailFromGrpc(const grpc::Status& status) {
  google::rpc::Status rpc_status;
  if (status.error_details().empty() || !rpc_status.ParseFromString(status.error_details())) {
    return std::nullopt;
  }
  for (const auto& any : rpc_status.details()) {
    v1::ErrorDetail detail;
    if (any.Is<v1::ErrorDetail>() && any.UnpackTo(&detail)) return detail;
  }
  return std::nullopt;
}

}  // namespace dcl
