#include "services/common/status.h"

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"

namespace dcl {

Error::Error(absl::StatusCode code, v1::Reason reason, std::string message) : code_(code) {
  detail_.set_reason(reason);
  detail_.set_message(std::move(message));
}

Error& Error::Meta(const std::string& key, const std::string& value) {
  (*detail_.mutable_metadata())[key] = value;
  return *this;
}

absl::Status Error::status() const {
  absl::Status status(code_, detail_.message());
  status.SetPayload(kErrorDetailUrl, absl::Cord(detail_.SerializeAsString()));
  return status;
}

absl::Status InvalidInput(const std::string& field, const std::string& message) {
  return Error(absl::StatusCode::kInvalidArgument, v1::INVALID_INPUT, field + ": " + message)
      .Meta("field", field);
}

absl::Status NotFound(const std::string& what, const std::string& id) {
  return Error(absl::StatusCode::kNotFound, v1::NOT_FOUND, what + " " + id + " not found")
      .Meta("kind", what)
      .Meta("id", id);
}

absl::Status Internal(const std::string& message) {
  return Error(absl::StatusCode::kInternal, v1::INTERNAL_ERROR, message);
}

absl::Status ForBatchItem(const absl::Status& status, const std::string& field, int index) {
  if (status.ok()) return status;
  const std::string item = absl::StrCat(field, "[", index, "]");
  v1::ErrorDetail detail;
  if (std::optional<v1::ErrorDetail> own = GetErrorDetail(status)) {
    detail = *std::move(own);
  } else {
    detail.set_reason(ReasonOf(status));
  }
  detail.set_message(absl::StrCat(item, ": ", status.message()));
  auto& metadata = *detail.mutable_metadata();
  metadata["item"] = absl::StrCat(index);
  if (auto it = metadata.find("field"); it != metadata.end()) {
    it->second = absl::StrCat(item, ".", it->second);
  }
  absl::Status wrapped(status.code(), detail.message());
  wrapped.SetPayload(kErrorDetailUrl, absl::Cord(detail.SerializeAsString()));
  return wrapped;
}

absl::Status BatchTooLarge(int items, int64_t limit) {
  return Error(absl::StatusCode::kInvalidArgument, v1::INVALID_INPUT,
               absl::StrCat("requests: ", items, " items; at most ", limit,
                            " in one batch, split it"))
      .Meta("field", "requests")
      .Meta("items", absl::StrCat(items))
      .Meta("limit", absl::StrCat(limit));
}

std::optional<v1::ErrorDetail> GetErrorDetail(const absl::Status& status) {
  auto payload = status.GetPayload(kErrorDetailUrl);  // absl::optional on Debian
  if (!payload) return std::nullopt;
  v1::ErrorDetail detail;
  if (!detail.ParseFromString(std::string(*payload))) return std::nullopt;
  return detail;
}

v1::Reason ReasonOf(const absl::Status& status) {
  if (auto detail = GetErrorDetail(status)) return detail->reason();
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
      return v1::INVALID_INPUT;
    case absl::StatusCode::kNotFound:
      return v1::NOT_FOUND;
    case absl::StatusCode::kUnauthenticated:
      return v1::UNAUTHENTICATED_CALLER;
    case absl::StatusCode::kPermissionDenied:
      return v1::ROLE_NOT_PERMITTED;
    case absl::StatusCode::kAborted:
      return v1::RETRY_TRANSACTION;
    case absl::StatusCode::kUnavailable:
      return v1::DATABASE_UNAVAILABLE;
    case absl::StatusCode::kDeadlineExceeded:
      return v1::DEADLINE;
    case absl::StatusCode::kUnimplemented:
      return v1::NOT_IMPLEMENTED;
    case absl::StatusCode::kResourceExhausted:
      return v1::LIMIT_REACHED;
    case absl::StatusCode::kCancelled:
      return v1::CANCELLED_BY_CLIENT;
    default:
      return v1::INTERNAL_ERROR;
  }
}

}  // namespace dcl
