// The one conversion from an internal absl::Status to what a gRPC client sees: the code, a
// message, and google.rpc.Status details holding an ErrorInfo (reason, domain "dcl.v1",
// metadata) plus the full dcl.v1.ErrorDetail. SQL and driver text never pass through here:
// statuses built from database exceptions carry only a generic message (see db_errors.h).
#ifndef DCL_SERVICES_COMMON_GRPC_STATUS_H_
#define DCL_SERVICES_COMMON_GRPC_STATUS_H_

#include <cstddef>
#include <optional>

#include <grpcpp/support/status.h>

#include "absl/status/status.h"
#include "dcl/v1/common.pb.h"

namespace dcl {

// A refusal travels in HTTP/2 headers (grpc-message, grpc-status-details-bin), and gRPC clients
// refuse headers over 8 KiB by default (C++ and Java: "received initial metadata size exceeds
// limit", a RESOURCE_EXHAUSTED without reason or details). So a refusal whose two headers would
// exceed kMaxRefusalHeaderBytes is shortened here: the code and reason always arrive; the
// message is cut to kMaxShortenedMessageBytes and metadata values to 256 bytes, then the
// detail's longest list is halved until it fits, and metadata "detail_shortened" is "true".
// Domain code bounds its own lists first.
inline constexpr size_t kMaxRefusalHeaderBytes = 6 * 1024;
inline constexpr size_t kMaxShortenedMessageBytes = 512;

grpc::Status ToGrpcStatus(const absl::Status& status);

// Client side: the ErrorDetail inside a grpc::Status, if any (tests and tools use this).
std::optional<v1::ErrorDetail> ErrorDetailFromGrpc(const grpc::Status& status);

}  // namespace dcl

#endif  // DCL_SERVICES_COMMON_GRPC_STATUS_H_
