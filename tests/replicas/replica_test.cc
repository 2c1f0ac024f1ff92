// Replicas, proven (issue 14): two replicas of each server binary and two sweepers on one
// throwaway database (tests/support/suite_processes.h), clients spread over the replicas
// running a mixed load of all three services for a bounded time, and in the middle one replica
// of each service and one sweeper SIGKILLed (restarted a few seconds later). Clients fail over:
// a call answered UNAVAILABLE or not at all is sent once more to the other replica — Reserve
// with the same idempotency key, as often as needed; any other write's first outcome is then
// unknown and is resolved by reading (GetReservation, GetMove, ListMoves at once; a booking by
// its unique reason in the database at the end).
//
// It fails when, afterwards,
//   1. an invariant of the data does not hold (audit below: no machine held twice, one active
//      binding per machine and per service, no slot booked twice, placements without expiry,
//      no open move without its destination held, one move event and one history row per
//      transition, history unchanged since the kill, sweeper expiries after their deadlines);
//   2. an acknowledged write is missing or differs from what was acknowledged;
//   3. a WatchMove stream on one moves replica does not deliver, in order and complete, the
//      transitions made through the other replica (the probe), or a finished move's stream
//      differs from the transitions its client made;
//   4. a call is answered INTERNAL or UNKNOWN, a process exits that nobody killed, or a
//      server is not SERVING at the end.
// With --through_pgbouncer the servers' and sweepers' pools go through the test run's
// PgBouncer in transaction mode (--database_pooler=transaction); the moves servers' LISTEN
// connection goes to PostgreSQL directly (--watch_database_url).
//   replica_test [--through_pgbouncer [--watch_through_pgbouncer]] [--seconds=20] [--kill_at=8]
//   [--restart_after=4]
//                [--clients=4] [--seed=1]
#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dcl/v1/moves.grpc.pb.h"
#include "dcl/v1/occupancy.grpc.pb.h"
#include "dcl/v1/reservation.grpc.pb.h"
#include "google/rpc/status.pb.h"
#include "services/moves/move_state.h"
#include "tests/support/fixtures.h"
#include "tests/support/suite_processes.h"
#include "tests/support/test_db.h"

ABSL_FLAG(bool, through_pgbouncer, false,
          "pools through the test run's PgBouncer in transaction mode");
ABSL_FLAG(bool, watch_through_pgbouncer, false,
          "with --through_pgbouncer: the moves servers' LISTEN goes through the pooler too, to "
          "show why it must not (the watch probe then fails)");
ABSL_FLAG(double, seconds, 20, "length of the mixed load");
ABSL_FLAG(double, kill_at, 8,
          "seconds into the load when one replica of each service and one "
          "sweeper are SIGKILLed");
ABSL_FLAG(double, restart_after, 4, "seconds until the killed processes start again");
ABSL_FLAG(int, clients, 4, "clients per service");
ABSL_FLAG(uint64_t, seed, 1, "seed of the clients' choices");

