// A black-box fuzzer over every RPC of the three real server binaries (issue 10). It starts
// reservation_server, occupancy_server and moves_server as processes on a fresh database seeded
// with an attacker organization A, a victim organization V, a third organization and one with
// the module switched off (fuzz_world.h), sends seeded random and mutated requests for every
// method of the three services (request_generator.h) from several threads, and fails when
//   1. a server process exits;
//   2. an answer's code and reason are not documented for its RPC (documented_outcomes.h), or a
//      refusal carries no dcl.v1.ErrorDetail;
//   3. an answer is INTERNAL or UNKNOWN (the database is healthy throughout);
//   4. a row belonging to V changes (org_fingerprint.h, before and after);
//   5. a request naming one of V's ids is answered differently from the same request with that
//      id replaced by a fresh random UUID (code, reason, message, metadata and details, and for
//      reading RPCs the response body, with both ids masked): another organization's id must
//      read exactly like an unknown id;
//   6. a server's health is not SERVING at the end.
// Every thread draws its requests from its own RNG, derived from --seed and the thread's index,
// and independent of the answers: `--seed=S --only_thread=T` replays thread T's sequence.
//   rpc_fuzz_test [--seed=S] [--calls=N] [--seconds=S] [--threads=T] [--only_thread=T]
#include <google/protobuf/stubs/logging.h>
#include <google/protobuf/text_format.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/codegen/client_unary_call.h>
#include <grpcpp/impl/codegen/sync_stream.h>
#include <signal.h>
#include <string.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "dcl/v1/common.pb.h"
#include "dcl/v1/inventory.grpc.pb.h"
#include "dcl/v1/moves.grpc.pb.h"
#include "dcl/v1/occupancy.grpc.pb.h"
#include "dcl/v1/reservation.grpc.pb.h"
#include "google/rpc/status.pb.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "tests/fuzz/documented_outcomes.h"
#include "tests/fuzz/fuzz_world.h"
#include "tests/fuzz/org_fingerprint.h"
#include "tests/fuzz/request_generator.h"
#include "tests/support/child_process.h"
#include "tests/support/suite_processes.h"
#include "tests/support/test_db.h"

ABSL_FLAG(uint64_t, seed, 0, "the run's seed; 0 picks one from the clock (printed either way)");
ABSL_FLAG(int64_t, calls, 20000, "calls to send in total (0: no limit, use --seconds)");
ABSL_FLAG(double, seconds, 0, "stop after this many seconds (0: no time limit)");
ABSL_FLAG(int, threads, 6, "calling threads, each with its own RNG derived from the seed");
ABSL_FLAG(int, only_thread, -1, "run only this thread's sequence (to replay a report)");
ABSL_FLAG(int, watch_deadline_ms, 150, "client deadline of a WatchMove stream");
ABSL_FLAG(int, examples, 3, "examples printed per failure class");

