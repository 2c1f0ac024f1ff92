// The mixed workload over all three services and its audit, shared by the replica test
// (tests/replicas) and the fault history (tests/faults): clients of each service that fail
// over between replicas and resolve unknown outcomes (by a retry with the same key or by
// reading), a record of every call (outcomes per phase, optionally a history file), the seeded
// world they work on, and the audit of every invariant and every acknowledged write.
#ifndef DCL_TESTS_SUPPORT_MIXED_WORKLOAD_H_
#define DCL_TESTS_SUPPORT_MIXED_WORKLOAD_H_

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <pqxx/pqxx>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "dcl/v1/moves.grpc.pb.h"
#include "dcl/v1/occupancy.grpc.pb.h"
#include "dcl/v1/reservation.grpc.pb.h"
#include "google/rpc/status.pb.h"
#include "tests/support/suite_processes.h"
#include "tests/support/test_db.h"

namespace dcl::workload {

using Clock = std::chrono::steady_clock;
using testing::SuiteProcesses;
using testing::SuiteService;
using namespace std::chrono_literals;

constexpr auto kCallDeadline = 5s;
constexpr int kRackUnits = 42;
// Reads that resolve an unknown outcome try this often, 250 ms apart: long enough to outlast a
// restart of PostgreSQL or of a server.
constexpr int kReadAttempts = 60;

// ---------------------------------------------------------------------------------------------
// What happened: outcomes per RPC and per phase, failover statistics, recovery after faults,
// failures, and (when asked) every call in a history file.

// Whether an answer is one the service meant to give: OK or a business refusal (as opposed to
// a lost race to retry, an unreachable database, a dead or paused server).
inline bool AnsweredOkOrRefused(grpc::StatusCode code) {
  return code == grpc::StatusCode::OK || code == grpc::StatusCode::FAILED_PRECONDITION ||
         code == grpc::StatusCode::RESOURCE_EXHAUSTED || code == grpc::StatusCode::NOT_FOUND ||
         code == grpc::StatusCode::ALREADY_EXISTS;
}

class Report {
 public:
  Report() : epoch_(Clock::now()) {}

  // One call, as FailoverClient::Once made it: counted under its RPC and outcome and under the
  // current phase, written to the history file if there is one, and taken as the recovery of
  // `service` when it is the first OK answer to a call that started after the last fault ended.
  void Record(const std::string& service, const std::string& client, const std::string& rpc,
              const std::string& request, Clock::time_point started, const grpc::Status& status,
              const std::string& response) {
    const std::string reason = ReasonOfDetails(status);
    const std::string code = CodeName(status.error_code());
    const auto now = Clock::now();
    std::lock_guard<std::mutex> lock(mu_);
    ++outcomes_[absl::StrCat(rpc, " ", code, reason.empty() ? "" : "/", reason)];
    PhaseCounts& phase = phases_[phase_];
    ++phase.calls;
    if (status.ok()) ++phase.ok;
    if (!status.ok() && AnsweredOkOrRefused(status.error_code())) ++phase.refused;
    if (status.error_code() == grpc::StatusCode::ABORTED) ++phase.aborted;
    if (status.error_code() == grpc::StatusCode::UNAVAILABLE ||
        status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
      ++phase.unknown;
    }
    if (status.error_code() == grpc::StatusCode::INTERNAL ||
        status.error_code() == grpc::StatusCode::UNKNOWN) {
      failures_.push_back(
          absl::StrCat("4. ", rpc, " answered ", code, ": ", status.error_message()));
    }
    if (status.ok() && fault_ended_.has_value() && started >= *fault_ended_) {
      auto& recovery = recoveries_.back();
      if (recovery.by_service.count(service) == 0) {
        recovery.by_service[service] = Seconds(*fault_ended_, now);
      }
    }
    if (history_ != nullptr) {
      std::fprintf(history_, "%.3f\t%.3f\t%s\t%s\t%s\t%s%s%s\t%s\t%s\n", Seconds(epoch_, started),
                   Seconds(epoch_, now), phase_.c_str(), client.c_str(), rpc.c_str(),
                   code.c_str(), reason.empty() ? "" : "/", reason.c_str(), request.c_str(),
                   status.ok() ? response.c_str() : status.error_message().c_str());
    }
  }
  void Fail(const std::string& failure) {
    std::lock_guard<std::mutex> lock(mu_);
    failures_.push_back(failure);
  }
  void Note(const std::string& counter, int64_t by = 1) {
    std::lock_guard<std::mutex> lock(mu_);
    counters_[counter] += by;
  }
  int64_t Counter(const std::string& counter) {
    std::lock_guard<std::mutex> lock(mu_);
    return counters_[counter];
  }
  bool failed() {
    std::lock_guard<std::mutex> lock(mu_);
    return !failures_.empty();
  }

  // Every call from now on is also a line of `history` (tab-separated: start and end in
  // seconds since the report began, phase, client, call, outcome, request, answer or error).
  void WriteHistoryTo(std::FILE* history) {
    std::lock_guard<std::mutex> lock(mu_);
    history_ = history;
    std::fprintf(history_, "start_s\tend_s\tphase\tclient\tcall\toutcome\trequest\tanswer\n");
  }
  // Calls from now on count under `phase`.
  void SetPhase(const std::string& phase) {
    std::lock_guard<std::mutex> lock(mu_);
    phase_ = phase;
    if (std::find(phase_order_.begin(), phase_order_.end(), phase) == phase_order_.end()) {
      phase_order_.push_back(phase);
    }
  }
  // The fault `name` is over (the process restarted, the database back, the locks released):
  // the first OK answer of each service to a call started from now on is its recovery.
  void FaultEnded(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    fault_ended_ = Clock::now();
    recoveries_.push_back({name, {}});
  }

