// Domain errors for dcl: an absl::Status carrying a machine-readable reason and the structured
// details a caller acts on (dcl.v1.ErrorDetail, stored as a status payload). Domain code builds
// these; the gRPC edge converts them once with ToGrpcStatus (grpc_status.h).
#ifndef DCL_SERVICES_COMMON_STATUS_H_
#define DCL_SERVICES_COMMON_STATUS_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "dcl/v1/common.pb.h"

namespace dcl {

// Payload key under which the ErrorDetail travels inside an absl::Status.
inline constexpr absl::string_view kErrorDetailUrl = "type.googleapis.com/dcl.v1.ErrorDetail";

// Builds an error with a reason; add details with the fluent setters, then convert.
//   return Error(absl::StatusCode::kAborted, v1::CONTENDED, "someone was faster").Meta("k", "v");
class Error {
 public:
  Error(absl::StatusCode code, v1::Reason reason, std::string message);

  Error& Meta(const std::string& key, const std::string& value);
  v1::ErrorDetail& detail() { return detail_; }

  absl::Status status() const;
  operator absl::Status() const { return status(); }  // NOLINT: meant to be returned as a Status.

 private:
  absl::StatusCode code_;
  v1::ErrorDetail detail_;
};

// Returns the status of `expr` from the enclosing function when it is not OK.
#define DCL_RETURN_IF_ERROR(expr)              \
  do {                                         \
    const absl::Status dcl_status_ = (expr);   \
    if (!dcl_status_.ok()) return dcl_status_; \
  } while (0)

// Shorthands for the common kinds of refusal.
absl::Status InvalidInput(const std::string& field, const std::string& message);
absl::Status NotFound(const std::string& what, const std::string& id);
absl::Status Internal(const std::string& message);

// The status of item `index` of a batch's repeated field `field` (AIP-233: a batch that fails
// fails with its refused item's status, so a caller reads the same reason as from the single
// call): same code, reason and details; the message starts "requests[3]: ", metadata "item" is
// the index, and a metadata "field" (an INVALID_INPUT's field) becomes "requests[3].serial".
absl::Status ForBatchItem(const absl::Status& status, const std::string& field, int index);

// A batch of more items than `limit` (kMaxBatchItems, validation.h): INVALID_ARGUMENT / INVALID_INPUT,
// metadata field "requests", "items" (how many were sent) and "limit".
absl::Status BatchTooLarge(int items, int64_t limit);

// The ErrorDetail of a status, if it carries one.
std::optional<v1::ErrorDetail> GetErrorDetail(const absl::Status& status);

// The reason of a status: its detail's reason, or a reason derived from the code alone.
v1::Reason ReasonOf(const absl::Status& status);

}  // namespace dcl

#endif  // DCL_SERVICES_COMMON_STATUS_H_
