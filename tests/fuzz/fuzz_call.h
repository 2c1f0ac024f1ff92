// One call of the RPC fuzzer: any method of the servers called by its descriptor (unary or a
// server stream, with the caller's authorization), and its answer read into one comparable
// record (code, ErrorInfo reason and metadata, ErrorDetail, the response as text).
#ifndef DCL_TESTS_FUZZ_FUZZ_CALL_H_
#define DCL_TESTS_FUZZ_FUZZ_CALL_H_

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "tests/fuzz/request_generator.h"

namespace dcl::fuzz {

using google::protobuf::Message;
using google::protobuf::MethodDescriptor;
using Clock = std::chrono::steady_clock;

constexpr auto kUnaryDeadline = std::chrono::seconds(30);

struct Answer {
  grpc::StatusCode code = grpc::StatusCode::OK;
  std::string message;
  bool has_error_info = false;
  bool has_error_detail = false;
  std::string reason;  // ErrorInfo.reason
  std::string domain;
  std::map<std::string, std::string> metadata;
  std::string detail_reason;  // ErrorDetail.reason, by name
  std::string detail_text;
  std::string body_text;  // OK: the response (each streamed message, one per line)
  int streamed = 0;
  bool skipped = false;  // not sent: the run stopped while the server was down

  // "NOT_FOUND/NOT_FOUND 'device … not found' {id=…}".
  std::string Describe() const;
};

// The message in protobuf's single-line text form, long strings truncated.
std::string Text(const Message& message);
Answer ReadStatus(const grpc::Status& status);

// Strict UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF), as protobuf
// requires of proto3 string fields.
bool IsValidUtf8(const std::string& text);
bool HasInvalidUtf8(const Message& message);

// Whether the method reads (or plans) and writes nothing.
bool IsReading(const MethodDescriptor& method);
Answer Invoke(const MethodDescriptor& method, const Message& request, const Caller& caller,
              const std::shared_ptr<grpc::Channel>& channel, int watch_deadline_ms);

}  // namespace dcl::fuzz

#endif  // DCL_TESTS_FUZZ_FUZZ_CALL_H_