  void Print() {
    std::lock_guard<std::mutex> lock(mu_);
    int64_t calls = 0;
    for (const auto& [key, count] : outcomes_) calls += count;
    std::printf("\ncalls per outcome (%lld calls):\n", static_cast<long long>(calls));
    for (const auto& [key, count] : outcomes_) {
      std::printf("  %-62s %7lld\n", key.c_str(), static_cast<long long>(count));
    }
    if (phase_order_.size() > 1) {
      std::printf("\ncalls per phase (available = answered OK or with a business refusal):\n");
      std::printf("  %-34s %7s %7s %7s %7s %7s %9s\n", "phase", "calls", "ok", "refused",
                  "aborted", "unknown", "available");
      for (const std::string& name : phase_order_) {
        const PhaseCounts& phase = phases_[name];
        if (phase.calls == 0) continue;
        std::printf("  %-34s %7lld %7lld %7lld %7lld %7lld %8.1f%%\n", name.c_str(),
                    static_cast<long long>(phase.calls), static_cast<long long>(phase.ok),
                    static_cast<long long>(phase.refused), static_cast<long long>(phase.aborted),
                    static_cast<long long>(phase.unknown),
                    phase.calls == 0 ? 0.0 : 100.0 * (phase.ok + phase.refused) / phase.calls);
      }
    }
    if (!recoveries_.empty()) {
      std::printf("\ntime to recover after each fault (first OK answer per service to a call "
                  "started after the fault ended):\n");
      for (const Recovery& recovery : recoveries_) {
        std::string per_service;
        for (const char* service : {"reservation", "occupancy", "moves"}) {
          auto it = recovery.by_service.find(service);
          absl::StrAppend(&per_service, "  ", service, " ",
                          it == recovery.by_service.end()
                              ? std::string("none")
                              : absl::StrFormat("%.2f s", it->second));
        }
        std::printf("  %-34s%s\n", recovery.fault.c_str(), per_service.c_str());
      }
    }
    std::printf("\nfailover and resolution:\n");
    for (const auto& [key, count] : counters_) {
      std::printf("  %-62s %7lld\n", key.c_str(), static_cast<long long>(count));
    }
    if (failures_.empty()) {
      std::printf("\nRESULT: PASS\n");
    } else {
      std::printf("\nRESULT: FAIL (%zu)\n", failures_.size());
      for (size_t i = 0; i < failures_.size() && i < 60; ++i) {
        std::printf("  %s\n", failures_[i].c_str());
      }
    }
    std::fflush(stdout);
  }

  static std::string CodeName(grpc::StatusCode code) {
    static const char* const kNames[] = {"OK",
                                         "CANCELLED",
                                         "UNKNOWN",
                                         "INVALID_ARGUMENT",
                                         "DEADLINE_EXCEEDED",
                                         "NOT_FOUND",
                                         "ALREADY_EXISTS",
                                         "PERMISSION_DENIED",
                                         "RESOURCE_EXHAUSTED",
                                         "FAILED_PRECONDITION",
                                         "ABORTED",
                                         "OUT_OF_RANGE",
                                         "UNIMPLEMENTED",
                                         "INTERNAL",
                                         "UNAVAILABLE",
                                         "DATA_LOSS",
                                         "UNAUTHENTICATED"};
    const int index = static_cast<int>(code);
    return index >= 0 && index <= 16 ? kNames[index] : absl::StrCat("CODE_", index);
  }

  static std::string ReasonOfDetails(const grpc::Status& status) {
    google::rpc::Status details;
    if (status.error_details().empty() || !details.ParseFromString(status.error_details())) {
      return "";
    }
    for (const auto& any : details.details()) {
      google::rpc::ErrorInfo info;
      if (any.Is<google::rpc::ErrorInfo>() && any.UnpackTo(&info)) return info.reason();
    }
    return "";
  }

 private:
  struct PhaseCounts {
    int64_t calls = 0, ok = 0, refused = 0, aborted = 0, unknown = 0;
  };
  struct Recovery {
    std::string fault;
    std::map<std::string, double> by_service;
  };
  static double Seconds(Clock::time_point from, Clock::time_point to) {
    return std::chrono::duration<double>(to - from).count();
  }

  const Clock::time_point epoch_;
  std::mutex mu_;
  std::map<std::string, int64_t> outcomes_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int64_t> counters_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> failures_ ABSL_GUARDED_BY(mu_);
  std::string phase_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> phase_order_ ABSL_GUARDED_BY(mu_) = {""};
  std::map<std::string, PhaseCounts> phases_ ABSL_GUARDED_BY(mu_);
  std::optional<Clock::time_point> fault_ended_ ABSL_GUARDED_BY(mu_);
  std::vector<Recovery> recoveries_ ABSL_GUARDED_BY(mu_);
  std::FILE* history_ ABSL_GUARDED_BY(mu_) = nullptr;
};

inline std::string ReasonOf(const grpc::Status& status) { return Report::ReasonOfDetails(status); }

// The caller cannot tell whether the write happened: the server died under the call, or the
// answer did not come in time.
inline bool OutcomeUnknown(const grpc::Status& status) {
  return status.error_code() == grpc::StatusCode::UNAVAILABLE ||
         status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
}

// ---------------------------------------------------------------------------------------------
// A client of one service with a connection to each replica.

struct Answer {
  grpc::Status status;
  bool in_doubt = false;  // an earlier attempt of this request had an unknown outcome
};

template <typename Service>
class FailoverClient {
 public:
  FailoverClient(SuiteProcesses& suite, SuiteService service, int index, std::string token,
                 Report& report)
      : preferred_(index % 2),
        token_(std::move(token)),
        report_(report),
        service_(ServiceName(service)),
        name_(absl::StrCat(service_, "-client-", index)) {
    for (const std::string& name : suite.ReplicasOf(service)) {
      auto channel = testing::LocalChannel(suite.Port(name), index);
      // Connected before the load: a call on a channel still connecting fails at once with
      // UNAVAILABLE, which would count as an outage that never happened.
      channel->WaitForConnected(std::chrono::system_clock::now() + 10s);
      stubs_.push_back(Service::NewStub(channel));
    }
  }

  typename Service::Stub& stub(int replica) { return *stubs_[replica]; }
  int replicas() const { return static_cast<int>(stubs_.size()); }
  int preferred() const { return preferred_; }
  // The replica the next call goes to first.
  void Prefer(int replica) { preferred_ = replica; }
  const std::string& token() const { return token_; }

  // One attempt on `replica`.
  template <typename Request, typename Response>
  grpc::Status Once(int replica,
                    grpc::Status (Service::Stub::*method)(grpc::ClientContext*, const Request&,
                                                          Response*),
                    const std::string& rpc, const Request& request, Response* response) {
    grpc::ClientContext context;
    context.AddMetadata("authorization", "Bearer " + token_);
    context.set_deadline(std::chrono::system_clock::now() + kCallDeadline);
    const auto started = Clock::now();
    const grpc::Status status = (stub(replica).*method)(&context, request, response);
    std::string answer = status.ok() ? response->ShortDebugString() : "";
    if (answer.size() > 400) answer = answer.substr(0, 400) + "...";
    report_.Record(service_, name_, rpc, request.ShortDebugString(), started, status, answer);
    return status;
  }

