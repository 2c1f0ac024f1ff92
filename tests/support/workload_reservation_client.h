// The mixed workload's reservation clients: Reserve (short holds, so the sweepers meet them),
// Convert, Cancel, EndBinding, on a small stock shared by every client; what each acknowledged,
// what was refused, and the Reserve calls never answered (resolved by a retry with their key).
#ifndef DCL_TESTS_SUPPORT_WORKLOAD_RESERVATION_CLIENT_H_
#define DCL_TESTS_SUPPORT_WORKLOAD_RESERVATION_CLIENT_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "dcl/v1/reservation.grpc.pb.h"
#include "tests/support/workload_failover_client.h"
#include "tests/support/workload_report.h"
#include "tests/support/workload_world.h"

namespace dcl::workload {

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
                    std::vector<std::string> services, uint64_t seed, Report& report);

  void Run(const std::atomic<bool>& stop);
  const std::map<std::string, HoldRecord>& holds() const { return holds_; }
  // Keys of Reserve calls answered with a refusal: none may have a reservation.
  const std::vector<std::string>& refused_keys() const { return refused_keys_; }
  // Reserve calls never answered; after ResolveUnanswered(), how many reservations must carry
  // each one's key as a retry with that key answered (1 after OK, 0 after a refusal).
  const std::vector<v1::ReserveRequest>& unanswered() const { return unanswered_; }
  const std::map<std::string, int>& rows_after_retry() const { return rows_after_retry_; }

  // After the load, with everything up again: each unanswered Reserve sent once more with the
  // same key. A replay says the lost call wrote; a fresh hold says it did not.
  void ResolveUnanswered();

 private:
  void Step();

  // The reservation as the database has it now, read through any replica.
  std::optional<v1::Reservation> Read(const std::string& id);

  // After a write whose first outcome is unknown and whose retry was refused: what happened.
  void Resolve(HoldRecord& hold, const std::string& rpc);

  void Convert(HoldRecord& hold);

  void Cancel(HoldRecord& hold);

  void EndBinding(HoldRecord& hold);

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

}  // namespace dcl::workload

#endif  // DCL_TESTS_SUPPORT_WORKLOAD_RESERVATION_CLIENT_H_