namespace dcl::fuzz {
namespace {

using google::protobuf::Message;
using google::protobuf::MethodDescriptor;
using Clock = std::chrono::steady_clock;

constexpr auto kUnaryDeadline = std::chrono::seconds(30);

// ---------------------------------------------------------------------------------------------
// Answers.

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
  std::string Describe() const {
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
};

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

// Strict UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF), as protobuf
// requires of proto3 string fields.
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

// ---------------------------------------------------------------------------------------------
// The servers.

// A server that dies is restarted on its port (up to kMaxRestarts times) so that one run
// finds every class of failure, not only the first crash; the death itself is a failure.
constexpr int kMaxRestarts = 20;

struct Death {
  std::string how;               // "killed by signal 11 (Segmentation fault)"
  Clock::time_point last_alive;  // the last check that saw it running
  Clock::time_point detected;
  Clock::time_point restarted;  // when it served again (or the end of the run)
  std::string log_tail;
};

struct ServerProcess {
  std::string binary;   // workspace path, "services/occupancy/occupancy_server"
  std::string service;  // "dcl.v1.OccupancyService"
  std::unique_ptr<testing::ChildProcess> process;
  int port = 0;
  // Calls wait while it is down (being restarted).
  std::unique_ptr<std::atomic<bool>> down = std::make_unique<std::atomic<bool>>(false);
  Clock::time_point last_alive = Clock::now();
  std::vector<Death> deaths;
  bool gone = false;  // died and was not restarted
  std::vector<std::string> also;  // further services the same binary serves
  std::vector<std::string> all_services() const {
    std::vector<std::string> all = {service};
    all.insert(all.end(), also.begin(), also.end());
    return all;
  }
  std::string name() const { return binary.substr(binary.rfind('/') + 1); }
};

// Starts the server on `port` (0: any free port).
void Start(ServerProcess& server, const std::string& database_url, int port = 0) {
  server.process = std::make_unique<testing::ChildProcess>(
      testing::RunfilesBinary(server.binary),
      std::vector<std::string>{"--database_url=" + database_url,
                               absl::StrCat("--listen=127.0.0.1:", port)});
  server.port = testing::WaitForServingPort(*server.process, std::chrono::seconds(60));
  if (server.port == 0) {
    throw std::runtime_error(
        absl::StrCat(server.name(), " did not start:\n", server.process->Log()));
  }
}

// The last `lines` lines of `log`, indented for the report.
std::string LogTail(const std::string& log, int lines) {
  size_t pos = log.size();
  for (int i = 0; i <= lines && pos != std::string::npos && pos > 0; ++i) {
    pos = log.rfind('\n', pos - 1);
  }
  const std::string tail = pos == std::string::npos ? log : log.substr(pos + 1);
  return absl::StrCat("      ", absl::StrReplaceAll(absl::StripTrailingAsciiWhitespace(tail),
                                                    {{"\n", "\n      "}}));
}

// ---------------------------------------------------------------------------------------------
// Calling any method by its descriptor.

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

// ---------------------------------------------------------------------------------------------
// Failures and statistics.

struct FailureClass {
  int64_t count = 0;
  std::vector<std::string> examples;
};

// "8d1c7cca-…" → "attacker rack [asc42 asc rear site1]": the seeded objects a report names.
using IdLegend = std::map<std::string, std::string>;

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

// "; ids: 8d1c7cca-…=attacker rack [asc42 …]" for every seeded id that `text` contains.
std::string Legend(const IdLegend& legend, const std::string& text) {
  std::vector<std::string> found;
  for (const auto& [id, what] : legend) {
    if (absl::StrContains(text, id)) found.push_back(absl::StrCat(id.substr(0, 8), "…=", what));
  }
  return found.empty() ? "" : absl::StrCat("\n      ids: ", absl::StrJoin(found, "; "));
}

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

std::string Locate(const CallRecord& call) {
  return absl::StrCat("thread ", call.thread, " call #", call.index, " (", call.origin, ") as ",
                      call.caller.label);
}

class Report {
 public:
  explicit Report(int examples) : examples_(examples) {}

