#include "tests/fuzz/fuzz_report.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace dcl::fuzz {

IdLegend BuildLegend(const World& world) {
  IdLegend legend;
  for (const SeededOrg* org : {&world.attacker, &world.victim, &world.third, &world.dormant}) {
    legend[org->id] = absl::StrCat(org->name, " organization");
    for (const SeededObject& object : org->objects) {
      legend[object.id] =
          absl::StrCat(org->name, " ", object.kind, " [", absl::StrJoin(object.tags, " "), "]");
    }
  }
  return legend;
}

std::string Legend(const IdLegend& legend, const std::string& text) {
  std::vector<std::string> found;
  for (const auto& [id, what] : legend) {
    if (absl::StrContains(text, id)) found.push_back(absl::StrCat(id.substr(0, 8), "…=", what));
  }
  return found.empty() ? "" : absl::StrCat("\n      ids: ", absl::StrJoin(found, "; "));
}

std::string Locate(const CallRecord& call) {
  return absl::StrCat("thread ", call.thread, " call #", call.index, " (", call.origin, ") as ",
                      call.caller.label);
}

void Report::Fail(const std::string& failure_class, const std::string& example) {
  std::lock_guard<std::mutex> lock(mu_);
  FailureClass& entry = failures_[failure_class];
  ++entry.count;
  if (static_cast<int>(entry.examples.size()) < examples_) entry.examples.push_back(example);
}

void Report::Unavailable(const std::string& service, CallRecord call) {
  std::lock_guard<std::mutex> lock(mu_);
  unavailable_[service].push_back(std::move(call));
}

std::vector<CallRecord> Report::UnavailableFrom(const std::string& service) {
  std::lock_guard<std::mutex> lock(mu_);
  return unavailable_[service];
}

bool Report::failed() {
  std::lock_guard<std::mutex> lock(mu_);
  return !failures_.empty();
}

void Report::Print(std::ostream& out) {
  std::lock_guard<std::mutex> lock(mu_);
  if (failures_.empty()) {
    out << "no assertion failed\n";
    return;
  }
  out << "FAILED: " << failures_.size() << " failure class(es)\n";
  for (const auto& [name, entry] : failures_) {
    out << "\n[" << entry.count << "x] " << name << "\n";
    for (const std::string& example : entry.examples) out << "    " << example << "\n";
  }
}

}  // namespace dcl::fuzz
