// The one conversion from an internal absl::Status to what a gRPC client sees: the code, a
// message, and google.rpc.Status details holding an ErrorInfo (reason, domain "dcl.v1",
// metadata) plus the full dcl.v1.ErrorDetail. SQL and driver text never pass through here:
// statuses built from database exceptions carry only a generic message (see db_errors.h).
#ifndef DCL_SERVICES_COMMON_GRPC_STATUS_H_
#define DCL_SERVICES_COMMON_GRPC_STATUS_H_

#include <optional>

#include <grpcpp/support/status.h>

#include "absl/status/status.h"
#include "dcl/v1/common.pb.h"

namespace dcl {

grpc::Status ToGrpcStatus(const absl::Status& status);

// Client side: the ErrorDetail inside a grpc::Status, if any (tests and tools use this).
std::optional<v1::ErrorDetail> ErrorDetailFromGrpc(const grpc::Status& status);

}  // namespace dcl

#endif  // DCL_SERVICES_COMMON_GRPC_STATUS_H_
