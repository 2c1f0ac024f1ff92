#include "services/common/connect_protocol.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/wrappers.pb.h>
#include <google/protobuf/util/json_util.h>

#include <memory>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "google/rpc/status.pb.h"

namespace dcl::connect {
namespace {

// The Any's message as JSON, when this process knows its type (every type ToGrpcStatus packs);
// nullopt otherwise, and the entry then goes without "debug".
std::optional<std::string> DebugOf(const std::string& type_name, const std::string& bytes) {
  const google::protobuf::Descriptor* descriptor =
      google::protobuf::DescriptorPool::generated_pool()->FindMessageTypeByName(type_name);
  if (descriptor == nullptr) return std::nullopt;
  const google::protobuf::Message* prototype =
      google::protobuf::MessageFactory::generated_factory()->GetPrototype(descriptor);
  if (prototype == nullptr) return std::nullopt;
  std::unique_ptr<google::protobuf::Message> message(prototype->New());
  if (!message->ParseFromString(bytes)) return std::nullopt;
  std::string json;
  if (!google::protobuf::util::MessageToJsonString(*message, &json).ok()) return std::nullopt;
  return json;
}

// A JSON string literal, escaped by protobuf's own JSON writer.
std::string Quote(const std::string& text) {
  google::protobuf::StringValue value;
  value.set_value(text);
  std::string json;
  if (!google::protobuf::util::MessageToJsonString(value, &json).ok()) return "\"\"";
  return json;
}

// The error object, its keys in the protocol's order (code, message, details) so that a person
// reading it with curl finds the code first.
std::string ErrorObject(const grpc::Status& status) {
  std::string out = "{\"code\":" + Quote(CodeName(status.error_code()));
  if (!status.error_message().empty()) out += ",\"message\":" + Quote(status.error_message());
  google::rpc::Status rpc_status;
  if (!status.error_details().empty() && rpc_status.ParseFromString(status.error_details()) &&
      rpc_status.details_size() > 0) {
    out += ",\"details\":[";
    bool first = true;
    for (const google::protobuf::Any& any : rpc_status.details()) {
      // "type.googleapis.com/dcl.v1.ErrorDetail" → "dcl.v1.ErrorDetail"
      const std::string type_url = any.type_url();
      const std::string type_name = type_url.substr(type_url.rfind('/') + 1);
      std::string value = absl::Base64Escape(any.value());
      while (!value.empty() && value.back() == '=') value.pop_back();
      out += first ? "" : ",";
      first = false;
      out += "{\"type\":" + Quote(type_name) + ",\"value\":" + Quote(value);
      if (std::optional<std::string> debug = DebugOf(type_name, any.value())) {
        out += ",\"debug\":" + *debug;
      }
      out += "}";
    }
    out += "]";
  }
  return out + "}";
}

}  // namespace

std::optional<ContentType> ParseContentType(absl::string_view header) {
  std::vector<absl::string_view> parts = absl::StrSplit(header, ';');
  const std::string media = absl::AsciiStrToLower(absl::StripAsciiWhitespace(parts[0]));
  // Parameters other than charset=utf-8 change the meaning of the body: refused.
  for (size_t i = 1; i < parts.size(); ++i) {
    const std::string parameter =
        absl::AsciiStrToLower(absl::StripAsciiWhitespace(parts[i]));
    if (parameter != "charset=utf-8") return std::nullopt;
  }
  if (media == "application/json") return ContentType{Codec::kJson, false};
  if (media == "application/proto") return ContentType{Codec::kProto, false};
  if (media == "application/connect+json") return ContentType{Codec::kJson, true};
  if (media == "application/connect+proto") return ContentType{Codec::kProto, true};
  return std::nullopt;
}

std::string ContentTypeHeader(const ContentType& type) {
  const char* codec = type.codec == Codec::kJson ? "json" : "proto";
  return std::string(type.streaming ? "application/connect+" : "application/") + codec;
}

std::string CodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK: return "ok";
    case grpc::StatusCode::CANCELLED: return "canceled";
    case grpc::StatusCode::UNKNOWN: return "unknown";
    case grpc::StatusCode::INVALID_ARGUMENT: return "invalid_argument";
    case grpc::StatusCode::DEADLINE_EXCEEDED: return "deadline_exceeded";
    case grpc::StatusCode::NOT_FOUND: return "not_found";
    case grpc::StatusCode::ALREADY_EXISTS: return "already_exists";
    case grpc::StatusCode::PERMISSION_DENIED: return "permission_denied";
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return "resource_exhausted";
    case grpc::StatusCode::FAILED_PRECONDITION: return "failed_precondition";
    case grpc::StatusCode::ABORTED: return "aborted";
    case grpc::StatusCode::OUT_OF_RANGE: return "out_of_range";
    case grpc::StatusCode::UNIMPLEMENTED: return "unimplemented";
    case grpc::StatusCode::INTERNAL: return "internal";
    case grpc::StatusCode::UNAVAILABLE: return "unavailable";
    case grpc::StatusCode::DATA_LOSS: return "data_loss";
    case grpc::StatusCode::UNAUTHENTICATED: return "unauthenticated";
    case grpc::StatusCode::DO_NOT_USE: break;
  }
  return "unknown";  // a number outside the canonical codes
}