  // The request on the preferred replica; when its outcome is unknown, the same request once
  // more on the other replica (or, with `retry_while_unknown`, alternating until an answer:
  // only for requests that are safe to repeat). The client then prefers the replica that
  // answered.
  template <typename Request, typename Response>
  Answer Call(grpc::Status (Service::Stub::*method)(grpc::ClientContext*, const Request&,
                                                    Response*),
              const std::string& rpc, const Request& request, Response* response,
              bool retry_while_unknown = false) {
    Answer answer;
    const int attempts = retry_while_unknown ? 8 : 2;
    int aborted = 0;
    for (int attempt = 0; attempt < attempts; ++attempt) {
      if (attempt > 0) {
        answer.in_doubt = true;
        preferred_ = (preferred_ + 1) % replicas();
        report_.Note(absl::StrCat("retries on the other replica: ", rpc));
        // A pause before each retry, as a client should, so that an outage is not a busy loop.
        std::this_thread::sleep_for(attempt >= 2 ? 250ms : 50ms);
      }
      answer.status = Once(preferred_, method, rpc, request, response);
      // ABORTED wrote nothing (a lost race, a lock or statement timeout): retried at once, on
      // the same replica, without putting the request in doubt.
      while (answer.status.error_code() == grpc::StatusCode::ABORTED && ++aborted <= 3) {
        report_.Note(absl::StrCat("retries after ABORTED: ", rpc));
        std::this_thread::sleep_for(50ms * aborted);
        answer.status = Once(preferred_, method, rpc, request, response);
      }
      if (!OutcomeUnknown(answer.status)) return answer;
    }
    std::this_thread::sleep_for(100ms);  // no replica answers: back off before the next call
    return answer;
  }

 private:
  static std::string ServiceName(SuiteService service) {
    switch (service) {
      case SuiteService::kReservation:
        return "reservation";
      case SuiteService::kOccupancy:
        return "occupancy";
      case SuiteService::kMoves:
        return "moves";
    }
    return "";
  }

  std::vector<std::unique_ptr<typename Service::Stub>> stubs_;
  int preferred_;
  const std::string token_;
  Report& report_;
  const std::string service_;
  const std::string name_;  // in the history file
};

// ---------------------------------------------------------------------------------------------
// The seeded world.

struct World {
  std::string org;
  std::string sale_site;  // reservation stock
  std::string dc_site;    // racks for occupancy and moves
  std::vector<std::string> occupancy_racks;
  std::vector<std::string> move_racks;
  std::string probe_rack;  // only the watch probe moves there
  std::string commerce_token;
  std::string operator_token;
};

// ---------------------------------------------------------------------------------------------
// Reservation clients: Reserve (short holds, so the sweepers meet them), Convert, Cancel,
// EndBinding, on a small stock shared by every client.

struct HoldRecord {
  std::string key;
  std::string id;
  std::string device;
  std::string state = "held";  // held (may since have expired), converted, cancelled
  std::string service;
  std::string binding;  // empty when unknown (Convert resolved by reading)
  bool binding_ended = false;
  bool unknown = false;  // a write on it could not be resolved: not compared
};

class ReservationClient {
 public:
  ReservationClient(SuiteProcesses& suite, const World& world, int index,
                    std::vector<std::string> services, uint64_t seed, Report& report)
      : rpc_(suite, SuiteService::kReservation, index, world.commerce_token, report),
        world_(world),
        index_(index),
        free_services_(std::move(services)),
        rng_(seed * 1000 + index),
        report_(report) {}

  void Run(const std::atomic<bool>& stop) {
    while (!stop.load()) Step();
  }
  const std::map<std::string, HoldRecord>& holds() const { return holds_; }
  // Keys of Reserve calls answered with a refusal: none may have a reservation.
  const std::vector<std::string>& refused_keys() const { return refused_keys_; }
  // Reserve calls never answered; after ResolveUnanswered(), how many reservations must carry
  // each one's key as a retry with that key answered (1 after OK, 0 after a refusal).
  const std::vector<v1::ReserveRequest>& unanswered() const { return unanswered_; }
  const std::map<std::string, int>& rows_after_retry() const { return rows_after_retry_; }

  // After the load, with everything up again: each unanswered Reserve sent once more with the
  // same key. A replay says the lost call wrote; a fresh hold says it did not.
  void ResolveUnanswered() {
    for (const v1::ReserveRequest& request : unanswered_) {
      v1::ReserveResponse response;
      const Answer answer = rpc_.Call(&v1::ReservationService::Stub::Reserve, "Reserve", request,
                                      &response, /*retry_while_unknown=*/true);
      if (answer.status.ok()) {
        // Either way one reservation carries the key now: the lost call's or the retry's.
        rows_after_retry_[request.idempotency_key()] = 1;
        report_.Note(absl::StrCat("Reserve never answered, retry with the same key: ",
                                  response.replay() ? "it had written" : "it had not"));
      } else if (!OutcomeUnknown(answer.status)) {
        // Refused (NO_CAPACITY): had the lost call written, the retry would have replayed it.
        rows_after_retry_[request.idempotency_key()] = 0;
        report_.Note(absl::StrCat("Reserve never answered, retry with the same key refused (",
                                  ReasonOf(answer.status), "): it had not"));
      }
    }
  }

 private:
  void Step() {
    std::vector<std::string> bound;
    for (const auto& [key, hold] : holds_) {
      if (hold.state == "converted" && !hold.binding.empty() && !hold.binding_ended &&
          !hold.unknown) {
        bound.push_back(key);
      }
    }
    if (!bound.empty() && rng_() % 100 < 20)
      return EndBinding(holds_[bound[rng_() % bound.size()]]);
    const std::string key = absl::StrCat("order-", index_, "-", next_++);
    v1::ReserveRequest request;
    request.set_idempotency_key(key);
    request.mutable_criteria()->set_site_id(world_.sale_site);
    request.set_ttl_seconds(2 + static_cast<int>(rng_() % 3));
    v1::ReserveResponse response;
    const Answer answer = rpc_.Call(&v1::ReservationService::Stub::Reserve, "Reserve", request,
                                    &response, /*retry_while_unknown=*/true);
    if (OutcomeUnknown(answer.status)) {
      unanswered_.push_back(request);
      return;
    }
    if (!answer.status.ok()) {
      // A refusal wrote nothing: had an earlier attempt with this key written, the retry would
      // have been answered with that reservation.
      refused_keys_.push_back(key);
      return;
    }
    if (answer.in_doubt) report_.Note("Reserve acknowledged after a retry with the same key");
    HoldRecord& hold = holds_[key];
    hold.key = key;
    hold.id = response.reservation().id();
    hold.device = response.reservation().device_id();
    const uint32_t next = rng_() % 10;
    if (next < 3 && !free_services_.empty()) {
      Convert(hold);
    } else if (next == 3 && !free_services_.empty()) {
      // Converted around its deadline (0.4 s before to 0.4 s after, by this client's clock),
      // where Convert's deadline check and the sweepers meet.
      const int offset_ms = static_cast<int>(rng_() % 800) - 400;
      std::this_thread::sleep_for(std::chrono::milliseconds(request.ttl_seconds() * 1000 +
                                                            offset_ms));
      Convert(hold);
    } else if (next < 7) {
      Cancel(hold);
    }  // else: left to lapse, for the sweepers
  }

  // The reservation as the database has it now, read through any replica.
  std::optional<v1::Reservation> Read(const std::string& id) {
    v1::GetReservationRequest request;
    request.mutable_reservation()->set_reservation_id(id);
    for (int attempt = 0; attempt < kReadAttempts; ++attempt) {
      v1::Reservation reservation;
      const grpc::Status status =
          rpc_.Once(attempt % rpc_.replicas(), &v1::ReservationService::Stub::GetReservation,
                    "GetReservation", request, &reservation);
      if (status.ok()) return reservation;
      if (!OutcomeUnknown(status)) return std::nullopt;
      std::this_thread::sleep_for(250ms);
    }
    return std::nullopt;
  }

