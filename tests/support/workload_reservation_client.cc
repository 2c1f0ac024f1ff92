#include "tests/support/workload_reservation_client.h"

#include <thread>

#include "absl/strings/str_cat.h"

namespace dcl::workload {

ReservationClient::ReservationClient(SuiteProcesses& suite, const World& world, int index,
                                     std::vector<std::string> services, uint64_t seed,
                                     Report& report)
    : rpc_(suite, SuiteService::kReservation, index, world.commerce_token, report),
      world_(world),
      index_(index),
      free_services_(std::move(services)),
      rng_(seed * 1000 + index),
      report_(report) {}

void ReservationClient::Run(const std::atomic<bool>& stop) {
  while (!stop.load()) Step();
}

void ReservationClient::ResolveUnanswered() {
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

void ReservationClient::Step() {
  std::vector<std::string> bound;
  for (const auto& [key, hold] : holds_) {
    if (hold.state == "converted" && !hold.binding.empty() && !hold.binding_ended &&
        !hold.unknown) {
      bound.push_back(key);
    }
  }
  if (!bound.empty() && rng_() % 100 < 20) return EndBinding(holds_[bound[rng_() % bound.size()]]);
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
    std::this_thread::sleep_for(
        std::chrono::milliseconds(request.ttl_seconds() * 1000 + offset_ms));
    Convert(hold);
  } else if (next < 7) {
    Cancel(hold);
  }  // else: left to lapse, for the sweepers
}

std::optional<v1::Reservation> ReservationClient::Read(const std::string& id) {
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

void ReservationClient::Resolve(HoldRecord& hold, const std::string& rpc) {
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

void ReservationClient::Convert(HoldRecord& hold) {
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

void ReservationClient::Cancel(HoldRecord& hold) {
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

void ReservationClient::EndBinding(HoldRecord& hold) {
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

}  // namespace dcl::workload
