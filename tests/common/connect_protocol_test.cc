// The Connect protocol's wire facts as connect_protocol.h spells them: every code's name and
// HTTP status, the error body carrying exactly the details ToGrpcStatus packed, envelopes, the
// end-of-stream message, content types and timeouts. Pure: no server, no database.
#include <catch2/catch.hpp>

#include <google/protobuf/util/json_util.h>
#include <google/protobuf/struct.pb.h>

#include "absl/strings/escaping.h"
#include "google/rpc/status.pb.h"
#include "services/common/connect_protocol.h"
#include "services/common/grpc_status.h"
#include "services/common/status.h"

namespace dcl {
namespace {

google::protobuf::Struct ParseJson(const std::string& json) {
  google::protobuf::Struct parsed;
  REQUIRE(google::protobuf::util::JsonStringToMessage(json, &parsed).ok());
  return parsed;
}

TEST_CASE("every gRPC code has Connect's name and HTTP status") {
  struct Row {
    grpc::StatusCode code;
    const char* name;
    int http;
  };
  // connectrpc.com/docs/protocol, "Error Codes".
  const Row rows[] = {
      {grpc::StatusCode::CANCELLED, "canceled", 499},
      {grpc::StatusCode::UNKNOWN, "unknown", 500},
      {grpc::StatusCode::INVALID_ARGUMENT, "invalid_argument", 400},
      {grpc::StatusCode::DEADLINE_EXCEEDED, "deadline_exceeded", 504},
      {grpc::StatusCode::NOT_FOUND, "not_found", 404},
      {grpc::StatusCode::ALREADY_EXISTS, "already_exists", 409},
      {grpc::StatusCode::PERMISSION_DENIED, "permission_denied", 403},
      {grpc::StatusCode::RESOURCE_EXHAUSTED, "resource_exhausted", 429},
      {grpc::StatusCode::FAILED_PRECONDITION, "failed_precondition", 400},
      {grpc::StatusCode::ABORTED, "aborted", 409},
      {grpc::StatusCode::OUT_OF_RANGE, "out_of_range", 400},
      {grpc::StatusCode::UNIMPLEMENTED, "unimplemented", 501},
      {grpc::StatusCode::INTERNAL, "internal", 500},
      {grpc::StatusCode::UNAVAILABLE, "unavailable", 503},
      {grpc::StatusCode::DATA_LOSS, "data_loss", 500},
      {grpc::StatusCode::UNAUTHENTICATED, "unauthenticated", 401},
  };
  for (const Row& row : rows) {
    INFO(row.name);
    CHECK(connect::CodeName(row.code) == row.name);
    CHECK(connect::HttpStatusOf(row.code) == row.http);
  }
  CHECK(connect::CodeName(static_cast<grpc::StatusCode>(99)) == "unknown");
  CHECK(connect::HttpStatusOf(static_cast<grpc::StatusCode>(99)) == 500);
}

TEST_CASE("the error body carries ToGrpcStatus's ErrorInfo and ErrorDetail, decodable from value") {
  Error refusal(absl::StatusCode::kFailedPrecondition, v1::UNIT_OCCUPIED, "front U9 is \"taken\"");
  v1::Slot* slot = refusal.detail().add_colliding_slots();
  slot->set_side(v1::SIDE_FRONT);
  slot->set_unit(9);
  const grpc::Status status = ToGrpcStatus(refusal);
  const std::string json = connect::ErrorJson(status);
  CHECK(json.rfind("{\"code\":\"failed_precondition\",\"message\":", 0) == 0);  // code first
  const google::protobuf::Struct body = ParseJson(json);
  CHECK(body.fields().at("message").string_value() == "front U9 is \"taken\"");
  const auto& details = body.fields().at("details").list_value().values();
  REQUIRE(details.size() == 2);
  CHECK(details[0].struct_value().fields().at("type").string_value() == "google.rpc.ErrorInfo");
  CHECK(details[1].struct_value().fields().at("type").string_value() == "dcl.v1.ErrorDetail");
  std::string value = details[1].struct_value().fields().at("value").string_value();
  CHECK(value.find('=') == std::string::npos);  // base64 without padding
  while (value.size() % 4 != 0) value.push_back('=');
  std::string bytes;
  REQUIRE(absl::Base64Unescape(value, &bytes));
  v1::ErrorDetail detail;
  REQUIRE(detail.ParseFromString(bytes));
  CHECK(detail.reason() == v1::UNIT_OCCUPIED);
  REQUIRE(detail.colliding_slots_size() == 1);
  CHECK(detail.colliding_slots(0).unit() == 9);
  CHECK(details[0].struct_value().fields().at("debug").struct_value().fields().at("reason")
            .string_value() == "UNIT_OCCUPIED");
}

TEST_CASE("a status without details is just code and message") {
  CHECK(connect::ErrorJson(grpc::Status(grpc::StatusCode::UNAVAILABLE, "down")) ==
        "{\"code\":\"unavailable\",\"message\":\"down\"}");
  CHECK(connect::ErrorJson(grpc::Status(grpc::StatusCode::ABORTED, "")) == "{\"code\":\"aborted\"}");
}

TEST_CASE("envelopes: flags, big-endian length, exactly one message") {
  const std::string frame = connect::Envelope(connect::kFlagEndStream, "{}");
  CHECK(frame == std::string("\x02\x00\x00\x00\x02{}", 7));
  const std::optional<connect::Enveloped> parsed = connect::ParseSingleEnvelope(frame);
  REQUIRE(parsed.has_value());
  CHECK(parsed->flags == connect::kFlagEndStream);
  CHECK(parsed->payload == "{}");
  const std::string big(70000, 'x');
  CHECK(connect::ParseSingleEnvelope(connect::Envelope(0, big))->payload == big);
  CHECK_FALSE(connect::ParseSingleEnvelope(frame + "x").has_value());      // trailing bytes
  CHECK_FALSE(connect::ParseSingleEnvelope(frame.substr(0, 6)).has_value());  // cut short
  CHECK_FALSE(connect::ParseSingleEnvelope("").has_value());
  CHECK_FALSE(connect::ParseSingleEnvelope(std::string("\0\xff\xff\xff\xff", 5)).has_value());
}

TEST_CASE("the end of a stream: {} when OK, the error and the trailers otherwise") {
  CHECK(connect::EndStreamJson(grpc::Status::OK, {}) == "{}");
  const std::string end = connect::EndStreamJson(
      grpc::Status(grpc::StatusCode::NOT_FOUND, "no such move"), {{"k", "a"}, {"k", "b"}, {"z", "c"}});
  CHECK(end ==
        "{\"error\":{\"code\":\"not_found\",\"message\":\"no such move\"},"
        "\"metadata\":{\"k\":[\"a\",\"b\"],\"z\":[\"c\"]}}");
}

TEST_CASE("content types and timeouts") {
  CHECK(connect::ParseContentType("application/json")->codec == connect::Codec::kJson);
  CHECK_FALSE(connect::ParseContentType("application/json")->streaming);
  CHECK(connect::ParseContentType("Application/JSON; charset=utf-8").has_value());
  CHECK_FALSE(connect::ParseContentType("application/json; charset=latin1").has_value());
  CHECK(connect::ParseContentType("application/proto")->codec == connect::Codec::kProto);
  CHECK(connect::ParseContentType("application/connect+json")->streaming);
  CHECK_FALSE(connect::ParseContentType("text/plain").has_value());
  CHECK_FALSE(connect::ParseContentType("").has_value());
  CHECK(connect::ContentTypeHeader({connect::Codec::kJson, true}) == "application/connect+json");
  CHECK(connect::ParseTimeout("1500") == absl::Milliseconds(1500));
  CHECK_FALSE(connect::ParseTimeout("").has_value());
  CHECK_FALSE(connect::ParseTimeout("-1").has_value());
  CHECK_FALSE(connect::ParseTimeout("12345678901").has_value());  // more than 10 digits
  CHECK_FALSE(connect::ParseTimeout("1e3").has_value());
}

}  // namespace
}  // namespace dcl