  // After a write whose first outcome is unknown and whose retry was refused: what happened.
  void Resolve(HoldRecord& hold, const std::string& rpc) {
    std::optional<v1::Reservation> now = Read(hold.id);
    if (!now.has_value()) {
      hold.unknown = true;
      report_.Note(absl::StrCat(rpc, " outcome unknown, unresolved"));
      return;
    }
    if (now->state() == v1::RESERVATION_CONVERTED) {
      hold.state = "converted";
      hold.service = now->service_id();
    } else if (now->state() == v1::RESERVATION_CANCELLED) {
      hold.state = "cancelled";
    }
    report_.Note(absl::StrCat(
        rpc, " outcome unknown, resolved by reading: ", v1::ReservationState_Name(now->state())));
  }

  void Convert(HoldRecord& hold) {
    const std::string service = free_services_.back();
    v1::ConvertRequest request;
    request.mutable_reservation()->set_reservation_id(hold.id);
    request.set_service_id(service);
    v1::ConvertResponse response;
    const Answer answer =
        rpc_.Call(&v1::ReservationService::Stub::Convert, "Convert", request, &response);
    if (answer.status.ok()) {
      hold.state = "converted";
      hold.service = service;
      hold.binding = response.binding().id();
      free_services_.pop_back();
      return;
    }
    if (answer.in_doubt || OutcomeUnknown(answer.status)) {
      Resolve(hold, "Convert");
      if (hold.state == "converted" || hold.unknown) free_services_.pop_back();
    }
  }

  void Cancel(HoldRecord& hold) {
    v1::CancelRequest request;
    request.mutable_reservation()->set_reservation_id(hold.id);
    request.set_reason("replica test");
    v1::CancelResponse response;
    const Answer answer =
        rpc_.Call(&v1::ReservationService::Stub::Cancel, "Cancel", request, &response);
    if (answer.status.ok()) {
      hold.state = "cancelled";
      return;
    }
    if (answer.in_doubt || OutcomeUnknown(answer.status)) Resolve(hold, "Cancel");
  }

  void EndBinding(HoldRecord& hold) {
    v1::EndBindingRequest request;
    request.set_binding_id(hold.binding);
    v1::ServiceBinding response;
    const Answer answer =
        rpc_.Call(&v1::ReservationService::Stub::EndBinding, "EndBinding", request, &response);
    if (answer.status.ok()) {
      hold.binding_ended = true;
      free_services_.push_back(hold.service);
      return;
    }
    if (answer.in_doubt || OutcomeUnknown(answer.status)) {
      // Ending an ended binding is no write to resolve against: the audit accepts either.
      hold.unknown = true;
      report_.Note("EndBinding outcome unknown, left to the audit");
    }
  }

  FailoverClient<v1::ReservationService> rpc_;
  const World& world_;
  const int index_;
  std::vector<std::string> free_services_;
  std::mt19937_64 rng_;
  Report& report_;
  int next_ = 0;
  std::map<std::string, HoldRecord> holds_;
  std::vector<std::string> refused_keys_;
  std::vector<v1::ReserveRequest> unanswered_;
  std::map<std::string, int> rows_after_retry_;
};

// ---------------------------------------------------------------------------------------------
// Occupancy clients: PlaceDevice, BlockUnits, ReserveUnits (short, for the sweepers),
// ReleaseBooking, on racks every client shares.

struct BookingRecord {
  std::string id;
  std::string rack;
  v1::BookingKind kind = v1::BOOKING_KIND_UNSPECIFIED;
  std::string device;
  std::set<std::pair<int, int>> slots;  // (side, unit)
  bool released = false;
  bool release_unknown = false;
};

// A create whose outcome stayed unknown: found (or not) by its unique reason at the end.
struct UnknownCreate {
  std::string reason;
  std::string rpc;
};

class OccupancyClient {
 public:
  OccupancyClient(SuiteProcesses& suite, const World& world, int index,
                  std::vector<std::string> devices, uint64_t seed, Report& report)
      : rpc_(suite, SuiteService::kOccupancy, index, world.operator_token, report),
        world_(world),
        index_(index),
        unplaced_(std::move(devices)),
        rng_(seed * 2000 + index),
        report_(report) {}

  void Run(const std::atomic<bool>& stop) {
    while (!stop.load()) Step();
  }
  const std::map<std::string, BookingRecord>& bookings() const { return bookings_; }
  const std::vector<UnknownCreate>& unknown_creates() const { return unknown_creates_; }
  // Creates answered with a refusal on their only attempt: found by their reason, none may exist.
  const std::vector<UnknownCreate>& refused_creates() const { return refused_creates_; }

 private:
  void Step() {
    std::vector<std::string> active;
    for (const auto& [id, booking] : bookings_) {
      if (!booking.released && !booking.release_unknown) active.push_back(id);
    }
    const uint32_t r = rng_() % 100;
    const std::string rack = world_.occupancy_racks[rng_() % world_.occupancy_racks.size()];
    const int first = 1 + static_cast<int>(rng_() % (kRackUnits - 1));
    const std::string reason = absl::StrCat("occupancy-", index_, "-", next_++);
    if (r < 25 && !unplaced_.empty()) {
      v1::PlaceDeviceRequest request;
      request.set_rack_id(rack);
      request.set_device_id(unplaced_.back());
      request.set_side(v1::SIDE_FRONT);
      request.set_unit(first);
      request.set_reason(reason);
      Create(&v1::OccupancyService::Stub::PlaceDevice, "PlaceDevice", request, reason);
    } else if (r < 45 || (active.empty() && r < 70)) {
      v1::BlockUnitsRequest request;
      request.set_rack_id(rack);
      request.set_side(v1::SIDE_FRONT);
      request.set_both_sides(rng_() % 2 == 0);
      request.set_first_unit(first);
      request.set_last_unit(first + static_cast<int>(rng_() % 2));
      request.set_reason(reason);
      Create(&v1::OccupancyService::Stub::BlockUnits, "BlockUnits", request, reason);
    } else if (r < 70 || active.empty()) {
      v1::ReserveUnitsRequest request;
      request.set_rack_id(rack);
      request.set_side(v1::SIDE_FRONT);
      request.set_both_sides(rng_() % 2 == 0);
      request.set_first_unit(first);
      request.set_last_unit(first + static_cast<int>(rng_() % 2));
      request.set_reason(reason);
      request.set_ttl_seconds(2 + static_cast<int>(rng_() % 3));
      Create(&v1::OccupancyService::Stub::ReserveUnits, "ReserveUnits", request, reason);
    } else {
      Release(bookings_[active[rng_() % active.size()]]);
    }
  }

