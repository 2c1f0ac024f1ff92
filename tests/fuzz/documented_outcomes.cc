#include "tests/fuzz/documented_outcomes.h"

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
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
    for (absl::string_view reason : absl::StrSplit(parts[1], absl::ByAnyChar(" ,"),
                                                   absl::SkipWhitespace())) {
      v1::Reason parsed;
      if (!v1::Reason_Parse(std::string(reason), &parsed)) {
        throw std::runtime_error("unknown reason in the outcome table: " + std::string(reason));
      }
      out->insert({code, std::string(reason)});
    }
  }
}

// A cell of the table in the form AddEntries reads: commentary in parentheses and the
// backticks dropped.
std::string PlainEntries(absl::string_view cell) {
  std::string plain;
  int depth = 0;
  for (char c : cell) {
    if (c == '(') ++depth;
    if (depth == 0 && c != '`') plain.push_back(c);
    if (c == ')' && depth > 0) --depth;
  }
  if (depth != 0) throw std::runtime_error("unbalanced parentheses");
  return plain;
}

}  // namespace

std::map<std::string, OutcomeSet> ParseDocumentedOutcomes(const std::string& api_markdown) {
  std::map<std::string, OutcomeSet> table;
  bool in_section = false;
  bool in_table = false;
  std::istringstream lines(api_markdown);
  for (std::string line; std::getline(lines, line);) {
    if (absl::StartsWith(line, "## ")) {
      if (in_section) break;  // the next section: the table is behind us
      in_section = line == "## Status codes per RPC";
      continue;
    }
    if (!in_section) continue;
    if (!absl::StartsWith(line, "|")) {
      if (in_table) break;  // the table ended
      continue;
    }
    in_table = true;
    std::vector<std::string> cells = absl::StrSplit(line, '|');
    // "| a | b |" splits into "", " a ", " b ", "".
    if (cells.size() != 4 || !cells.front().empty() ||
        !absl::StripAsciiWhitespace(cells.back()).empty()) {
      throw std::runtime_error("docs/api.md: not a row of two cells: " + line);
    }
    const std::string name(absl::StripAsciiWhitespace(cells[1]));
    if (name == "RPC" || absl::StartsWith(name, "---")) continue;  // header and rule
    absl::string_view method = name;
    if (!absl::ConsumePrefix(&method, "`") || !absl::ConsumeSuffix(&method, "`") ||
        method.find('.') == absl::string_view::npos) {
      throw std::runtime_error("docs/api.md: an RPC is named `Service.Method`: " + line);
    }
    const std::string full = absl::StrCat("dcl.v1.", method);
    if (table.count(full) > 0) throw std::runtime_error("docs/api.md: named twice: " + line);
    OutcomeSet& set = table[full];
    try {
      AddEntries(kEveryRpcOutcomes, &set);
      AddEntries(PlainEntries(cells[2]), &set);
    } catch (const std::runtime_error& e) {
      throw std::runtime_error(absl::StrCat("docs/api.md: ", e.what(), ": ", line));
    }
  }
  if (table.empty()) {
    throw std::runtime_error("docs/api.md: no table under \"## Status codes per RPC\"");
  }
  return table;
}

std::map<std::string, OutcomeSet> ReadDocumentedOutcomes(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  return ParseDocumentedOutcomes(text.str());
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