  void Fail(const std::string& failure_class, const std::string& example) {
    std::lock_guard<std::mutex> lock(mu_);
    FailureClass& entry = failures_[failure_class];
    ++entry.count;
    if (static_cast<int>(entry.examples.size()) < examples_) entry.examples.push_back(example);
  }
  // Calls answered UNAVAILABLE: what was in flight when a server died (or a failure of its own).
  void Unavailable(const std::string& service, CallRecord call) {
    std::lock_guard<std::mutex> lock(mu_);
    unavailable_[service].push_back(std::move(call));
  }
  std::vector<CallRecord> UnavailableFrom(const std::string& service) {
    std::lock_guard<std::mutex> lock(mu_);
    return unavailable_[service];
  }
  bool failed() {
    std::lock_guard<std::mutex> lock(mu_);
    return !failures_.empty();
  }
  void Print(std::ostream& out) {
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

 private:
  std::mutex mu_;
  const int examples_;
  std::map<std::string, FailureClass> failures_;
  std::map<std::string, std::vector<CallRecord>> unavailable_;
};

// ---------------------------------------------------------------------------------------------
// One calling thread.

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
std::string Mask(std::string text, const std::set<std::string>& ids) {
  for (const std::string& id : ids) {
    text = absl::StrReplaceAll(text, {{id, "<ID>"}, {absl::AsciiStrToUpper(id), "<ID>"}});
  }
  return text;
}

std::string Comparable(const MethodDescriptor& method, const Answer& answer,
                       const std::set<std::string>& ids) {
  std::vector<std::string> meta;
  for (const auto& [key, value] : answer.metadata) meta.push_back(absl::StrCat(key, "=", value));
  std::string out = absl::StrCat(CodeName(answer.code), "|", answer.reason, "|", answer.message,
                                 "|", absl::StrJoin(meta, ","), "|", answer.detail_text);
  if (answer.code == grpc::StatusCode::OK && IsReading(method)) {
    absl::StrAppend(&out, "|", answer.body_text);
  }
  return Mask(out, ids);
}

class Worker {
 public:
  Worker(Shared& shared, int index)
      : shared_(shared),
        index_(index),
        rng_(SeedFor(shared.seed, index, 0)),
        replacement_rng_(SeedFor(shared.seed, index, 1)) {
    for (const auto& [service, port] : shared.ports) {
      channels_[service] = testing::LocalChannel(port, index);
    }
  }

  void Run(std::map<std::string, int64_t>* histogram) {
    while (!shared_.stop.load() && (shared_.quota == 0 || calls_ < shared_.quota)) {
      GeneratedCall call = shared_.generator->Next(rng_);
      OneCall(call, histogram);
    }
  }

 private:
  static Rng SeedFor(uint64_t seed, int index, int stream) {
    std::seed_seq sequence{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32),
                           static_cast<uint32_t>(index), static_cast<uint32_t>(stream)};
    return Rng(sequence);
  }