  template <typename Request>
  void Create(grpc::Status (v1::OccupancyService::Stub::*method)(grpc::ClientContext*,
                                                                 const Request&, v1::Booking*),
              const std::string& rpc, const Request& request, const std::string& reason) {
    v1::Booking booking;
    const Answer answer = rpc_.Call(method, rpc, request, &booking);
    const bool placement = rpc == "PlaceDevice";
    if (answer.status.ok()) {
      // The retry answered OK, so the first attempt wrote nothing: its slots (or the device's
      // one placement) would have refused the retry. The audit checks that only one booking
      // carries this request's reason.
      if (answer.in_doubt) unknown_creates_.push_back({reason, rpc});
      BookingRecord& record = bookings_[booking.id()];
      record.id = booking.id();
      record.rack = booking.rack_id();
      record.kind = booking.kind();
      record.device = booking.device_id();
      for (const v1::Slot& slot : booking.slots()) record.slots.insert({slot.side(), slot.unit()});
      if (placement) {
        placed_[record.id] = unplaced_.back();
        unplaced_.pop_back();
      }
      return;
    }
    if (!answer.in_doubt && !OutcomeUnknown(answer.status)) {
      refused_creates_.push_back({reason, rpc});  // a refusal wrote nothing
      return;
    }
    {
      unknown_creates_.push_back({reason, rpc});
      report_.Note(absl::StrCat(rpc, " outcome unknown, resolved by its reason at the end"));
      if (placement) unplaced_.pop_back();  // placed or not: no longer used
    }
  }

  void Release(BookingRecord& booking) {
    v1::ReleaseBookingRequest request;
    request.set_booking_id(booking.id);
    request.set_reason("replica test");
    v1::Booking response;
    const Answer answer = rpc_.Call(&v1::OccupancyService::Stub::ReleaseBooking, "ReleaseBooking",
                                    request, &response);
    const bool already_released = ReasonOf(answer.status) == "WRONG_STATE";
    if (answer.status.ok() || (answer.in_doubt && already_released)) {
      // After an unknown first attempt, WRONG_STATE from the retry says the first released it.
      booking.released = true;
      if (auto it = placed_.find(booking.id); it != placed_.end()) {
        unplaced_.push_back(it->second);
        placed_.erase(it);
      }
      if (answer.in_doubt) report_.Note("ReleaseBooking outcome unknown, resolved by the retry");
      return;
    }
    if (answer.in_doubt || OutcomeUnknown(answer.status)) {
      booking.release_unknown = true;
      report_.Note("ReleaseBooking outcome unknown, left to the audit");
    } else if (booking.kind == v1::BOOKING_RESERVATION && already_released) {
      booking.released = true;  // lapsed and released by a sweeper
    }
  }

  FailoverClient<v1::OccupancyService> rpc_;
  const World& world_;
  const int index_;
  std::vector<std::string> unplaced_;
  std::map<std::string, std::string> placed_;  // placement booking -> device
  std::mt19937_64 rng_;
  Report& report_;
  int next_ = 0;
  std::map<std::string, BookingRecord> bookings_;
  std::vector<UnknownCreate> unknown_creates_;
  std::vector<UnknownCreate> refused_creates_;
};

// ---------------------------------------------------------------------------------------------
// Moves: a driver that starts and advances moves with failover and resolves unknown outcomes
// by reading, shared by the move clients and the watch probe.

struct MoveRecord {
  std::string id;
  std::string device;
  std::vector<v1::MoveState> path;  // every state the move took, as its client knows it
  bool unknown = false;
  bool terminal() const {
    const v1::MoveState s = path.back();
    return s == v1::MOVE_COMPLETED || s == v1::MOVE_CANCELLED || s == v1::MOVE_FAILED;
  }
};

class MoveDriver {
 public:
  MoveDriver(SuiteProcesses& suite, const World& world, int index, Report& report)
      : rpc_(suite, SuiteService::kMoves, index, world.operator_token, report), report_(report) {}

  FailoverClient<v1::MoveService>& rpc() { return rpc_; }

  // StartMove; the move (planned) when it was started, whether acknowledged or found by
  // reading after an unknown outcome. `failed_over` says whether another replica answered.
  std::optional<MoveRecord> Start(const std::string& device, const std::string& rack, int unit,
                                  bool* failed_over = nullptr) {
    v1::StartMoveRequest request;
    request.set_device_id(device);
    request.set_destination_rack_id(rack);
    request.set_destination_side(v1::SIDE_FRONT);
    request.set_destination_unit(unit);
    request.set_note("replica test");
    v1::Move move;
    const Answer answer = rpc_.Call(&v1::MoveService::Stub::StartMove, "StartMove", request, &move);
    if (failed_over != nullptr) *failed_over = answer.in_doubt;
    if (answer.status.ok()) return MoveRecord{move.id(), device, {move.state()}};
    if (!answer.in_doubt && !OutcomeUnknown(answer.status)) return std::nullopt;
    // Unknown: the device's open move, if the first attempt made one.
    v1::ListMovesRequest list;
    list.set_device_id(device);
    list.set_page_size(500);
    for (int attempt = 0; attempt < kReadAttempts; ++attempt) {
      v1::ListMovesResponse moves;
      const grpc::Status status = rpc_.Once(
          attempt % rpc_.replicas(), &v1::MoveService::Stub::ListMoves, "ListMoves", list, &moves);
      if (OutcomeUnknown(status)) {
        std::this_thread::sleep_for(250ms);
        continue;
      }
      for (const v1::Move& m : moves.moves()) {
        if (m.state() != v1::MOVE_COMPLETED && m.state() != v1::MOVE_CANCELLED &&
            m.state() != v1::MOVE_FAILED) {
          report_.Note("StartMove outcome unknown, resolved by reading: started");
          return MoveRecord{m.id(), device, {m.state()}};
        }
      }
      report_.Note("StartMove outcome unknown, resolved by reading: not started");
      return std::nullopt;
    }
    report_.Fail("StartMove outcome unknown and unreadable for device " + device);
    return std::nullopt;
  }

