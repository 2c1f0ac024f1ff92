// The one absl::Status → grpc::Status conversion: code, reason, ErrorInfo, details.
#include <catch2/catch.hpp>

#include "google/rpc/status.pb.h"
#include "services/common/grpc_status.h"
#include "services/common/status.h"
#include "services/common/validation.h"

namespace dcl {
namespace {

TEST_CASE("a domain error reaches the client with its code, reason, metadata and details") {
  Error error(absl::StatusCode::kFailedPrecondition, v1::UNIT_OCCUPIED, "front U9 is taken");
  error.Meta("rack_id", "r-1");
  auto* slot = error.detail().add_colliding_slots();
  slot->set_side(v1::SIDE_FRONT);
  slot->set_unit(9);
  grpc::Status status = ToGrpcStatus(error);
  CHECK(status.error_code() == grpc::StatusCode::FAILED_PRECONDITION);
  CHECK(status.error_message() == "front U9 is taken");

  google::rpc::Status wire;
  REQUIRE(wire.ParseFromString(status.error_details()));
  CHECK(wire.code() == static_cast<int>(grpc::StatusCode::FAILED_PRECONDITION));
  REQUIRE(wire.details_size() == 2);
  google::rpc::ErrorInfo info;
  REQUIRE(wire.details(0).UnpackTo(&info));
  CHECK(info.reason() == "UNIT_OCCUPIED");
  CHECK(info.domain() == "dcl.v1");
  CHECK(info.metadata().at("rack_id") == "r-1");

  auto detail = ErrorDetailFromGrpc(status);
  REQUIRE(detail.has_value());
  REQUIRE(detail->colliding_slots_size() == 1);
  CHECK(detail->colliding_slots(0).unit() == 9);
}

TEST_CASE("a refusal too large for a gRPC client's headers keeps its code and reason, shortened") {
  Error error(absl::StatusCode::kFailedPrecondition, v1::OUT_OF_BOUNDS,
              std::string(20000, 'x') + "\xc3\xbc");
  error.Meta("rack_id", "r-1").Meta("long", std::string(9000, 'y'));
  for (int unit = 0; unit < 3000; ++unit) {
    v1::Slot* slot = error.detail().add_colliding_slots();
    slot->set_side(v1::SIDE_REAR);
    slot->set_unit(unit);
  }
  for (int i = 0; i < 5; ++i) error.detail().add_allowed_targets("normal");
  const grpc::Status status = ToGrpcStatus(error);
  CHECK(status.error_code() == grpc::StatusCode::FAILED_PRECONDITION);
  // The two headers a refusal travels in: grpc-message (ASCII here) and the base64 details.
  CHECK(status.error_message().size() + (status.error_details().size() + 2) / 3 * 4 <=
        kMaxRefusalHeaderBytes);
  CHECK(status.error_message().size() <= kMaxShortenedMessageBytes + 20);
  CHECK(status.error_message().rfind(std::string(100, 'x'), 0) == 0);
  google::rpc::Status wire;
  REQUIRE(wire.ParseFromString(status.error_details()));
  google::rpc::ErrorInfo info;
  REQUIRE(wire.details(0).UnpackTo(&info));
  CHECK(info.reason() == "OUT_OF_BOUNDS");
  CHECK(info.metadata().at("detail_shortened") == "true");
  const auto detail = ErrorDetailFromGrpc(status);
  REQUIRE(detail.has_value());
  CHECK(detail->reason() == v1::OUT_OF_BOUNDS);
  CHECK(detail->colliding_slots_size() > 0);
  CHECK(detail->colliding_slots_size() < 3000);
  CHECK(detail->colliding_slots(0).unit() == 0);  // the first ones are kept

  // A message cut inside a multi-byte character is cut before it.
  Error umlauts(absl::StatusCode::kFailedPrecondition, v1::OUT_OF_BOUNDS, "");
  std::string text;
  while (text.size() < 10000) text += "\xc3\xbc";
  umlauts.detail().set_message(text);
  const grpc::Status cut = ToGrpcStatus(umlauts);
  CHECK(CheckText("message", cut.error_message(), 10000, false).ok());

  // An ordinary refusal is left alone.
  Error small(absl::StatusCode::kFailedPrecondition, v1::UNIT_OCCUPIED, std::string(1500, 'z'));
  const auto untouched = ErrorDetailFromGrpc(ToGrpcStatus(small));
  REQUIRE(untouched.has_value());
  CHECK(untouched->message().size() == 1500);
  CHECK(untouched->metadata().count("detail_shortened") == 0);
}

TEST_CASE("a plain status without detail still gets a reason from its code") {
  grpc::Status status = ToGrpcStatus(absl::AbortedError("lost"));
  auto detail = ErrorDetailFromGrpc(status);
  REQUIRE(detail.has_value());
  CHECK(detail->reason() == v1::RETRY_TRANSACTION);
  CHECK(ToGrpcStatus(absl::OkStatus()).ok());
}

TEST_CASE("input checks name the field and refuse what does not fit") {
  CHECK(CheckId("device_id", "").code() == absl::StatusCode::kInvalidArgument);
  CHECK(CheckId("device_id", "123").code() == absl::StatusCode::kInvalidArgument);
  CHECK(CheckId("device_id", "0b7e4b1e-4c1a-4f6e-9d55-1f0f3a9c2d10").ok());
  CHECK(GetErrorDetail(CheckId("device_id", "x"))->metadata().at("field") == "device_id");
  CHECK(CheckText("note", std::string(2001, 'a'), kMaxNoteLength, false).code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK(CheckText("note", "", kMaxNoteLength, true).code() == absl::StatusCode::kInvalidArgument);
  CHECK(CheckText("note", std::string("a\0b", 3), kMaxNoteLength, false).code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK(CheckText("note", "\xff\xfe", kMaxNoteLength, false).code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK(CheckText("note", "\xc3", kMaxNoteLength, false).code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK(CheckText("note", "Gr\xc3\xbc\xc3\x9f" "e", kMaxNoteLength, true).ok());
}

}  // namespace
}  // namespace dcl
