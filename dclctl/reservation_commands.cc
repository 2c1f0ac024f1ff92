// dclctl's reservation commands (ReservationService): list, show.
#include "dclctl/command_groups.h"
#include "dclctl/command_support.h"

namespace dcl::admin {
namespace {

int ReservationList(Invocation& inv) {
  v1::ListReservationsRequest req;
  const std::string state_text = absl::GetFlag(FLAGS_state);
  if (!state_text.empty()) {
    v1::ReservationState state;
    if (!ParseReservationState(state_text, &state)) {
      throw UsageError("--state must be held, converted, expired or cancelled");
    }
    req.set_state(state);
  }
  auto stub = StubFor<v1::ReservationService>(inv, Service::kReservation);
  v1::ListReservationsResponse all;
  const grpc::Status status = CollectPages<v1::ListReservationsResponse>(
      inv, Service::kReservation, &all,
      [](v1::ListReservationsResponse& to, const v1::ListReservationsResponse& from) {
        to.mutable_reservations()->MergeFrom(from.reservations());
      },
      [](const v1::ListReservationsResponse& r) { return r.reservations_size(); },
      [&](grpc::ClientContext* c, const std::string& token, int size,
          v1::ListReservationsResponse* r) {
        req.set_page_token(token);
        req.set_page_size(size);
        return stub->ListReservations(c, req, r);
      });
  return PrintList<v1::ListReservationsResponse>(inv, status, all, ReservationsTable);
}

int ReservationShow(Invocation& inv) {
  v1::GetReservationRequest req;
  const std::string key = absl::GetFlag(FLAGS_key);
  if (inv.args.empty() == key.empty()) {
    throw UsageError("name the reservation by its id or by --key, one of the two");
  }
  if (key.empty()) {
    req.mutable_reservation()->set_reservation_id(inv.args[0]);
  } else {
    req.mutable_reservation()->set_idempotency_key(key);
  }
  auto stub = StubFor<v1::ReservationService>(inv, Service::kReservation);
  return Unary<v1::Reservation>(
      inv, Service::kReservation,
      [&](grpc::ClientContext* c, v1::Reservation* r) { return stub->GetReservation(c, req, r); },
      ReservationText);
}

}  // namespace

std::vector<Command> ReservationCommands() {
  return {
      {{"reservation", "list"},
       "[--state held|converted|expired|cancelled] [--limit N]",
       "machine reservations, newest first",
       0,
       0,
       Section::kReservations,
       ReservationList},
      {{"reservation", "show"},
       "RESERVATION_ID | --key KEY",
       "one reservation",
       0,
       1,
       Section::kReservations,
       ReservationShow},
  };
}

}  // namespace dcl::admin
