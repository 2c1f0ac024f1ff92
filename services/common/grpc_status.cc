#include "services/common/grpc_status.h"

#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>

#include "google/rpc/status.pb.h"
#include "services/common/status.h"

namespace dcl {
namespace {

// Bytes of a grpc-message header for `text`: gRPC percent-encodes every byte outside
// printable ASCII, and '%'.
size_t PercentEncodedSize(const std::string& text) {
  size_t size = 0;
  for (const unsigned char c : text) size += (c < 0x20 || c > 0x7e || c == '%') ? 3 : 1;
  return size;
}

size_t Base64Size(size_t bytes) { return (bytes + 2) / 3 * 4; }

// Cuts `text` to at most `limit` bytes on a UTF-8 character boundary, saying so.
void Shorten(std::string* text, size_t limit) {
  if (text->size() <= limit) return;
  size_t end = limit;
  while (end > 0 && (static_cast<unsigned char>((*text)[end]) & 0xC0) == 0x80) --end;
  text->resize(end);
  text->append(" ... (shortened)");
}

// A refusal as it travels: the grpc-message text and the serialized google.rpc.Status.
struct Encoded {
  std::string message;
  std::string details;
  // Bytes of the two headers: the message percent-encoded, the details in base64.
  size_t HeaderBytes() const { return PercentEncodedSize(message) + Base64Size(details.size()); }
};

Encoded Encode(absl::StatusCode code, const v1::ErrorDetail& detail) {
  google::rpc::ErrorInfo info;
  info.set_reason(v1::Reason_Name(detail.reason()));
  info.set_domain("dcl.v1");
  for (const auto& [key, value] : detail.metadata()) (*info.mutable_metadata())[key] = value;
  google::rpc::Status rpc_status;
  rpc_status.set_code(static_cast<int>(code));
  rpc_status.set_message(detail.message());
  rpc_status.add_details()->PackFrom(info);
  rpc_status.add_details()->PackFrom(detail);
  return {detail.message(), rpc_status.SerializeAsString()};
}

// Halves the longest of the detail's lists, keeping its first entries; false when all are empty.
bool HalveLongestList(v1::ErrorDetail* detail) {
  auto halve = [](auto* list) {
    list->DeleteSubrange(list->size() / 2, list->size() - list->size() / 2);
  };
  const int longest = std::max({detail->colliding_slots_size(), detail->exclusion_counts_size(),
                                detail->excluded_devices_size(), detail->allowed_targets_size()});
  if (longest == 0) return false;
  if (detail->colliding_slots_size() == longest) {
    halve(detail->mutable_colliding_slots());
  } else if (detail->exclusion_counts_size() == longest) {
    halve(detail->mutable_exclusion_counts());
  } else if (detail->excluded_devices_size() == longest) {
    halve(detail->mutable_excluded_devices());
  } else {
    halve(detail->mutable_allowed_targets());
  }
  return true;
}

}  // namespace

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  v1::ErrorDetail detail;
  if (auto existing = GetErrorDetail(status)) {
    detail = *existing;
  } else {
    detail.set_reason(ReasonOf(status));
    detail.set_message(std::string(status.message()));
  }
  Encoded encoded = Encode(status.code(), detail);
  // Domain code bounds what it lists; this is the backstop that no refusal can outgrow.
  if (encoded.HeaderBytes() > kMaxRefusalHeaderBytes) {
    (*detail.mutable_metadata())["detail_shortened"] = "true";
    Shorten(detail.mutable_message(), kMaxShortenedMessageBytes);
    for (auto& [key, value] : *detail.mutable_metadata()) Shorten(&value, 256);
    encoded = Encode(status.code(), detail);
    while (encoded.HeaderBytes() > kMaxRefusalHeaderBytes && HalveLongestList(&detail)) {
      encoded = Encode(status.code(), detail);
    }
    if (encoded.HeaderBytes() > kMaxRefusalHeaderBytes) {
      detail.clear_metadata();
      (*detail.mutable_metadata())["detail_shortened"] = "true";
      encoded = Encode(status.code(), detail);
    }
  }
  // absl and gRPC share the canonical code numbering.
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::move(encoded.message),
                      std::move(encoded.details));
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