  // AdvanceMove (or CancelMove for MOVE_CANCELLED without observation); appends the new state
  // to the record when it happened. Returns whether it did.
  bool Advance(MoveRecord& move, v1::MoveState target, v1::Observation observation,
               bool* failed_over = nullptr) {
    v1::Move answer_move;
    Answer answer;
    const bool cancel = target == v1::MOVE_CANCELLED;
    if (cancel) {
      v1::CancelMoveRequest request;
      request.set_move_id(move.id);
      request.set_note("replica test");
      answer = rpc_.Call(&v1::MoveService::Stub::CancelMove, "CancelMove", request, &answer_move);
    } else {
      v1::AdvanceMoveRequest request;
      request.set_move_id(move.id);
      request.set_target(target);
      request.set_observation(observation);
      request.set_note("replica test");
      answer = rpc_.Call(&v1::MoveService::Stub::AdvanceMove, "AdvanceMove", request, &answer_move);
    }
    if (failed_over != nullptr) *failed_over = answer.in_doubt;
    const std::string rpc = cancel ? "CancelMove" : "AdvanceMove";
    if (answer.status.ok()) {
      move.path.push_back(target);
      return true;
    }
    if (!answer.in_doubt && answer.status.error_code() == grpc::StatusCode::ABORTED) {
      // Retried and still aborted (a lock held past the lock timeout): nothing was written.
      const std::optional<v1::MoveState> now = ReadState(move.id);
      if (now.has_value() && *now != move.path.back()) {
        report_.Fail(absl::StrCat("2. ", rpc, " of move ", move.id, " answered ABORTED yet it is ",
                                  v1::MoveState_Name(*now)));
        move.unknown = true;
      }
      report_.Note(absl::StrCat(rpc, " aborted after retries, nothing written"));
      return false;
    }
    if (!answer.in_doubt && !OutcomeUnknown(answer.status)) {
      // Only this client changes this move: a valid transition refused is a defect.
      report_.Fail(absl::StrCat("2. ", rpc, " ", v1::MoveState_Name(move.path.back()), " -> ",
                                v1::MoveState_Name(target), " of move ", move.id,
                                " refused: ", Report::CodeName(answer.status.error_code()), " ",
                                answer.status.error_message()));
      move.unknown = true;
      return false;
    }
    std::optional<v1::MoveState> now = ReadState(move.id);
    if (!now.has_value()) {
      report_.Fail(absl::StrCat(rpc, " outcome unknown and unreadable for move ", move.id));
      move.unknown = true;
      return false;
    }
    report_.Note(absl::StrCat(rpc, " outcome unknown, resolved by reading: ",
                              *now == target ? "applied" : "not applied"));
    if (*now == target) {
      move.path.push_back(target);
      return true;
    }
    if (*now != move.path.back()) {
      report_.Fail(absl::StrCat("2. move ", move.id, " is ", v1::MoveState_Name(*now), ", neither ",
                                v1::MoveState_Name(move.path.back()), " nor ",
                                v1::MoveState_Name(target)));
      move.unknown = true;
    }
    return false;
  }

  std::optional<v1::MoveState> ReadState(const std::string& move_id) {
    v1::GetMoveRequest request;
    request.set_move_id(move_id);
    for (int attempt = 0; attempt < kReadAttempts; ++attempt) {
      v1::Move move;
      const grpc::Status status = rpc_.Once(
          attempt % rpc_.replicas(), &v1::MoveService::Stub::GetMove, "GetMove", request, &move);
      if (status.ok()) return move.state();
      if (!OutcomeUnknown(status)) return std::nullopt;
      std::this_thread::sleep_for(250ms);
    }
    return std::nullopt;
  }

  // Drives an open move to a terminal state by the shortest way.
  void Finish(MoveRecord& move) {
    for (int step = 0; step < 6 && !move.terminal() && !move.unknown; ++step) {
      switch (move.path.back()) {
        case v1::MOVE_DRAFT:
        case v1::MOVE_PLANNED:
        case v1::MOVE_APPROVED:
          Advance(move, v1::MOVE_CANCELLED, v1::OBSERVATION_UNSPECIFIED);
          break;
        case v1::MOVE_IN_PROGRESS:
          Advance(move, v1::MOVE_FAILED, v1::OBSERVATION_UNSPECIFIED);
          break;
        case v1::MOVE_AWAITING_VERIFICATION:
          Advance(move, v1::MOVE_COMPLETED, v1::OBSERVATION_UNSPECIFIED);
          break;
        case v1::MOVE_NEEDS_RECONCILE:
          Advance(move, v1::MOVE_FAILED, v1::OBSERVATION_NOT_MOVED);
          break;
        default:
          return;
      }
    }
  }

 private:
  FailoverClient<v1::MoveService> rpc_;
  Report& report_;
};

// A WatchMove stream read on its own thread.
class WatchStream {
 public:
  WatchStream(v1::MoveService::Stub& stub, const std::string& token, const std::string& move_id,
              std::chrono::seconds deadline) {
    context_.AddMetadata("authorization", "Bearer " + token);
    context_.set_deadline(std::chrono::system_clock::now() + deadline);
    v1::WatchMoveRequest request;
    request.set_move_id(move_id);
    reader_ = stub.WatchMove(&context_, request);
    thread_ = std::thread([this] {
      v1::MoveEvent event;
      while (reader_->Read(&event)) {
        std::lock_guard<std::mutex> lock(mu_);
        events_.push_back(event);
        changed_.notify_all();
      }
      const grpc::Status status = reader_->Finish();
      std::lock_guard<std::mutex> lock(mu_);
      status_ = status;
      changed_.notify_all();
    });
  }
  ~WatchStream() {
    context_.TryCancel();
    thread_.join();
  }

  // Waits until `count` events arrived (true) or the stream ended or `timeout` passed (false).
  bool WaitForEvents(size_t count, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return changed_.wait_for(lock, timeout, [&] {
      return events_.size() >= count || status_.has_value();
    }) && events_.size() >= count;
  }
  // Waits until the stream ended; its status.
  std::optional<grpc::Status> WaitForEnd(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait_for(lock, timeout, [&] { return status_.has_value(); });
    return status_;
  }
  std::vector<v1::MoveEvent> events() {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }
  bool broken() {
    std::lock_guard<std::mutex> lock(mu_);
    return status_.has_value() && !status_->ok();
  }

 private:
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReader<v1::MoveEvent>> reader_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::vector<v1::MoveEvent> events_;
  std::optional<grpc::Status> status_;
};

// The events a stream delivered against the path the move's client knows: the same states in
// the same order, sequences 1, 2, 3 ...; empty when they agree.
inline std::string CompareEvents(const std::vector<v1::MoveEvent>& events,
                          const std::vector<v1::MoveState>& path) {
  std::vector<std::string> got, want;
  bool ordered = true;
  for (size_t i = 0; i < events.size(); ++i) {
    got.push_back(
        absl::StrCat(events[i].sequence(), ":", v1::MoveState_Name(events[i].to_state())));
    if (events[i].sequence() != static_cast<int64_t>(i + 1)) ordered = false;
  }
  for (size_t i = 0; i < path.size(); ++i) {
    want.push_back(absl::StrCat(i + 1, ":", v1::MoveState_Name(path[i])));
  }
  if (ordered && got == want) return "";
  return absl::StrCat("delivered [", absl::StrJoin(got, " "), "], made [", absl::StrJoin(want, " "),
                      "]");
}

class MoveClient {
 public:
  MoveClient(SuiteProcesses& suite, const World& world, int index, std::vector<std::string> devices,
             uint64_t seed, Report& report)
      : driver_(suite, world, index, report),
        world_(world),
        devices_(std::move(devices)),
        rng_(seed * 3000 + index),
        report_(report) {}

