// The Connect protocol's wire facts (connectrpc.com/docs/protocol), as pure functions: content
// types, the code names and their HTTP statuses, the JSON error body, the envelope of a
// streaming message and the end-of-stream message. No rule of dcl lives here: a status arrives
// already converted by ToGrpcStatus (grpc_status.h) and is only re-spelled for HTTP.
#ifndef DCL_SERVICES_COMMON_CONNECT_PROTOCOL_H_
#define DCL_SERVICES_COMMON_CONNECT_PROTOCOL_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <grpcpp/support/status.h>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace dcl::connect {

// How a request's body is encoded, read from its Content-Type.
enum class Codec { kJson, kProto };
struct ContentType {
  Codec codec;
  bool streaming;  // application/connect+json|proto: enveloped messages
};
// "application/json", "application/json; charset=utf-8", "application/proto",
// "application/connect+json", "application/connect+proto"; nullopt for anything else (the
// server then answers 415).
std::optional<ContentType> ParseContentType(absl::string_view header);
// The Content-Type of an answer in `type`'s codec and form.
std::string ContentTypeHeader(const ContentType& type);

// "invalid_argument", "failed_precondition", ... (Connect spells "canceled" with one l).
std::string CodeName(grpc::StatusCode code);
// The HTTP status of a unary error with `code`, by Connect's table (400, 401, 403, 404, 409,
// 429, 499, 500, 501, 503, 504).
int HttpStatusOf(grpc::StatusCode code);

// The error body {"code","message","details":[{"type","value","debug"}]}: one entry per Any of
// the google.rpc.Status in the status's binary details (ErrorInfo, dcl.v1.ErrorDetail), with
// the type name without its URL prefix and the serialized message in base64 without padding.
// "debug" is the same message in protobuf's JSON mapping, for people reading it with curl;
// clients decode "value".
std::string ErrorJson(const grpc::Status& status);

// Connect-Timeout-Ms: up to 10 ASCII digits; nullopt when absent or malformed (then ignored:
// the server's own limits apply).
std::optional<absl::Duration> ParseTimeout(absl::string_view header);

// One enveloped message of a streaming body: a flags byte, a 4-byte big-endian length, the
// bytes.
inline constexpr uint8_t kFlagCompressed = 0x01;
inline constexpr uint8_t kFlagEndStream = 0x02;
std::string Envelope(uint8_t flags, absl::string_view payload);
struct Enveloped {
  uint8_t flags = 0;
  std::string payload;
};
// Exactly one envelope filling `body`; nullopt when `body` is anything else (short, long,
// trailing bytes).
std::optional<Enveloped> ParseSingleEnvelope(absl::string_view body);

// The JSON of the end-of-stream message: {"error":{...}} unless `status` is OK, and
// "metadata" with the trailing metadata, each key to a list of values.
std::string EndStreamJson(const grpc::Status& status,
                          const std::multimap<std::string, std::string>& trailers);

}  // namespace dcl::connect

#endif  // DCL_SERVICES_COMMON_CONNECT_PROTOCOL_H_