namespace dcl::replicas {
namespace {

using Clock = std::chrono::steady_clock;
using testing::SuiteProcesses;
using testing::SuiteService;
using namespace std::chrono_literals;

constexpr auto kCallDeadline = 5s;
constexpr int kRackUnits = 42;

// ---------------------------------------------------------------------------------------------
// What happened: outcomes per RPC, failover statistics, failures.

class Report {
 public:
  void Count(const std::string& rpc, const grpc::Status& status) {
    std::string reason;
    google::rpc::Status details;
    if (!status.error_details().empty() && details.ParseFromString(status.error_details())) {
      for (const auto& any : details.details()) {
        google::rpc::ErrorInfo info;
        if (any.Is<google::rpc::ErrorInfo>() && any.UnpackTo(&info)) reason = info.reason();
      }
    }
    const std::string code = CodeName(status.error_code());
    std::lock_guard<std::mutex> lock(mu_);
    ++outcomes_[absl::StrCat(rpc, " ", code, reason.empty() ? "" : "/", reason)];
    if (status.error_code() == grpc::StatusCode::INTERNAL ||
        status.error_code() == grpc::StatusCode::UNKNOWN) {
      failures_.push_back(
          absl::StrCat("4. ", rpc, " answered ", code, ": ", status.error_message()));
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
  void Print() {
    std::lock_guard<std::mutex> lock(mu_);
    int64_t calls = 0;
    for (const auto& [key, count] : outcomes_) calls += count;
    std::printf("\ncalls per outcome (%lld calls):\n", static_cast<long long>(calls));
    for (const auto& [key, count] : outcomes_) {
      std::printf("  %-62s %7lld\n", key.c_str(), static_cast<long long>(count));
    }
    std::printf("failover:\n");
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

 private:
  std::mutex mu_;
  std::map<std::string, int64_t> outcomes_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int64_t> counters_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> failures_ ABSL_GUARDED_BY(mu_);
};

std::string ReasonOf(const grpc::Status& status) {
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

// The caller cannot tell whether the write happened: the server died under the call, or the
// answer did not come in time.
bool OutcomeUnknown(const grpc::Status& status) {
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
      : preferred_(index % 2), token_(std::move(token)), report_(report) {
    for (const std::string& name : suite.ReplicasOf(service)) {
      stubs_.push_back(Service::NewStub(testing::LocalChannel(suite.Port(name), index)));
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
    const grpc::Status status = (stub(replica).*method)(&context, request, response);
    report_.Count(rpc, status);
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
    for (int attempt = 0; attempt < attempts; ++attempt) {
      if (attempt > 0) {
        answer.in_doubt = true;
        preferred_ = (preferred_ + 1) % replicas();
        report_.Note(absl::StrCat("retries on the other replica: ", rpc));
        if (attempt >= 2) std::this_thread::sleep_for(250ms);
      }
      answer.status = Once(preferred_, method, rpc, request, response);
      if (!OutcomeUnknown(answer.status)) return answer;
    }
    return answer;
  }

 private:
  std::vector<std::unique_ptr<typename Service::Stub>> stubs_;
  int preferred_;
  const std::string token_;
  Report& report_;
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
  const std::vector<std::string>& unanswered_keys() const { return unanswered_keys_; }

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
      unanswered_keys_.push_back(key);
      return;
    }
    if (!answer.status.ok()) return;
    if (answer.in_doubt) report_.Note("Reserve acknowledged after a retry with the same key");
    HoldRecord& hold = holds_[key];
    hold.key = key;
    hold.id = response.reservation().id();
    hold.device = response.reservation().device_id();
    const uint32_t next = rng_() % 10;
    if (next < 4 && !free_services_.empty()) {
      Convert(hold);
    } else if (next < 7) {
      Cancel(hold);
    }  // else: left to lapse, for the sweepers
  }

  // The reservation as the database has it now, read through any replica.
  std::optional<v1::Reservation> Read(const std::string& id) {
    v1::GetReservationRequest request;
    request.mutable_reservation()->set_reservation_id(id);
    for (int attempt = 0; attempt < 12; ++attempt) {
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
  std::vector<std::string> unanswered_keys_;
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
    if (answer.in_doubt || OutcomeUnknown(answer.status)) {
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
    for (int attempt = 0; attempt < 12; ++attempt) {
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
    for (int attempt = 0; attempt < 12; ++attempt) {
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
std::string CompareEvents(const std::vector<v1::MoveEvent>& events,
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

Seeded Seed(const testing::TestDatabase& db, int clients) {
  Seeded seeded;
  World& world = seeded.world;
  world.org = testing::CreateOrg(db, "replicas");
  world.sale_site = testing::CreateSite(db, world.org, "SALE1");
  world.dc_site = testing::CreateSite(db, world.org, "DC1");
  auto rack = [&](const std::string& name) {
    testing::RackSpec spec;
    spec.name = name;
    spec.unit_count = kRackUnits;
    return testing::CreateRack(db, world.org, world.dc_site, spec);
  };
  world.occupancy_racks = {rack("O1"), rack("O2")};
  world.move_racks = {rack("M1"), rack("M2")};
  world.probe_rack = rack("P1");
  testing::DeviceSpec dell;
  // A small stock, so that holds meet NO_CAPACITY and the sweepers return lapsed ones.
  for (int i = 0; i < 3 * clients; ++i) testing::CreateDevice(db, world.org, world.sale_site, dell);
  seeded.services.resize(clients);
  seeded.occupancy_devices.resize(clients);
  seeded.move_devices.resize(clients);
  for (int c = 0; c < clients; ++c) {
    for (int i = 0; i < 3; ++i) {
      seeded.services[c].push_back(db.Scalar(absl::StrCat(
          "INSERT INTO services (org_id, kind, customer, created_by) VALUES ('", world.org,
          "', 'dedicated', 'customer-", c, "-", i, "', 'seed') RETURNING id")));
    }
    for (int i = 0; i < 2; ++i) {
      seeded.occupancy_devices[c].push_back(
          testing::CreateDevice(db, world.org, world.dc_site, dell));
      seeded.move_devices[c].push_back(testing::CreateDevice(db, world.org, world.dc_site, dell));
    }
  }
  seeded.probe_device = testing::CreateDevice(db, world.org, world.dc_site, dell);
  world.commerce_token = testing::CreateTokenFor(db, world.org, Role::kCommerce);
  world.operator_token = testing::CreateTokenFor(db, world.org, Role::kDcOperator);
  return seeded;
}

// The devices that moves start from, placed before the load (through the servers).
void PlaceMoveDevices(SuiteProcesses& suite, const Seeded& seeded) {
  auto stub = v1::OccupancyService::NewStub(
      testing::LocalChannel(suite.Port(suite.ReplicasOf(SuiteService::kOccupancy)[0])));
  auto place = [&](const std::string& device, const std::string& rack, int unit) {
    grpc::ClientContext context;
    context.AddMetadata("authorization", "Bearer " + seeded.world.operator_token);
    context.set_deadline(std::chrono::system_clock::now() + 10s);
    v1::PlaceDeviceRequest request;
    request.set_rack_id(rack);
    request.set_device_id(device);
    request.set_side(v1::SIDE_FRONT);
    request.set_unit(unit);
    request.set_reason("starting position");
    v1::Booking booking;
    const grpc::Status status = stub->PlaceDevice(&context, request, &booking);
    if (!status.ok())
      throw std::runtime_error("placing a device failed: " + status.error_message());
  };
  int unit = 1;
  for (const auto& devices : seeded.move_devices) {
    for (const std::string& device : devices) {
      place(device, seeded.world.move_racks[0], unit);
      unit += 2;
    }
  }
  place(seeded.probe_device, seeded.world.probe_rack, 10);
}

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

std::vector<std::string> Column(Reader& db, const std::string& sql) {
  std::vector<std::string> values;
  for (const auto& row : db.Exec(sql)) values.push_back(row[0].is_null() ? "" : row[0].c_str());
  return values;
}

std::map<std::string, std::string> HistoryDigests(Reader& db) {
  std::map<std::string, std::string> digests;
  for (const auto& row : db.Exec("SELECT id::text, md5(l::text) FROM location_history l")) {
    digests[row[0].c_str()] = row[1].c_str();
  }
  return digests;
}

v1::MoveState StateFromName(const std::string& name) {
  v1::MoveState state = v1::MOVE_STATE_UNSPECIFIED;
  std::string upper = "MOVE_" + name;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  v1::MoveState_Parse(upper, &state);
  return state;
}

// 1. Every invariant, over the whole database.
void AuditInvariants(Reader& db, Report& report) {
  const char* const kOpen = "state NOT IN ('completed', 'cancelled', 'failed')";
  const std::vector<std::pair<std::string, std::string>> invariants = {
      {"no machine held twice",
       "SELECT device_id::text FROM reservations WHERE state = 'held' GROUP BY device_id "
       "HAVING count(*) > 1"},
      {"no held machine bound to a service",
       "SELECT r.id::text FROM reservations r JOIN service_bindings b ON b.device_id = "
       "r.device_id AND b.ended_at IS NULL WHERE r.state = 'held'"},
      {"one active binding per machine",
       "SELECT device_id::text FROM service_bindings WHERE ended_at IS NULL GROUP BY device_id "
       "HAVING count(*) > 1"},
      {"one active binding per service",
       "SELECT service_id::text FROM service_bindings WHERE ended_at IS NULL GROUP BY service_id "
       "HAVING count(*) > 1"},
      {"no slot booked twice",
       "SELECT rack_id::text || ' ' || side || ' ' || unit FROM booking_slots WHERE released_at "
       "IS NULL GROUP BY rack_id, side, unit HAVING count(*) > 1"},
      {"a booking's slots are released with it",
       "SELECT DISTINCT b.id::text FROM bookings b JOIN booking_slots s ON s.booking_id = b.id "
       "WHERE (b.released_at IS NULL) <> (s.released_at IS NULL)"},
      {"every placement without expiry",
       "SELECT id::text FROM bookings WHERE kind = 'placement' AND expires_at IS NOT NULL"},
      {"one active placement per device",
       "SELECT device_id::text FROM bookings WHERE kind = 'placement' AND released_at IS NULL "
       "GROUP BY device_id HAVING count(*) > 1"},
      {"no open move without its destination held",
       absl::StrCat("SELECT m.id::text FROM moves m LEFT JOIN bookings h ON h.id = "
                    "m.move_hold_booking_id WHERE m.",
                    kOpen,
                    " AND (h.id IS NULL OR h.released_at IS NOT NULL OR NOT EXISTS (SELECT 1 "
                    "FROM booking_slots s WHERE s.booking_id = h.id AND s.released_at IS NULL))")},
      {"one open move per device", absl::StrCat("SELECT device_id::text FROM moves WHERE ", kOpen,
                                                " GROUP BY device_id HAVING count(*) > 1")},
      {"a device is moving exactly while it has an open move",
       absl::StrCat("SELECT d.id::text FROM devices d WHERE (d.process_state = 'moving') <> "
                    "EXISTS (SELECT 1 FROM moves m WHERE m.device_id = d.id AND m.",
                    kOpen, ")")},
      {"every move has its events numbered 1..n",
       "SELECT m.id::text FROM moves m LEFT JOIN (SELECT move_id, min(sequence) AS low, "
       "max(sequence) AS high, count(*) AS n FROM move_events GROUP BY move_id) e ON e.move_id "
       "= m.id WHERE e.n IS NULL OR e.low <> 1 OR e.high <> e.n"},
      {"each move event starts where the one before ended",
       "SELECT e.move_id::text || ' #' || e.sequence FROM move_events e LEFT JOIN move_events p "
       "ON p.move_id = e.move_id AND p.sequence = e.sequence - 1 WHERE (e.sequence = 1 AND "
       "e.from_state IS NOT NULL) OR (e.sequence > 1 AND e.from_state IS DISTINCT FROM "
       "p.to_state)"},
      {"a move's state is its last event's",
       "SELECT m.id::text FROM moves m JOIN LATERAL (SELECT to_state FROM move_events e WHERE "
       "e.move_id = m.id ORDER BY sequence DESC LIMIT 1) last ON true WHERE last.to_state <> "
       "m.state"},
      {"one location history row per move event, in the same order",
       "SELECT m.id::text FROM moves m WHERE (SELECT array_agg(to_state ORDER BY sequence) FROM "
       "move_events e WHERE e.move_id = m.id) IS DISTINCT FROM (SELECT array_agg(move_state "
       "ORDER BY id) FROM location_history l WHERE l.move_id = m.id AND l.event <> "
       "'correction')"},
      {"sweeper expiries after their deadline (database clock)",
       "SELECT id::text FROM reservations WHERE end_reason = 'expired_by_sweeper' AND ended_at "
       "< expires_at"},
      {"sweeper releases after their deadline (database clock)",
       "SELECT id::text FROM bookings WHERE released_by = 'sweeper' AND released_at < "
       "expires_at"},
  };
  for (const auto& [name, sql] : invariants) {
    const std::vector<std::string> offending = Column(db, sql);
    std::printf(
        "  %-64s %s\n", name.c_str(),
        offending.empty() ? "holds" : absl::StrCat("BROKEN (", offending.size(), ")").c_str());
    if (!offending.empty()) {
      report.Fail(absl::StrCat(
          "1. invariant broken: ", name, ": ",
          absl::StrJoin(offending.begin(),
                        offending.begin() + std::min<size_t>(3, offending.size()), ", ")));
    }
  }
  int64_t transitions = 0;
  for (const auto& row :
       db.Exec("SELECT move_id::text, from_state, to_state FROM move_events WHERE from_state IS "
               "NOT NULL")) {
    moves::MoveState from, to;
    ++transitions;
    if (!moves::ParseState(row[1].c_str(), &from) || !moves::ParseState(row[2].c_str(), &to) ||
        !moves::IsAllowed(from, to)) {
      report.Fail(absl::StrCat("1. invariant broken: move ", row[0].c_str(), " went ",
                               row[1].c_str(), " -> ", row[2].c_str(), ", not in the table"));
    }
  }
  std::printf("  %-64s checked (%lld)\n", "every recorded transition is in the transition table",
              static_cast<long long>(transitions));
}

void AuditHolds(Reader& db, const std::string& org,
                const std::vector<std::unique_ptr<ReservationClient>>& clients, Report& report) {
  int64_t checked = 0;
  for (const auto& client : clients) {
    for (const auto& [key, hold] : client->holds()) {
      if (hold.unknown) continue;
      ++checked;
      const pqxx::result rows = db.Exec(absl::StrCat(
          "SELECT id::text, device_id::text, state, coalesce(service_id::text, ''), "
          "coalesce(end_reason, ''), ended_at >= expires_at FROM reservations WHERE org_id = '",
          org, "' AND idempotency_key = '", key, "'"));
      if (rows.size() != 1) {
        report.Fail(absl::StrCat("2. acknowledged Reserve ", key, " is missing"));
        continue;
      }
      const pqxx::row row = rows[0];
      const std::string state = row[2].c_str();
      std::string wrong;
      if (hold.id != row[0].c_str() || hold.device != row[1].c_str()) {
        wrong = absl::StrCat("reservation ", row[0].c_str(), " of device ", row[1].c_str(),
                             ", acknowledged ", hold.id, " of device ", hold.device);
      } else if (hold.state == "held") {
        const bool lapsed = state == "expired" && !row[5].is_null() && row[5].as<bool>() &&
                            (std::string(row[4].c_str()) == "expired_by_sweeper" ||
                             std::string(row[4].c_str()) == "expired_at_conversion");
        if (state != "held" && !lapsed) wrong = "held, now " + state + " " + row[4].c_str();
      } else if (state != hold.state) {
        wrong = hold.state + ", now " + state;
      } else if (hold.state == "converted" && hold.service != row[3].c_str()) {
        wrong = absl::StrCat("converted to service ", hold.service, ", now ", row[3].c_str());
      }
      if (hold.state == "converted" && !hold.binding.empty() && wrong.empty()) {
        const pqxx::result binding = db.Exec(
            absl::StrCat("SELECT service_id::text, device_id::text, ended_at IS NOT NULL FROM "
                         "service_bindings WHERE id = '",
                         hold.binding, "'"));
        if (binding.size() != 1 || hold.service != binding[0][0].c_str() ||
            hold.device != binding[0][1].c_str() ||
            binding[0][2].as<bool>() != hold.binding_ended) {
          wrong =
              absl::StrCat("binding ", hold.binding,
                           " not as acknowledged (ended: ", hold.binding_ended ? "yes" : "no", ")");
        }
      }
      if (!wrong.empty()) report.Fail(absl::StrCat("2. reservation ", key, ": ", wrong));
    }
    for (const std::string& key : client->unanswered_keys()) {
      report.Note(absl::StrCat("Reserve never answered, in the database at the end: ",
                               db.Count(absl::StrCat("SELECT count(*) FROM reservations WHERE "
                                                     "idempotency_key = '",
                                                     key, "'"))));
    }
  }
  std::printf("  %-64s %lld\n", "acknowledged reservations compared",
              static_cast<long long>(checked));
}

void AuditBookings(Reader& db, const std::string& org,
                   const std::vector<std::unique_ptr<OccupancyClient>>& clients, Report& report) {
  static const std::map<std::string, v1::BookingKind> kKinds = {
      {"placement", v1::BOOKING_PLACEMENT},
      {"blocking", v1::BOOKING_BLOCKING},
      {"move_hold", v1::BOOKING_MOVE_HOLD},
      {"reservation", v1::BOOKING_RESERVATION}};
  int64_t checked = 0;
  for (const auto& client : clients) {
    for (const auto& [id, booking] : client->bookings()) {
      ++checked;
      const pqxx::result rows = db.Exec(absl::StrCat(
          "SELECT kind, rack_id::text, coalesce(device_id::text, ''), released_at IS NOT NULL, "
          "coalesce(released_by, ''), coalesce(released_at >= expires_at, false) FROM bookings "
          "WHERE id = '",
          id, "'"));
      if (rows.size() != 1) {
        report.Fail(absl::StrCat("2. acknowledged booking ", id, " is missing"));
        continue;
      }
      std::set<std::pair<int, int>> slots;
      for (const auto& slot : db.Exec(absl::StrCat(
               "SELECT side, unit FROM booking_slots WHERE booking_id = '", id, "'"))) {
        slots.insert({std::string(slot[0].c_str()) == "front" ? v1::SIDE_FRONT : v1::SIDE_REAR,
                      slot[1].as<int>()});
      }
      const bool released = rows[0][3].as<bool>();
      // A rack reservation that lapsed is released by a sweeper, or by the booking write path
      // of whoever claims its units next.
      const bool lapsed = booking.kind == v1::BOOKING_RESERVATION && rows[0][5].as<bool>();
      std::string wrong;
      if (kKinds.at(rows[0][0].c_str()) != booking.kind || booking.rack != rows[0][1].c_str() ||
          booking.device != rows[0][2].c_str() || slots != booking.slots) {
        wrong = "kind, rack, device or slots differ";
      } else if (booking.released && !released) {
        wrong = "release acknowledged, still active";
      } else if (!booking.released && !booking.release_unknown && released && !lapsed) {
        wrong = absl::StrCat("released by ", rows[0][4].c_str(), " though nobody was told so");
      }
      if (!wrong.empty()) report.Fail(absl::StrCat("2. booking ", id, ": ", wrong));
    }
    for (const UnknownCreate& create : client->unknown_creates()) {
      const int64_t found = db.Count(absl::StrCat("SELECT count(*) FROM bookings WHERE org_id = '",
                                                  org, "' AND reason = '", create.reason, "'"));
      report.Note(absl::StrCat(create.rpc, " after an unknown outcome, bookings found: ", found));
      if (found > 1) {
        report.Fail(absl::StrCat("2. ", create.rpc, " retried after an unknown outcome wrote ",
                                 found, " bookings (reason ", create.reason, ")"));
      }
    }
  }
  std::printf("  %-64s %lld\n", "acknowledged bookings compared", static_cast<long long>(checked));
}

void AuditMoves(Reader& db, const std::vector<const MoveRecord*>& moves, Report& report) {
  int64_t checked = 0, transitions = 0;
  for (const MoveRecord* move : moves) {
    if (move->unknown) continue;
    ++checked;
    transitions += static_cast<int64_t>(move->path.size());
    std::vector<v1::MoveState> recorded;
    for (const std::string& state :
         Column(db, absl::StrCat("SELECT to_state FROM move_events WHERE move_id = '", move->id,
                                 "' ORDER BY sequence"))) {
      recorded.push_back(StateFromName(state));
    }
    const std::string state =
        db.Scalar(absl::StrCat("SELECT state FROM moves WHERE id = '", move->id, "'"));
    if (recorded != move->path || StateFromName(state) != move->path.back()) {
      std::vector<std::string> made, found;
      for (v1::MoveState s : move->path) made.push_back(v1::MoveState_Name(s));
      for (v1::MoveState s : recorded) found.push_back(v1::MoveState_Name(s));
      report.Fail(absl::StrCat("2. move ", move->id, ": acknowledged [", absl::StrJoin(made, " "),
                               "], recorded [", absl::StrJoin(found, " "), "] now ", state));
    }
  }
  std::printf("  %-64s %lld (%lld transitions)\n", "acknowledged moves compared",
              static_cast<long long>(checked), static_cast<long long>(transitions));
}

double Since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

int Main() {
  const bool through_pgbouncer = absl::GetFlag(FLAGS_through_pgbouncer);
  const double seconds = absl::GetFlag(FLAGS_seconds);
  const double kill_at = absl::GetFlag(FLAGS_kill_at);
  const double restart_after = absl::GetFlag(FLAGS_restart_after);
  const int clients = absl::GetFlag(FLAGS_clients);
  const uint64_t seed = absl::GetFlag(FLAGS_seed);
  if (clients < 1 || seconds <= 0 || kill_at + restart_after >= seconds) {
    std::cerr << "need --clients >= 1 and --kill_at + --restart_after < --seconds\n";
    return 2;
  }
  const auto begin = Clock::now();
  testing::TestDatabase db;
  const Seeded seeded = Seed(db, clients);
  const World& world = seeded.world;

  testing::SuiteOptions options;
  if (through_pgbouncer) {
    options.database_url = db.PgBouncerUrl();
    // LISTEN must not go through the pooler (except to show what breaks when it does).
    options.watch_database_url =
        absl::GetFlag(FLAGS_watch_through_pgbouncer) ? db.PgBouncerUrl() : db.service_url();
    options.transaction_pooler = true;
  } else {
    options.database_url = db.service_url();
  }
  options.sweeper_flags = {"--interval_seconds=1"};
  std::printf(
      "replica_test: %s, 2 replicas of each server, 2 sweepers, %d clients per service, "
      "%.0f s of load, SIGKILL at %.0f s, restart %.0f s later, seed %llu\n",
      through_pgbouncer ? "through PgBouncer (transaction mode)" : "direct to PostgreSQL", clients,
      seconds, kill_at, restart_after, static_cast<unsigned long long>(seed));
  std::fflush(stdout);
  auto suite = std::make_unique<SuiteProcesses>(options);
  std::printf("  started %s in %.1f s\n", absl::StrJoin(suite->Names(), ", ").c_str(),
              Since(begin));
  PlaceMoveDevices(*suite, seeded);

  Report report;
  std::vector<std::unique_ptr<ReservationClient>> reservation_clients;
  std::vector<std::unique_ptr<OccupancyClient>> occupancy_clients;
  std::vector<std::unique_ptr<MoveClient>> move_clients;
  for (int c = 0; c < clients; ++c) {
    reservation_clients.push_back(
        std::make_unique<ReservationClient>(*suite, world, c, seeded.services[c], seed, report));
    occupancy_clients.push_back(std::make_unique<OccupancyClient>(
        *suite, world, c, seeded.occupancy_devices[c], seed, report));
    move_clients.push_back(
        std::make_unique<MoveClient>(*suite, world, c, seeded.move_devices[c], seed, report));
  }
  WatchProbe probe(*suite, world, seeded.probe_device, report);

  std::atomic<bool> stop{false}, killed{false};
  const auto start = Clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] { reservation_clients[c]->Run(stop); });
    threads.emplace_back([&, c] { occupancy_clients[c]->Run(stop); });
    threads.emplace_back([&, c] { move_clients[c]->Run(stop); });
  }
  threads.emplace_back([&] { probe.Run(stop, killed); });

  auto sleep_until = [&](double at) {
    std::this_thread::sleep_until(
        start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(at)));
  };
  sleep_until(kill_at);
  Reader reader(db.url());
  const std::map<std::string, std::string> history_at_kill = HistoryDigests(reader);
  const std::vector<std::string> victims = {suite->ReplicasOf(SuiteService::kReservation)[1],
                                            suite->ReplicasOf(SuiteService::kOccupancy)[1],
                                            suite->ReplicasOf(SuiteService::kMoves)[0],
                                            "sweeper-1"};
  for (const std::string& victim : victims) suite->Kill(victim, SIGKILL);
  killed.store(true);
  report.Note("processes SIGKILLed", static_cast<int64_t>(victims.size()));
  std::printf("  %5.1f s: SIGKILL %s\n", Since(start), absl::StrJoin(victims, ", ").c_str());
  std::fflush(stdout);
  sleep_until(kill_at + restart_after);
  for (const std::string& victim : victims) {
    const auto restart_begin = Clock::now();
    suite->Restart(victim);
    std::printf("  %5.1f s: %s serving again after %.2f s\n", Since(start), victim.c_str(),
                Since(restart_begin));
  }
  std::fflush(stdout);
  sleep_until(seconds);
  // Server connections the pools hold right now (the watch hubs' LISTEN connections apart).
  const int64_t backends = reader.Count(
      "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> "
      "pg_backend_pid() AND application_name <> 'dcl-move-watch'");
  stop.store(true);
  for (std::thread& thread : threads) thread.join();
  std::printf(
      "  %5.1f s: load stopped; %lld PostgreSQL backends served the pools of %zu "
      "processes\n",
      Since(start), static_cast<long long>(backends), suite->Names().size());
  if (through_pgbouncer && backends > 5) {
    report.Fail(absl::StrCat("PgBouncer's pool is 5 server connections, yet ", backends,
                             " backends served the servers"));
  }

  // 4. Every process runs unless killed on purpose, every server serves.
  for (const std::string& exit : suite->UnexpectedExits()) report.Fail("4. " + exit);
  for (const std::string& name : suite->Names()) {
    if (suite->Port(name) != 0 && !testing::IsServing(suite->Port(name), 10s)) {
      report.Fail("4. not SERVING at the end: " + name);
    }
  }
  suite.reset();

  std::printf("\naudit:\n");
  AuditInvariants(reader, report);
  {
    const std::map<std::string, std::string> history_now = HistoryDigests(reader);
    int64_t changed = 0;
    for (const auto& [id, digest] : history_at_kill) {
      auto it = history_now.find(id);
      if (it == history_now.end() || it->second != digest) ++changed;
    }
    std::printf("  %-64s %s (%zu rows then, %zu now)\n",
                "location history rows of the kill's moment unchanged",
                changed == 0 ? "holds" : "BROKEN", history_at_kill.size(), history_now.size());
    if (changed > 0) {
      report.Fail(absl::StrCat("1. ", changed, " location history rows changed or vanished"));
    }
  }
  AuditHolds(reader, world.org, reservation_clients, report);
  AuditBookings(reader, world.org, occupancy_clients, report);
  std::vector<const MoveRecord*> moves;
  for (const auto& client : move_clients) {
    for (const MoveRecord& move : client->moves()) moves.push_back(&move);
  }
  for (const MoveRecord& move : probe.moves()) moves.push_back(&move);
  AuditMoves(reader, moves, report);
  if (report.Counter("watch probe: cycles complete before the kill") == 0 ||
      report.Counter("watch probe: cycles complete after the kill") == 0) {
    report.Fail("3. the watch probe completed no cycle before or none after the kill");
  }
  report.Print();
  std::printf("replica_test: %.1f s in all\n", Since(begin));
  return report.failed() ? 1 : 0;
}

}  // namespace
}  // namespace dcl::replicas

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  // A write to a server that was just killed must not kill the test that reports it.
  signal(SIGPIPE, SIG_IGN);
  try {
    return dcl::replicas::Main();
  } catch (const std::exception& e) {
    std::cerr << "replica_test: " << e.what() << std::endl;
    return 1;
  }
}
