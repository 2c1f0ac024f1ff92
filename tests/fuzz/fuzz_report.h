// What the RPC fuzzer found: failure classes with a few examples each, the calls a server
// answered UNAVAILABLE (the suspects when it died), and the legend that names the seeded objects
// behind the ids a report shows.
#ifndef DCL_TESTS_FUZZ_FUZZ_REPORT_H_
#define DCL_TESTS_FUZZ_FUZZ_REPORT_H_

#include <google/protobuf/message.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <ostream>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_call.h"
#include "tests/fuzz/fuzz_world.h"
#include "tests/fuzz/request_generator.h"

namespace dcl::fuzz {

struct FailureClass {
  int64_t count = 0;
  std::vector<std::string> examples;
};

// "8d1c7cca-…" → "attacker rack [asc42 asc rear site1]": the seeded objects a report names.
using IdLegend = std::map<std::string, std::string>;

IdLegend BuildLegend(const World& world);

// "; ids: 8d1c7cca-…=attacker rack [asc42 …]" for every seeded id that `text` contains.
std::string Legend(const IdLegend& legend, const std::string& text);

struct CallRecord {
  const Message* message = nullptr;  // valid while the call is checked
  std::string rpc;
  Caller caller;
  std::string origin;
  std::string request;        // text form (long strings truncated)
  std::string request_bytes;  // the exact request, kept for calls answered UNAVAILABLE
  int thread = 0;
  int64_t index = 0;  // the thread's call number
  Clock::time_point at;
};

// "thread T call #N (origin) as caller": where a call came from, to replay it.
std::string Locate(const CallRecord& call);

class Report {
 public:
  explicit Report(int examples) : examples_(examples) {}

  void Fail(const std::string& failure_class, const std::string& example);
  // Calls answered UNAVAILABLE: what was in flight when a server died (or a failure of its own).
  void Unavailable(const std::string& service, CallRecord call);
  std::vector<CallRecord> UnavailableFrom(const std::string& service);
  bool failed();
  void Print(std::ostream& out);

 private:
  std::mutex mu_;
  const int examples_;
  std::map<std::string, FailureClass> failures_;
  std::map<std::string, std::vector<CallRecord>> unavailable_;
};

}  // namespace dcl::fuzz

#endif  // DCL_TESTS_FUZZ_FUZZ_REPORT_H_
