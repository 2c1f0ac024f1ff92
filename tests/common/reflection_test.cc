// Server reflection (what grpcurl uses) lists the served services, and --reflection=false turns
// it off. Debian ships no reflection .proto to link beside grpc++_reflection (a second copy of
// its descriptor aborts at start-up), so the request and the answer are handled as raw bytes.
#include <catch2/catch.hpp>

#include <string>

#include <grpcpp/grpcpp.h>
#include <grpcpp/support/sync_stream.h>

#include "dcl/v1/moves.grpc.pb.h"
#include "tests/support/grpc_harness.h"

namespace dcl {
namespace {

constexpr char kReflectionMethod[] =
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo";

// Sends ServerReflectionRequest{list_services: ""} (field 7) and returns the raw answer, or the
// status when the call fails.
grpc::Status ListServices(const std::shared_ptr<grpc::Channel>& channel, std::string* answer) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::internal::RpcMethod method(kReflectionMethod,
                                   grpc::internal::RpcMethod::BIDI_STREAMING);
  std::unique_ptr<grpc::ClientReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer>> stream(
      grpc::internal::ClientReaderWriterFactory<grpc::ByteBuffer, grpc::ByteBuffer>::Create(
          channel.get(), method, &context));
  const std::string request("\x3a\x00", 2);
  grpc::Slice slice(request);
  grpc::ByteBuffer out(&slice, 1);
  stream->Write(out);
  stream->WritesDone();
  grpc::ByteBuffer in;
  while (stream->Read(&in)) {
    std::vector<grpc::Slice> slices;
    REQUIRE(in.Dump(&slices).ok());
    for (const grpc::Slice& s : slices) {
      answer->append(reinterpret_cast<const char*>(s.begin()), s.size());
    }
  }
  return stream->Finish();
}

class EmptyMoveService final : public v1::MoveService::Service {};

TEST_CASE("reflection is off with --reflection=false and lists the services when on") {
  EmptyMoveService service;
  {
    ServerConfig config;
    config.reflection = false;
    testing::InProcessServer server(nullptr, {{"dcl.v1.MoveService", &service}}, config);
    std::string answer;
    CHECK(ListServices(server.Channel(), &answer).error_code() ==
          grpc::StatusCode::UNIMPLEMENTED);
  }
  {
    testing::InProcessServer server(nullptr, {{"dcl.v1.MoveService", &service}});
    std::string answer;
    REQUIRE(ListServices(server.Channel(), &answer).ok());
    CHECK(answer.find("dcl.v1.MoveService") != std::string::npos);
    CHECK(answer.find("grpc.health.v1.Health") != std::string::npos);
  }
  {  // and off again, after a server of this process had it on
    ServerConfig config;
    config.reflection = false;
    testing::InProcessServer server(nullptr, {{"dcl.v1.MoveService", &service}}, config);
    std::string answer;
    CHECK(ListServices(server.Channel(), &answer).error_code() ==
          grpc::StatusCode::UNIMPLEMENTED);
  }
}

}  // namespace
}  // namespace dcl