  Answer Send(const MethodDescriptor& method, const Message& request, const Caller& caller,
              const CallRecord& record) {
    const std::string& service = method.service()->full_name();
    while (shared_.down.at(service)->load()) {
      if (shared_.stop.load()) {
        Answer skipped;
        skipped.skipped = true;
        return skipped;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ++calls_;
    shared_.calls.fetch_add(1);
    Answer answer =
        Invoke(method, request, caller, channels_.at(service), shared_.watch_deadline_ms);
    if (answer.code == grpc::StatusCode::UNAVAILABLE) {
      CallRecord unavailable = record;
      unavailable.message = nullptr;
      unavailable.at = Clock::now();
      unavailable.request_bytes = request.SerializeAsString();
      shared_.report->Unavailable(service, std::move(unavailable));
    }
    return answer;
  }

  void Check(const MethodDescriptor& method, const CallRecord& record, const Answer& answer) {
    const std::string rpc = method.full_name();
    const std::string where =
        absl::StrCat(Locate(record), ": ", rpc, " {", record.request, "} → ", answer.Describe(),
                     Legend(*shared_.legend, record.request));
    if (answer.code == grpc::StatusCode::UNAVAILABLE) return;  // judged after the run
    if (answer.code == grpc::StatusCode::INTERNAL || answer.code == grpc::StatusCode::UNKNOWN) {
      // The gate's INTERNAL always carries details; a bare one with an empty message is the
      // gRPC runtime refusing a request it cannot parse, before any service code runs.
      const bool unparsed = !answer.has_error_info && answer.message.empty();
      const bool bad_utf8 = HasInvalidUtf8(*record.message);
      shared_.report->Fail(
          absl::StrCat(
              "3. ", CodeName(answer.code), " answer",
              unparsed ? " without details (the request was not parsed: gRPC runtime)" : "",
              bad_utf8 ? " for a request with invalid UTF-8 in a string field" : "", ": ", rpc, " ",
              answer.reason),
          where);
      return;
    }
    auto allowed = shared_.outcomes->find(rpc);
    if (allowed == shared_.outcomes->end()) {
      shared_.report->Fail(absl::StrCat("2. RPC without documented outcomes: ", rpc), where);
    } else if (!IsAllowed(allowed->second, answer.code, answer.reason)) {
      shared_.report->Fail(absl::StrCat("2. undocumented outcome: ", rpc, " ",
                                        CodeName(answer.code), "/", answer.reason),
                           where);
    }
    // A refusal from the server carries the machine-readable reason twice, consistently; a
    // client's own deadline has none.
    if (answer.code != grpc::StatusCode::OK && answer.code != grpc::StatusCode::DEADLINE_EXCEEDED) {
      if (!answer.has_error_info || !answer.has_error_detail) {
        shared_.report->Fail(absl::StrCat("2. refusal without ErrorInfo/ErrorDetail: ", rpc, " ",
                                          CodeName(answer.code)),
                             where);
      } else if (answer.reason != answer.detail_reason || answer.domain != "dcl.v1") {
        shared_.report->Fail(absl::StrCat("2. ErrorInfo and ErrorDetail disagree: ", rpc), where);
      }
    }
  }

  void OneCall(const GeneratedCall& call, std::map<std::string, int64_t>* histogram) {
    const MethodDescriptor& method = *call.method;
    CallRecord record{call.request.get(),
                      method.full_name(),
                      call.caller,
                      call.origin,
                      Text(*call.request),
                      "",
                      index_,
                      calls_,
                      Clock::now()};
    const Answer answer = Send(method, *call.request, call.caller, record);
    if (answer.skipped) return;
    std::string key = absl::StrCat(method.service()->name(), ".", method.name(), " ",
                                   CodeName(answer.code), " ", answer.reason);
    if (method.name() == "PlanBooking" && answer.code == grpc::StatusCode::OK) {
      // The refusal of a plan travels inside the OK answer.
      const size_t at = answer.body_text.find("reason: ");
      absl::StrAppend(
          &key, "(rejection ",
          at == std::string::npos
              ? "none"
              : answer.body_text.substr(at + 8, answer.body_text.find(' ', at + 8) - at - 8),
          ")");
    }
    ++(*histogram)[key];
    Check(method, record, answer);

    // 5. Another organization's id must read exactly like an unknown one.
    const std::set<std::string> victim_ids = shared_.generator->VictimIdsIn(*call.request);
    if (victim_ids.empty() || answer.code == grpc::StatusCode::UNAVAILABLE) return;
    shared_.foreign_id_checks.fetch_add(1);
    std::string first, second, differing;
    // A race with another thread can change an answer between the two calls (A's own objects
    // change all the time); a leak answers differently every time. Up to three pairs.
    for (int attempt = 0; attempt < 3 && !shared_.stop.load(); ++attempt) {
      Answer with_victim = answer;
      if (attempt > 0) with_victim = Send(method, *call.request, call.caller, record);
      std::map<std::string, std::string> replacements;
      std::set<std::string> masked = victim_ids;
      for (const std::string& id : victim_ids) {
        replacements[id] = RequestGenerator::RandomUuid(replacement_rng_);
        masked.insert(replacements[id]);
      }
      std::unique_ptr<Message> unknown(call.request->New());
      unknown->CopyFrom(*call.request);
      RequestGenerator::ReplaceIds(unknown.get(), replacements);
      CallRecord unknown_record = record;
      unknown_record.message = unknown.get();
      unknown_record.request = Text(*unknown);
      const Answer with_unknown = Send(method, *unknown, call.caller, unknown_record);
      if (with_unknown.skipped || with_victim.skipped) return;
      Check(method, unknown_record, with_unknown);
      if (with_unknown.code == grpc::StatusCode::UNAVAILABLE ||
          with_victim.code == grpc::StatusCode::UNAVAILABLE) {
        return;
      }
      // A stream that met the client's deadline before the server said anything proves nothing
      // either way (a loaded server may take longer than the short watch deadline).
      auto silent_deadline = [](const Answer& a) {
        return a.code == grpc::StatusCode::DEADLINE_EXCEEDED && a.streamed == 0;
      };
      if (silent_deadline(with_victim) || silent_deadline(with_unknown)) continue;
      first = Comparable(method, with_victim, masked);
      second = Comparable(method, with_unknown, masked);
      if (first == second) return;
      differing = absl::StrCat(Locate(record), ": ", method.full_name(), "\n      with V's id  {",
                               record.request, "}\n        → ", with_victim.Describe(),
                               "\n      with unknown {", unknown_record.request, "}\n        → ",
                               with_unknown.Describe(), Legend(*shared_.legend, record.request));
    }
    if (differing.empty()) return;
    shared_.report->Fail(
        absl::StrCat("5. another organization's id answered unlike an unknown id: ",
                     method.full_name()),
        differing);
  }

  Shared& shared_;
  const int index_;
  Rng rng_;              // the request sequence: independent of the answers
  Rng replacement_rng_;  // the fresh UUIDs of the differential check
  int64_t calls_ = 0;
  std::map<std::string, std::shared_ptr<grpc::Channel>> channels_;
};

// ---------------------------------------------------------------------------------------------

std::string SignalName(int signal_number) {
  const char* name = strsignal(signal_number);
  return absl::StrCat(signal_number, " (", name != nullptr ? name : "?", ")");
}

// The dead server's suspects, replayed one at a time against a fresh process of the same
// binary: the first one that kills it is the killer.
void ConfirmKiller(ServerProcess& server, const std::string& database_url,
                   const RequestGenerator& generator, const IdLegend& legend,
                   const std::vector<CallRecord>& suspects, Report& report) {
  std::vector<CallRecord> ordered = suspects;
  std::sort(ordered.begin(), ordered.end(),
            [](const CallRecord& a, const CallRecord& b) { return a.at < b.at; });
  if (ordered.size() > 24) ordered.resize(24);
  ServerProcess fresh{server.binary, server.service, nullptr, 0};
  Start(fresh, database_url);
  auto channel = testing::LocalChannel(fresh.port, 1000);
  for (const CallRecord& suspect : ordered) {
    const MethodDescriptor* method = nullptr;
    for (const MethodDescriptor* m : generator.methods()) {
      if (m->full_name() == suspect.rpc) method = m;
    }
    if (method == nullptr) continue;
    std::unique_ptr<Message> request(google::protobuf::MessageFactory::generated_factory()
                                         ->GetPrototype(method->input_type())
                                         ->New());
    if (!request->ParseFromString(suspect.request_bytes)) continue;
    Invoke(*method, *request, suspect.caller, channel, 1000);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    if (!fresh.process->Running()) {
      const auto signal = fresh.process->TerminatingSignal();
      report.Fail(absl::StrCat("1. ", server.name(), " killed by one request (confirmed: a fresh ",
                               "process died of it alone, signal ",
                               signal ? SignalName(*signal) : "none", ")"),
                  absl::StrCat(Locate(suspect), ": ", suspect.rpc, " {", suspect.request, "}",
                               Legend(legend, suspect.request)));
      return;
    }
  }
  report.Fail(absl::StrCat("1. ", server.name(),
                           ": no single in-flight request kills a fresh "
                           "process (see the calls in flight above)"),
              absl::StrCat(ordered.size(), " requests replayed"));
}

int Main() {
  uint64_t seed = absl::GetFlag(FLAGS_seed);
  if (seed == 0) {
    seed = static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
  }
  const int64_t total_calls = absl::GetFlag(FLAGS_calls);
  const double seconds = absl::GetFlag(FLAGS_seconds);
  const int only_thread = absl::GetFlag(FLAGS_only_thread);
  const int threads = only_thread >= 0 ? 1 : absl::GetFlag(FLAGS_threads);
  if (threads < 1 || (total_calls <= 0 && seconds <= 0)) {
    std::cerr << "need --threads >= 1 and a bound: --calls or --seconds\n";
    return 2;
  }
  std::cout << "rpc_fuzz: seed=" << seed << " threads=" << threads
            << (only_thread >= 0 ? absl::StrCat(" only_thread=", only_thread) : "")
            << " calls=" << total_calls << " seconds=" << seconds
            << "\n  reproduce: --seed=" << seed << " (one thread: --only_thread=T)" << std::endl;

  testing::TestDatabase db;
  const World world = SeedWorld(db);
  std::cout << "seeded: attacker " << world.attacker.id << " (" << world.attacker.objects.size()
            << " objects), victim " << world.victim.id << " (" << world.victim.objects.size()
            << " objects), third " << world.third.id << ", dormant " << world.dormant.id
            << std::endl;

  std::vector<ServerProcess> servers(3);
  servers[0].binary = "services/reservation/reservation_server";
  servers[0].service = v1::ReservationService::service_full_name();
  servers[1].binary = "services/occupancy/occupancy_server";
  servers[1].service = v1::OccupancyService::service_full_name();
  servers[1].also = {v1::InventoryService::service_full_name()};
  servers[2].binary = "services/moves/moves_server";
  servers[2].service = v1::MoveService::service_full_name();
  for (ServerProcess& server : servers) Start(server, db.service_url());

  std::vector<const google::protobuf::ServiceDescriptor*> services;
  for (const ServerProcess& server : servers) {
    for (const std::string& name : server.all_services()) {
      services.push_back(
          google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(name));
    }
  }
  const RequestGenerator generator(world, services);
  const std::map<std::string, OutcomeSet> outcomes = ReadDocumentedOutcomes(kApiDocPath);
  Report report(absl::GetFlag(FLAGS_examples));
  for (const MethodDescriptor* method : generator.methods()) {
    if (outcomes.count(method->full_name()) == 0) {
      report.Fail("2. RPC without documented outcomes", method->full_name());
    }
  }
  for (const std::string& method : generator.MethodsWithoutTemplates()) {
    std::cout << "note: no template for " << method << " (random and mutated empty requests)\n";
  }

  OrgFingerprint fingerprint(db, world.victim.id);
  const std::map<std::string, std::string> before = fingerprint.Take();
  {
    std::vector<std::string> rows;
    for (const auto& [table, digest] : before) {
      rows.push_back(absl::StrCat(table, " ", digest.substr(0, digest.find(':'))));
    }
    std::cout << "victim fingerprint over " << before.size()
              << " tables (rows): " << absl::StrJoin(rows, ", ") << std::endl;
  }

  Shared shared;
  shared.generator = &generator;
  shared.outcomes = &outcomes;
  const IdLegend legend = BuildLegend(world);
  shared.legend = &legend;
  for (const ServerProcess& server : servers) {
    for (const std::string& name : server.all_services()) {
      shared.ports[name] = server.port;
      shared.down[name] = server.down.get();
    }
  }
  shared.report = &report;
  shared.seed = seed;
  shared.quota = total_calls > 0 ? (total_calls + threads - 1) / threads : 0;
  shared.watch_deadline_ms = absl::GetFlag(FLAGS_watch_deadline_ms);

  const auto start = Clock::now();
  std::vector<std::map<std::string, int64_t>> histograms(threads);
  std::vector<std::thread> workers;
  std::atomic<int> running{threads};
  for (int i = 0; i < threads; ++i) {
    workers.emplace_back([&, i] {
      Worker worker(shared, only_thread >= 0 ? only_thread : i);
      worker.Run(&histograms[i]);
      running.fetch_sub(1);
    });
  }
  // 1. Every server is watched while the threads call (and after they are done). A dead one is
  // restarted on its port while the threads wait for it.
  auto check_servers = [&] {
    for (ServerProcess& server : servers) {
      if (server.gone) continue;
      if (server.process->Running()) {
        server.last_alive = Clock::now();
        continue;
      }
      Death death;
      death.detected = Clock::now();
      death.last_alive = server.last_alive;
      const auto signal = server.process->TerminatingSignal();
      const auto status = server.process->WaitForExit(std::chrono::milliseconds(0));
      death.how = signal ? absl::StrCat("killed by signal ", SignalName(*signal))
                         : absl::StrCat("exited with status ", status ? *status : -1);
      death.log_tail = LogTail(server.process->Log(), 5);
      server.down->store(true);
      if (server.deaths.size() >= static_cast<size_t>(kMaxRestarts) || shared.stop.load()) {
        shared.stop.store(true);
        death.restarted = Clock::now();
        server.deaths.push_back(death);
        server.gone = true;
        continue;
      }
      std::printf("  ... %s %s; restarting it on port %d\n", server.name().c_str(),
                  death.how.c_str(), server.port);
      std::fflush(stdout);
      const int port = server.port;
      Start(server, db.service_url(), port);
      death.restarted = Clock::now();
      server.deaths.push_back(death);
      server.last_alive = Clock::now();
      server.down->store(false);
    }
  };
  auto last_progress = start;
  while (running.load() > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    check_servers();
    const auto now = Clock::now();
    if (seconds > 0 && now - start >= std::chrono::duration<double>(seconds)) {
      shared.stop.store(true);
    }
    if (now - last_progress >= std::chrono::seconds(10)) {
      last_progress = now;
      const double elapsed = std::chrono::duration<double>(now - start).count();
      std::printf("  ... %lld calls in %.0f s\n", static_cast<long long>(shared.calls.load()),
                  elapsed);
      std::fflush(stdout);
    }
  }
  for (std::thread& worker : workers) worker.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  shared.stop.store(true);
  check_servers();

  for (ServerProcess& server : servers) {
    std::vector<CallRecord> unavailable;
    for (const std::string& name : server.all_services()) {
      std::vector<CallRecord> from = report.UnavailableFrom(name);
      unavailable.insert(unavailable.end(), from.begin(), from.end());
    }
    std::sort(unavailable.begin(), unavailable.end(),
              [](const CallRecord& a, const CallRecord& b) { return a.at < b.at; });
    std::vector<std::vector<CallRecord>> suspects(server.deaths.size());
    for (const CallRecord& call : unavailable) {
      // A call answered UNAVAILABLE between the last sight of the server alive and shortly
      // after its restart was in flight when it died (or raced the restart).
      // The latest death that had happened by then claims it.
      bool explained = false;
      for (size_t d = server.deaths.size(); d-- > 0 && !explained;) {
        const Death& death = server.deaths[d];
        if (call.at >= death.last_alive - std::chrono::milliseconds(100) &&
            call.at <= death.restarted + std::chrono::seconds(3)) {
          suspects[d].push_back(call);
          explained = true;
        }
      }
      if (!explained) {
        report.Fail(absl::StrCat("2. UNAVAILABLE from a running server: ", call.rpc),
                    absl::StrCat(Locate(call), ": {", call.request, "}"));
      }
    }
    for (size_t d = 0; d < server.deaths.size(); ++d) {
      const Death& death = server.deaths[d];
      report.Fail(
          absl::StrCat("1. ", server.name(), " died: ", death.how),
          absl::StrCat("death ", d + 1, " of ", server.deaths.size(), ", ", suspects[d].size(),
                       " call(s) in flight; last lines of its log:\n", death.log_tail));
      for (size_t i = 0; i < suspects[d].size() && i < 3; ++i) {
        report.Fail(absl::StrCat("1. ", server.name(), " died: calls in flight (UNAVAILABLE)"),
                    absl::StrCat(Locate(suspects[d][i]), ": ", suspects[d][i].rpc, " {",
                                 suspects[d][i].request, "}"));
      }
      // Each confirmation starts a process of its own: the first few deaths are enough.
      if (d < 3) ConfirmKiller(server, db.service_url(), generator, legend, suspects[d], report);
    }
  }

  // 4. Nothing of V changed.
  const std::map<std::string, std::string> after = fingerprint.Take();
  for (const auto& [table, digest] : before) {
    if (after.at(table) != digest) {
      report.Fail(absl::StrCat("4. a row of the victim organization changed: ", table),
                  absl::StrCat(table, ": rows:md5 ", digest, " → ", after.at(table),
                               "; rows selected by ", fingerprint.conditions().at(table)));
    }
  }

  // The fingerprint sees a change of one of V's rows, directly and through a foreign key (a
  // fingerprint that cannot change would pass everything).
  db.Exec(absl::StrCat("UPDATE sites SET name = name || '-probe' WHERE org_id = '", world.victim.id,
                       "'"));
  db.Exec(
      absl::StrCat("UPDATE booking_slots SET released_at = now() WHERE released_at IS NULL "
                   "AND booking_id IN (SELECT id FROM bookings WHERE org_id = '",
                   world.victim.id, "')"));
  {
    const std::map<std::string, std::string> probed = fingerprint.Take();
    for (const char* table : {"sites", "booking_slots"}) {
      if (probed.at(table) == after.at(table)) {
        report.Fail("4. the victim fingerprint does not see a change", table);
      }
    }
  }

  // 6. Health.
  for (ServerProcess& server : servers) {
    auto stub = grpc::health::v1::Health::NewStub(testing::LocalChannel(server.port, 2000));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    grpc::health::v1::HealthCheckResponse response;
    const grpc::Status status =
        stub->Check(&context, grpc::health::v1::HealthCheckRequest(), &response);
    if (!status.ok() || response.status() != grpc::health::v1::HealthCheckResponse::SERVING) {
      report.Fail(absl::StrCat("6. not SERVING at the end: ", server.name()),
                  absl::StrCat(CodeName(status.error_code()), " ", status.error_message(), " ",
                               grpc::health::v1::HealthCheckResponse::ServingStatus_Name(
                                   response.status())));
    }
  }

  std::map<std::string, int64_t> histogram;
  for (const auto& h : histograms) {
    for (const auto& [key, count] : h) histogram[key] += count;
  }
  std::set<std::string> called;
  for (const auto& [key, count] : histogram) called.insert(key.substr(0, key.find(' ')));
  std::cout << "\noutcomes (rpc code reason: calls):\n";
  for (const auto& [key, count] : histogram) std::cout << "  " << key << ": " << count << "\n";
  for (const MethodDescriptor* method : generator.methods()) {
    if (called.count(absl::StrCat(method->service()->name(), ".", method->name())) == 0) {
      std::cout << "note: " << method->full_name() << " was not called (too few calls)\n";
    }
  }
  const int64_t calls = shared.calls.load();
  std::printf(
      "\nseed=%llu threads=%d calls=%lld in %.1f s = %.0f calls/s; %lld requests named "
      "another organization's id (each compared with an unknown id)\n",
      static_cast<unsigned long long>(seed), threads, static_cast<long long>(calls), elapsed,
      elapsed > 0 ? calls / elapsed : 0.0, static_cast<long long>(shared.foreign_id_checks.load()));
  std::fflush(stdout);
  report.Print(std::cout);
  std::cout << "reproduce: --seed=" << seed << std::endl;
  return report.failed() ? 1 : 0;
}

}  // namespace
}  // namespace dcl::fuzz

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  // Serializing a string field with invalid UTF-8 (on purpose) makes protobuf log an error per
  // call; the answers say what matters.
  google::protobuf::SetLogHandler(
      [](google::protobuf::LogLevel, const char*, int, const std::string&) {});
  // A write to a server that died must not kill the fuzzer that reports it.
  signal(SIGPIPE, SIG_IGN);
  try {
    return dcl::fuzz::Main();
  } catch (const std::exception& e) {
    std::cerr << "rpc_fuzz: " << e.what() << std::endl;
    return 1;
  }
}