  void Run(const std::atomic<bool>& stop) {
    while (!stop.load()) Step();
    // Leave nothing half-done that the audit would have to guess about: open moves stay open
    // (the audit checks their destination is held), the record says where each one is.
    for (auto& [device, move] : open_) moves_.push_back(move);
  }
  const std::vector<MoveRecord>& moves() const { return moves_; }

 private:
  void Step() {
    if (devices_.empty()) {  // every device's state became unknown: nothing left to move
      std::this_thread::sleep_for(50ms);
      return;
    }
    const std::string device = devices_[rng_() % devices_.size()];
    auto open = open_.find(device);
    if (open == open_.end()) {
      const std::string rack = world_.move_racks[rng_() % world_.move_racks.size()];
      std::optional<MoveRecord> move =
          driver_.Start(device, rack, 1 + static_cast<int>(rng_() % kRackUnits));
      if (move.has_value()) open_[device] = *move;
      return;
    }
    MoveRecord& move = open->second;
    const uint32_t r = rng_() % 100;
    v1::MoveState target = v1::MOVE_CANCELLED;
    v1::Observation observation = v1::OBSERVATION_UNSPECIFIED;
    switch (move.path.back()) {
      case v1::MOVE_PLANNED:
        target = r < 75 ? v1::MOVE_APPROVED : v1::MOVE_CANCELLED;
        break;
      case v1::MOVE_APPROVED:
        target = r < 85 ? v1::MOVE_IN_PROGRESS : v1::MOVE_CANCELLED;
        break;
      case v1::MOVE_IN_PROGRESS:
        target = r < 70   ? v1::MOVE_AWAITING_VERIFICATION
                 : r < 90 ? v1::MOVE_NEEDS_RECONCILE
                          : v1::MOVE_FAILED;
        break;
      case v1::MOVE_AWAITING_VERIFICATION:
        target = r < 85 ? v1::MOVE_COMPLETED : v1::MOVE_NEEDS_RECONCILE;
        break;
      case v1::MOVE_NEEDS_RECONCILE:
        target = r < 50 ? v1::MOVE_COMPLETED : v1::MOVE_FAILED;
        observation = r < 50 ? v1::OBSERVATION_FOUND_AT_DESTINATION : v1::OBSERVATION_NOT_MOVED;
        break;
      default:
        break;
    }
    driver_.Advance(move, target, observation);
    if (move.unknown) {
      moves_.push_back(move);
      open_.erase(open);
      devices_.erase(std::find(devices_.begin(), devices_.end(), device));
      return;
    }
    if (!move.terminal()) return;
    CheckReplay(move);
    moves_.push_back(move);
    open_.erase(open);
  }

  // A finished move's stream, on a replica the client picks at random: its whole history, as
  // the client made it (through whichever replicas), then the end of the stream.
  void CheckReplay(const MoveRecord& move) {
    for (int attempt = 0; attempt < 4; ++attempt) {
      const int replica = static_cast<int>(rng_() % driver_.rpc().replicas());
      WatchStream stream(driver_.rpc().stub(replica), driver_.rpc().token(), move.id, 5s);
      const std::optional<grpc::Status> end = stream.WaitForEnd(6000ms);
      if (end.has_value() && OutcomeUnknown(*end)) continue;  // that replica is down
      report_.Note("WatchMove replays of finished moves");
      if (!end.has_value() || !end->ok()) {
        report_.Fail(absl::StrCat("3. WatchMove of finished move ", move.id,
                                  " did not end OK: ", end ? end->error_message() : "still open"));
        return;
      }
      if (const std::string diff = CompareEvents(stream.events(), move.path); !diff.empty()) {
        report_.Fail(absl::StrCat("3. WatchMove of finished move ", move.id, ": ", diff));
      }
      return;
    }
  }

  MoveDriver driver_;
  const World& world_;
  std::vector<std::string> devices_;
  std::mt19937_64 rng_;
  Report& report_;
  std::map<std::string, MoveRecord> open_;  // by device
  std::vector<MoveRecord> moves_;
};

// The watch probe: a move made through one moves replica, watched live on the other. Each
// cycle starts the move through B, opens WatchMove on A, and makes every further transition
// through B only after A's stream delivered the previous one: each event A delivers was
// committed through B while A's stream was open, so it reached A through A's own listener.
class WatchProbe {
 public:
  WatchProbe(SuiteProcesses& suite, const World& world, std::string device, Report& report)
      : suite_(suite),
        world_(world),
        device_(std::move(device)),
        replicas_(suite.ReplicasOf(SuiteService::kMoves)),
        driver_(suite, world, 100, report),
        report_(report) {}

  void Run(const std::atomic<bool>& stop, const std::atomic<bool>& killed) {
    int unit = 20;
    for (int cycle = 0; !stop.load(); ++cycle) {
      const int a = cycle % 2, b = 1 - a;
      if (!suite_.Running(replicas_[a]) || !suite_.Running(replicas_[b])) {
        std::this_thread::sleep_for(100ms);
        continue;
      }
      const Outcome outcome = Cycle(a, b, unit);
      if (outcome == Outcome::kComplete) {
        unit = unit == 20 ? 10 : 20;  // the device now stands at the destination
        report_.Note(killed.load() ? "watch probe: cycles complete after the kill"
                                   : "watch probe: cycles complete before the kill");
      } else if (outcome == Outcome::kInterrupted) {
        report_.Note("watch probe: cycles interrupted by the kill");
      }
    }
  }
  std::vector<MoveRecord>& moves() { return moves_; }

 private:
  enum class Outcome { kComplete, kInterrupted, kRefused };

