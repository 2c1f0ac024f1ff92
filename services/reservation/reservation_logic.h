// The reservation service's domain logic, without gRPC: Reserve holds a dedicated machine for an
// order, Convert turns the hold into a service binding, Cancel abandons it; plus services,
// bindings and reads. Each call is one database transaction; every query is scoped by the
// caller's organization.
//
// Who decides what:
//   * the schema decides the winner of a race (reservations_device_held_uq, the binding
//     indexes, reservations_org_key_uq); this code produces the readable answer first and maps
//     the violated constraint's name when it loses anyway;
//   * eligibility of a candidate is Classify() (eligibility.h);
//   * the hold's deadline is enforced by Convert against the database clock, not by the sweeper.
//   * the caller's deadline is enforced by the database: a Reserve that arrives after it does no
//     work, and a hold that would commit after it is refused at COMMIT (call_deadline.h,
//     schema/migrations/0030_call_deadline.sql), so a paused server cannot hold a machine for a
//     caller that has given up and retried.
#ifndef DCL_SERVICES_RESERVATION_RESERVATION_LOGIC_H_
#define DCL_SERVICES_RESERVATION_RESERVATION_LOGIC_H_

#include <string>

#include "absl/status/status.h"
#include "dcl/v1/reservation.pb.h"
#include "services/common/db.h"
#include "services/common/principal.h"

namespace dcl::reservation {

struct ReservationOptions {
  int default_ttl_seconds = 15 * 60;  // a hold waits for checkout, payment, fraud check
  int max_ttl_seconds = 24 * 60 * 60;
  int max_attempts = 5;         // lost insert races before "try again in a moment"
  int max_candidates = 25;      // devices examined (locked and found sellable) per call
  // Devices walked past per call, sellable or not: bounds the walk on a nearly sold-out site,
  // whatever its size (about 10 us per device). Reached, the call is explained by the
  // exclusion summary: CONTENDED while eligible machines exist, NO_CAPACITY otherwise.
  int max_rows_walked = 1024;
  int max_listed_devices = 20;  // excluded devices listed in a NO_CAPACITY answer
};

// Startup check of the options: crash-worthy misconfiguration is reported, not corrected.
absl::Status ValidateOptions(const ReservationOptions& options);

class ReservationLogic {
 public:
  ReservationLogic(DbPool& pool, ReservationOptions options);
  ReservationLogic(const ReservationLogic&) = delete;
  ReservationLogic& operator=(const ReservationLogic&) = delete;

  absl::Status Reserve(const Principal& principal, const v1::ReserveRequest& request,
                       v1::ReserveResponse* response);
  // Convert, Cancel, CreateService and EndBinding take the request's client request id
  // (request_ledger.h): a call with an id already answered sets *replayed (may be null) and
  // returns the first answer. Reserve keeps its idempotency key instead.
  absl::Status Convert(const Principal& principal, const v1::ConvertRequest& request,
                       v1::ConvertResponse* response, bool* replayed = nullptr);
  absl::Status Cancel(const Principal& principal, const v1::CancelRequest& request,
                      v1::CancelResponse* response, bool* replayed = nullptr);
  absl::Status GetReservation(const Principal& principal, const v1::GetReservationRequest& request,
                              v1::Reservation* response);
  absl::Status ListReservations(const Principal& principal,
                                const v1::ListReservationsRequest& request,
                                v1::ListReservationsResponse* response);
  absl::Status CreateService(const Principal& principal, const v1::CreateServiceRequest& request,
                             v1::Service* response, bool* replayed = nullptr);
  absl::Status EndBinding(const Principal& principal, const v1::EndBindingRequest& request,
                          v1::ServiceBinding* response, bool* replayed = nullptr);
  // Where is my server? See service_location.h.
  absl::Status GetServiceLocation(const Principal& principal,
                                  const v1::GetServiceLocationRequest& request,
                                  v1::ServiceLocation* response);

  // Not thread-safe with concurrent calls: set before use (tests only). Reserve's walk starts
  // just after this id instead of at a random one, so a test knows which device comes first.
  void SetWalkStartForTest(std::string walk_start) { walk_start_for_test_ = std::move(walk_start); }

  const ReservationOptions& options() const { return options_; }

 private:
  DbPool& pool_;
  const ReservationOptions options_;
  std::string walk_start_for_test_;
};

}  // namespace dcl::reservation

#endif  // DCL_SERVICES_RESERVATION_RESERVATION_LOGIC_H_
