#include "tests/fuzz/documented_outcomes.h"

#include <stdexcept>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"
#include "dcl/v1/common.pb.h"

namespace dcl::fuzz {
namespace {

constexpr std::pair<grpc::StatusCode, const char*> kCodeNames[] = {
    {grpc::StatusCode::OK, "OK"},
    {grpc::StatusCode::CANCELLED, "CANCELLED"},
    {grpc::StatusCode::UNKNOWN, "UNKNOWN"},
    {grpc::StatusCode::INVALID_ARGUMENT, "INVALID_ARGUMENT"},
    {grpc::StatusCode::DEADLINE_EXCEEDED, "DEADLINE_EXCEEDED"},
    {grpc::StatusCode::NOT_FOUND, "NOT_FOUND"},
    {grpc::StatusCode::ALREADY_EXISTS, "ALREADY_EXISTS"},
    {grpc::StatusCode::PERMISSION_DENIED, "PERMISSION_DENIED"},
    {grpc::StatusCode::RESOURCE_EXHAUSTED, "RESOURCE_EXHAUSTED"},
    {grpc::StatusCode::FAILED_PRECONDITION, "FAILED_PRECONDITION"},
    {grpc::StatusCode::ABORTED, "ABORTED"},
    {grpc::StatusCode::OUT_OF_RANGE, "OUT_OF_RANGE"},
    {grpc::StatusCode::UNIMPLEMENTED, "UNIMPLEMENTED"},
    {grpc::StatusCode::INTERNAL, "INTERNAL"},
    {grpc::StatusCode::UNAVAILABLE, "UNAVAILABLE"},
    {grpc::StatusCode::DATA_LOSS, "DATA_LOSS"},
    {grpc::StatusCode::UNAUTHENTICATED, "UNAUTHENTICATED"},
};

grpc::StatusCode ParseCode(const std::string& name) {
  for (const auto& [code, code_name] : kCodeNames) {
    if (name == code_name) return code;
  }
  throw std::runtime_error("unknown status code in the outcome table: " + name);
}

void AddEntries(const std::string& text, OutcomeSet* out) {
  for (absl::string_view entry : absl::StrSplit(text, ';', absl::SkipWhitespace())) {
    std::vector<std::string> parts = absl::StrSplit(entry, absl::MaxSplits(':', 1));
    const grpc::StatusCode code = ParseCode(std::string(absl::StripAsciiWhitespace(parts[0])));
    if (parts.size() == 1) {
      out->insert({code, "*"});
      continue;
    }
    for (absl::string_view reason : absl::StrSplit(parts[1], ' ', absl::SkipWhitespace())) {
      v1::Reason parsed;
      if (!v1::Reason_Parse(std::string(reason), &parsed)) {
        throw std::runtime_error("unknown reason in the outcome table: " + std::string(reason));
      }
      out->insert({code, std::string(reason)});
    }
  }
}

}  // namespace

std::map<std::string, OutcomeSet> ParseDocumentedOutcomes() {
  std::map<std::string, OutcomeSet> table;
  for (const RpcOutcomes& rpc : kRpcOutcomes) {
    OutcomeSet& set = table[rpc.method];
    AddEntries(kEveryRpcOutcomes, &set);
    AddEntries(rpc.outcomes, &set);
  }
  return table;
}

bool IsAllowed(const OutcomeSet& allowed, grpc::StatusCode code, const std::string& reason) {
  return allowed.count({code, "*"}) > 0 || allowed.count({code, reason}) > 0;
}

const char* CodeName(grpc::StatusCode code) {
  for (const auto& [known, name] : kCodeNames) {
    if (known == code) return name;
  }
  return "CODE_OUT_OF_RANGE";
}

}  // namespace dcl::fuzz
