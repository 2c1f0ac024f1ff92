// One calling thread of the RPC fuzzer and the checks on every answer: documented for its RPC
// (code and reason, an ErrorDetail on a refusal), never INTERNAL or UNKNOWN, and a request that
// names another organization's id answered exactly like the same request with an unknown id.
#ifndef DCL_TESTS_FUZZ_FUZZ_WORKER_H_
#define DCL_TESTS_FUZZ_FUZZ_WORKER_H_

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "tests/fuzz/documented_outcomes.h"
#include "tests/fuzz/fuzz_call.h"
#include "tests/fuzz/fuzz_report.h"
#include "tests/fuzz/request_generator.h"

namespace dcl::fuzz {

struct Shared {
  const RequestGenerator* generator;
  const std::map<std::string, OutcomeSet>* outcomes;
  const IdLegend* legend;
  std::map<std::string, int> ports;                      // service full name → port
  std::map<std::string, const std::atomic<bool>*> down;  // service full name → restarting
  Report* report;
  std::atomic<bool> stop{false};
  std::atomic<int64_t> calls{0};
  std::atomic<int64_t> foreign_id_checks{0};  // requests naming a V id, compared
  uint64_t seed = 0;
  int64_t quota = 0;  // calls per thread; 0 = until stopped
  int watch_deadline_ms = 150;
};

// Replaces every id of `ids` (any case) in `text` by "<ID>".
std::string Mask(std::string text, const std::set<std::string>& ids);

// The answer as the differential check compares it, `ids` masked.
std::string Comparable(const MethodDescriptor& method, const Answer& answer,
                       const std::set<std::string>& ids);

class Worker {
 public:
  Worker(Shared& shared, int index);

  void Run(std::map<std::string, int64_t>* histogram);

 private:
  static Rng SeedFor(uint64_t seed, int index, int stream);

  Answer Send(const MethodDescriptor& method, const Message& request, const Caller& caller,
              const CallRecord& record);

  void Check(const MethodDescriptor& method, const CallRecord& record, const Answer& answer);

  void OneCall(const GeneratedCall& call, std::map<std::string, int64_t>* histogram);

  Shared& shared_;
  const int index_;
  Rng rng_;              // the request sequence: independent of the answers
  Rng replacement_rng_;  // the fresh UUIDs of the differential check
  int64_t calls_ = 0;
  std::map<std::string, std::shared_ptr<grpc::Channel>> channels_;
};

}  // namespace dcl::fuzz

#endif  // DCL_TESTS_FUZZ_FUZZ_WORKER_H_