  Outcome Cycle(int a, int b, int unit) {
    auto& rpc = driver_.rpc();
    // Every write of the cycle goes through B (unless B dies: then the client fails over to A
    // and the cycle counts as interrupted); A only streams.
    rpc.Prefer(b);
    bool failed_over = false;
    std::optional<MoveRecord> started =
        driver_.Start(device_, world_.probe_rack, unit, &failed_over);
    if (!started.has_value()) return Outcome::kRefused;
    MoveRecord move = *started;
    Outcome outcome = failed_over ? Outcome::kInterrupted : Outcome::kComplete;
    {
      WatchStream stream(rpc.stub(a), rpc.token(), move.id, 30s);
      const std::vector<v1::MoveState> targets = {v1::MOVE_APPROVED, v1::MOVE_IN_PROGRESS,
                                                  v1::MOVE_AWAITING_VERIFICATION,
                                                  v1::MOVE_COMPLETED};
      for (size_t i = 0; outcome == Outcome::kComplete; ++i) {
        if (!stream.WaitForEvents(move.path.size(), 5000ms)) {
          if (stream.broken() || !suite_.Running(replicas_[a]) || !suite_.Running(replicas_[b])) {
            outcome = Outcome::kInterrupted;
          } else {
            report_.Fail(absl::StrCat("3. WatchMove on ", replicas_[a], " did not deliver ",
                                      v1::MoveState_Name(move.path.back()), " of move ", move.id,
                                      " made through ", replicas_[b],
                                      " within 5 s: ", CompareEvents(stream.events(), move.path)));
            outcome = Outcome::kRefused;
          }
          break;
        }
        if (const std::string diff = CompareEvents(stream.events(), move.path); !diff.empty()) {
          report_.Fail(absl::StrCat("3. WatchMove on ", replicas_[a], " of move ", move.id,
                                    " made through ", replicas_[b], ": ", diff));
          outcome = Outcome::kRefused;
          break;
        }
        if (i == targets.size()) break;
        bool advanced_elsewhere = false;
        rpc.Prefer(b);
        driver_.Advance(move, targets[i], v1::OBSERVATION_UNSPECIFIED, &advanced_elsewhere);
        if (advanced_elsewhere || move.unknown) outcome = Outcome::kInterrupted;
        if (move.path.back() != targets[i]) break;
      }
      if (outcome == Outcome::kComplete) {
        const std::optional<grpc::Status> end = stream.WaitForEnd(5000ms);
        if (!end.has_value() || !end->ok()) {
          report_.Fail(absl::StrCat("3. WatchMove of completed move ", move.id, " on ",
                                    replicas_[a], " did not end OK"));
        }
      }
    }
    if (!move.terminal()) driver_.Finish(move);
    moves_.push_back(move);
    if (outcome == Outcome::kComplete || move.path.back() == v1::MOVE_COMPLETED) {
      return Outcome::kComplete;
    }
    return outcome;
  }

  SuiteProcesses& suite_;
  const World& world_;
  const std::string device_;
  const std::vector<std::string> replicas_;
  MoveDriver driver_;
  Report& report_;
  std::vector<MoveRecord> moves_;
};

// ---------------------------------------------------------------------------------------------
// Seed, run, audit.

struct Seeded {
  World world;
  std::vector<std::vector<std::string>> services;           // per reservation client
  std::vector<std::vector<std::string>> occupancy_devices;  // per occupancy client
  std::vector<std::vector<std::string>> move_devices;       // per move client
  std::string probe_device;
};

// One connection for the audit's many small reads (a connection per read would take longer
// than the load).
class Reader {
 public:
  explicit Reader(const std::string& url) : conn_(url) {}
  pqxx::result Exec(const std::string& sql) {
    pqxx::nontransaction tx(conn_);
    return tx.exec(sql);
  }
  std::string Scalar(const std::string& sql) {
    const pqxx::result result = Exec(sql);
    if (result.size() != 1) throw std::runtime_error("expected one row from: " + sql);
    return result[0][0].is_null() ? "" : result[0][0].c_str();
  }
  int64_t Count(const std::string& sql) { return std::stoll(Scalar(sql)); }

 private:
  pqxx::connection conn_;
};

// The mixed workload under way, as the replica test and the rolling upgrade run it: `clients`
// reservation, occupancy and move clients and the WatchMove probe, each on a thread of its own
// from construction until Stop(); the destructor stops them too, so that whatever ends a run (an
// exception as well) the clients stop before their state goes away. The probe counts its cycles
// as before or after the disruption by `disrupted`.
class Workload {
 public:
  Workload(SuiteProcesses& suite, const Seeded& seeded, int clients, uint64_t seed,
           Report& report, const std::atomic<bool>& disrupted) {
    const World& world = seeded.world;
    for (int c = 0; c < clients; ++c) {
      reservation_.push_back(
          std::make_unique<ReservationClient>(suite, world, c, seeded.services[c], seed, report));
      occupancy_.push_back(std::make_unique<OccupancyClient>(
          suite, world, c, seeded.occupancy_devices[c], seed, report));
      moves_.push_back(
          std::make_unique<MoveClient>(suite, world, c, seeded.move_devices[c], seed, report));
    }
    probe_ = std::make_unique<WatchProbe>(suite, world, seeded.probe_device, report);
    for (int c = 0; c < clients; ++c) {
      threads_.emplace_back([this, c] { reservation_[c]->Run(stop_); });
      threads_.emplace_back([this, c] { occupancy_[c]->Run(stop_); });
      threads_.emplace_back([this, c] { moves_[c]->Run(stop_); });
    }
    threads_.emplace_back([this, &disrupted] { probe_->Run(stop_, disrupted); });
  }
  Workload(const Workload&) = delete;
  Workload& operator=(const Workload&) = delete;
  ~Workload() { Stop(); }

  void Stop() {
    stop_.store(true);
    for (std::thread& thread : threads_) {
      if (thread.joinable()) thread.join();
    }
  }

  // After Stop(), parts 2 and 3 of the audit: every acknowledged write of the clients present
  // with the acknowledged values, refused writes absent; and the probe completed watch cycles
  // before and after the disruption (`disruption` names it: "the kill", "the upgrade").
  void AuditWrites(Reader& db, const std::string& org, const std::string& disruption,
                   Report& report) const;

 private:
  std::atomic<bool> stop_{false};
  std::vector<std::unique_ptr<ReservationClient>> reservation_;
  std::vector<std::unique_ptr<OccupancyClient>> occupancy_;
  std::vector<std::unique_ptr<MoveClient>> moves_;
  std::unique_ptr<WatchProbe> probe_;
  std::vector<std::thread> threads_;  // last: joined before the clients go away
};

// The seeded world: an organization, a sale site with `sale_machines` machines, racks, and per
// client its services and devices.
Seeded Seed(const testing::TestDatabase& db, int clients, int sale_machines);
// The devices that moves start from, placed before the load (through the servers).
void PlaceMoveDevices(SuiteProcesses& suite, const Seeded& seeded);

std::vector<std::string> Column(Reader& db, const std::string& sql);
// Every location history row's id and digest, to prove later that none changed or vanished.
std::map<std::string, std::string> HistoryDigests(Reader& db);
v1::MoveState StateFromName(const std::string& name);

// The audit. 1: every invariant over the whole database; 2: every acknowledged write of the
// clients present with the acknowledged values, refused writes absent.
void AuditInvariants(Reader& db, Report& report);
void AuditHolds(Reader& db, const std::string& org,
                const std::vector<std::unique_ptr<ReservationClient>>& clients, Report& report);
void AuditBookings(Reader& db, const std::string& org,
                   const std::vector<std::unique_ptr<OccupancyClient>>& clients, Report& report);
void AuditMoves(Reader& db, const std::vector<const MoveRecord*>& moves, Report& report);
// 1. Location history rows as `seen` earlier (HistoryDigests) still there, unchanged; `when`
// names the moment they were seen.
void AuditHistoryUnchanged(Reader& db, const std::map<std::string, std::string>& seen,
                           const std::string& when, Report& report);
// 4. Every process runs unless killed on purpose, every server serves.
void AuditProcesses(SuiteProcesses& suite, Report& report);

}  // namespace dcl::workload

#endif  // DCL_TESTS_SUPPORT_MIXED_WORKLOAD_H_
