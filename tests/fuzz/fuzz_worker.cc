#include "tests/fuzz/fuzz_worker.h"

#include <random>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "tests/support/suite_processes.h"

namespace dcl::fuzz {

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

Worker::Worker(Shared& shared, int index)
    : shared_(shared),
      index_(index),
      rng_(SeedFor(shared.seed, index, 0)),
      replacement_rng_(SeedFor(shared.seed, index, 1)) {
  for (const auto& [service, port] : shared.ports) {
    channels_[service] = testing::LocalChannel(port, index);
  }
}

void Worker::Run(std::map<std::string, int64_t>* histogram) {
  while (!shared_.stop.load() && (shared_.quota == 0 || calls_ < shared_.quota)) {
    GeneratedCall call = shared_.generator->Next(rng_);
    OneCall(call, histogram);
  }
}

Rng Worker::SeedFor(uint64_t seed, int index, int stream) {
  std::seed_seq sequence{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32),
                         static_cast<uint32_t>(index), static_cast<uint32_t>(stream)};
  return Rng(sequence);
}

Answer Worker::Send(const MethodDescriptor& method, const Message& request, const Caller& caller,
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
  Answer answer = Invoke(method, request, caller, channels_.at(service), shared_.watch_deadline_ms);
  if (answer.code == grpc::StatusCode::UNAVAILABLE) {
    CallRecord unavailable = record;
    unavailable.message = nullptr;
    unavailable.at = Clock::now();
    unavailable.request_bytes = request.SerializeAsString();
    shared_.report->Unavailable(service, std::move(unavailable));
  }
  return answer;
}

void Worker::Check(const MethodDescriptor& method, const CallRecord& record, const Answer& answer) {
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
        absl::StrCat("3. ", CodeName(answer.code), " answer",
                     unparsed ? " without details (the request was not parsed: gRPC runtime)" : "",
                     bad_utf8 ? " for a request with invalid UTF-8 in a string field" : "", ": ",
                     rpc, " ", answer.reason),
        where);
    return;
  }
  auto allowed = shared_.outcomes->find(rpc);
  if (allowed == shared_.outcomes->end()) {
    shared_.report->Fail(absl::StrCat("2. RPC without documented outcomes: ", rpc), where);
  } else if (!IsAllowed(allowed->second, answer.code, answer.reason)) {
    shared_.report->Fail(absl::StrCat("2. undocumented outcome: ", rpc, " ", CodeName(answer.code),
                                      "/", answer.reason),
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

void Worker::OneCall(const GeneratedCall& call, std::map<std::string, int64_t>* histogram) {
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
  shared_.report->Fail(absl::StrCat("5. another organization's id answered unlike an unknown id: ",
                                    method.full_name()),
                       differing);
}

}  // namespace dcl::fuzz
