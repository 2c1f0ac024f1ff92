#include "tests/fuzz/fuzz_call.h"

#include <google/protobuf/text_format.h>
#include <grpcpp/impl/codegen/client_unary_call.h>
#include <grpcpp/impl/codegen/proto_utils.h>
#include <grpcpp/impl/codegen/sync_stream.h>

#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dcl/v1/common.pb.h"
#include "google/rpc/status.pb.h"
#include "tests/fuzz/documented_outcomes.h"

namespace dcl::fuzz {

std::string Answer::Describe() const {
  std::string out = absl::StrCat(CodeName(code), reason.empty() ? "" : "/", reason);
  if (code != grpc::StatusCode::OK) {
    std::vector<std::string> meta;
    for (const auto& [key, value] : metadata) meta.push_back(absl::StrCat(key, "=", value));
    absl::StrAppend(&out, " message='", message, "' metadata={", absl::StrJoin(meta, ", "), "}");
    if (!detail_text.empty()) absl::StrAppend(&out, " detail={", detail_text, "}");
  }
  if (!body_text.empty()) absl::StrAppend(&out, " response={", body_text, "}");
  return out;
}

std::string Text(const Message& message) {
  google::protobuf::TextFormat::Printer printer;
  printer.SetSingleLineMode(true);
  printer.SetTruncateStringFieldLongerThan(80);
  std::string out;
  printer.PrintToString(message, &out);
  if (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

Answer ReadStatus(const grpc::Status& status) {
  Answer answer;
  answer.code = status.error_code();
  answer.message = status.error_message();
  google::rpc::Status rpc_status;
  if (!status.error_details().empty() && rpc_status.ParseFromString(status.error_details())) {
    for (const auto& any : rpc_status.details()) {
      google::rpc::ErrorInfo info;
      v1::ErrorDetail detail;
      if (any.Is<google::rpc::ErrorInfo>() && any.UnpackTo(&info)) {
        answer.has_error_info = true;
        answer.reason = info.reason();
        answer.domain = info.domain();
        answer.metadata.insert(info.metadata().begin(), info.metadata().end());
      } else if (any.Is<v1::ErrorDetail>() && any.UnpackTo(&detail)) {
        answer.has_error_detail = true;
        answer.detail_reason = v1::Reason_Name(detail.reason());
        answer.detail_text = Text(detail);
      }
    }
  }
  return answer;
}

bool IsValidUtf8(const std::string& text) {
  size_t i = 0;
  while (i < text.size()) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    int length = 0;
    uint32_t code = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xe0) == 0xc0) {
      length = 2;
      code = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      length = 3;
      code = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      length = 4;
      code = c & 0x07;
    } else {
      return false;
    }
    if (i + length > text.size()) return false;
    for (int k = 1; k < length; ++k) {
      const unsigned char next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xc0) != 0x80) return false;
      code = (code << 6) | (next & 0x3f);
    }
    const uint32_t minimum[] = {0, 0, 0x80, 0x800, 0x10000};
    if (code < minimum[length] || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) {
      return false;
    }
    i += length;
  }
  return true;
}

bool HasInvalidUtf8(const Message& message) {
  const auto* reflection = message.GetReflection();
  std::vector<const google::protobuf::FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  for (const auto* field : fields) {
    if (field->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE) {
      if (field->is_repeated()) {
        for (int i = 0; i < reflection->FieldSize(message, field); ++i) {
          if (HasInvalidUtf8(reflection->GetRepeatedMessage(message, field, i))) return true;
        }
      } else if (HasInvalidUtf8(reflection->GetMessage(message, field))) {
        return true;
      }
    } else if (field->type() == google::protobuf::FieldDescriptor::TYPE_STRING) {
      if (field->is_repeated()) {
        for (int i = 0; i < reflection->FieldSize(message, field); ++i) {
          if (!IsValidUtf8(reflection->GetRepeatedString(message, field, i))) return true;
        }
      } else if (!IsValidUtf8(reflection->GetString(message, field))) {
        return true;
      }
    }
  }
  return false;
}

bool IsReading(const MethodDescriptor& method) {
  // The services' naming: these read (or plan) and write nothing, so their bodies must not
  // depend on whether an id is another organization's or unknown.
  for (const char* prefix : {"Get", "List", "Plan", "Watch"}) {
    if (absl::StartsWith(method.name(), prefix)) return true;
  }
  return false;
}

Answer Invoke(const MethodDescriptor& method, const Message& request, const Caller& caller,
              const std::shared_ptr<grpc::Channel>& channel, int watch_deadline_ms) {
  const std::string path = absl::StrCat("/", method.service()->full_name(), "/", method.name());
  grpc::ClientContext context;
  // A call made while a server restarts waits for it instead of failing fast.
  context.set_wait_for_ready(true);
  if (caller.send_authorization) context.AddMetadata("authorization", caller.authorization);
  std::unique_ptr<Message> response(google::protobuf::MessageFactory::generated_factory()
                                        ->GetPrototype(method.output_type())
                                        ->New());
  if (method.server_streaming()) {
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::milliseconds(watch_deadline_ms));
    std::unique_ptr<grpc::ClientReader<Message>> reader(
        grpc::internal::ClientReaderFactory<Message>::Create(
            channel.get(),
            grpc::internal::RpcMethod(path.c_str(), grpc::internal::RpcMethod::SERVER_STREAMING),
            &context, request));
    std::vector<std::string> events;
    while (reader->Read(response.get())) events.push_back(Text(*response));
    Answer answer = ReadStatus(reader->Finish());
    answer.streamed = static_cast<int>(events.size());
    answer.body_text = absl::StrJoin(events, " | ");
    return answer;
  }
  context.set_deadline(std::chrono::system_clock::now() + kUnaryDeadline);
  const grpc::Status status = grpc::internal::BlockingUnaryCall<Message, Message>(
      channel.get(), grpc::internal::RpcMethod(path.c_str(), grpc::internal::RpcMethod::NORMAL_RPC),
      &context, request, response.get());
  Answer answer = ReadStatus(status);
  if (status.ok()) answer.body_text = Text(*response);
  return answer;
}

}  // namespace dcl::fuzz