int HttpStatusOf(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK: return 200;
    case grpc::StatusCode::CANCELLED: return 499;
    case grpc::StatusCode::UNKNOWN: return 500;
    case grpc::StatusCode::INVALID_ARGUMENT: return 400;
    case grpc::StatusCode::DEADLINE_EXCEEDED: return 504;
    case grpc::StatusCode::NOT_FOUND: return 404;
    case grpc::StatusCode::ALREADY_EXISTS: return 409;
    case grpc::StatusCode::PERMISSION_DENIED: return 403;
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return 429;
    case grpc::StatusCode::FAILED_PRECONDITION: return 400;
    case grpc::StatusCode::ABORTED: return 409;
    case grpc::StatusCode::OUT_OF_RANGE: return 400;
    case grpc::StatusCode::UNIMPLEMENTED: return 501;
    case grpc::StatusCode::INTERNAL: return 500;
    case grpc::StatusCode::UNAVAILABLE: return 503;
    case grpc::StatusCode::DATA_LOSS: return 500;
    case grpc::StatusCode::UNAUTHENTICATED: return 401;
    case grpc::StatusCode::DO_NOT_USE: break;
  }
  return 500;
}

std::string ErrorJson(const grpc::Status& status) { return ErrorObject(status); }

std::optional<absl::Duration> ParseTimeout(absl::string_view header) {
  if (header.empty() || header.size() > 10 ||
      header.find_first_not_of("0123456789") != absl::string_view::npos) {
    return std::nullopt;
  }
  int64_t milliseconds = 0;
  if (!absl::SimpleAtoi(header, &milliseconds)) return std::nullopt;
  return absl::Milliseconds(milliseconds);
}

std::string Envelope(uint8_t flags, absl::string_view payload) {
  std::string out;
  out.reserve(5 + payload.size());
  const uint32_t size = static_cast<uint32_t>(payload.size());
  out.push_back(static_cast<char>(flags));
  out.push_back(static_cast<char>((size >> 24) & 0xff));
  out.push_back(static_cast<char>((size >> 16) & 0xff));
  out.push_back(static_cast<char>((size >> 8) & 0xff));
  out.push_back(static_cast<char>(size & 0xff));
  out.append(payload.data(), payload.size());
  return out;
}

std::optional<Enveloped> ParseSingleEnvelope(absl::string_view body) {
  if (body.size() < 5) return std::nullopt;
  const auto byte = [&](size_t i) { return static_cast<uint32_t>(static_cast<uint8_t>(body[i])); };
  const uint32_t size = (byte(1) << 24) | (byte(2) << 16) | (byte(3) << 8) | byte(4);
  if (body.size() - 5 != size) return std::nullopt;
  return Enveloped{static_cast<uint8_t>(body[0]), std::string(body.substr(5))};
}

std::string EndStreamJson(const grpc::Status& status,
                          const std::multimap<std::string, std::string>& trailers) {
  std::string out = "{";
  if (!status.ok()) out += "\"error\":" + ErrorObject(status);
  if (!trailers.empty()) {
    out += status.ok() ? "\"metadata\":{" : ",\"metadata\":{";
    for (auto it = trailers.begin(); it != trailers.end();) {
      const std::string& key = it->first;
      out += it == trailers.begin() ? "" : ",";
      out += Quote(key) + ":[";
      bool first = true;
      for (; it != trailers.end() && it->first == key; ++it) {
        out += (first ? "" : ",") + Quote(it->second);
        first = false;
      }
      out += "]";
    }
    out += "}";
  }
  return out + "}";
}

}  // namespace dcl::connect
