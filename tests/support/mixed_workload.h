// The mixed workload over all three services and its audit, shared by the replica test
// (tests/replicas) and the fault history (tests/faults): clients of each service that fail
// over between replicas and resolve unknown outcomes (by a retry with the same key or by
// reading), a record of every call (outcomes per phase, optionally a history file), the seeded
// world they work on, and the audit of every invariant and every acknowledged write. This header
// runs the clients together; each family has its own file:
//   workload_report.h            what the calls came to
//   workload_world.h             the seeded world
//   workload_failover_client.h   a client of one service with a connection to each replica
//   workload_reservation_client.h, workload_occupancy_client.h, workload_move_driver.h,
//   workload_move_clients.h      the clients of each service and the watch probe
//   workload_audit.h             the audit
#ifndef DCL_TESTS_SUPPORT_MIXED_WORKLOAD_H_
#define DCL_TESTS_SUPPORT_MIXED_WORKLOAD_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/suite_processes.h"
#include "tests/support/workload_audit.h"
#include "tests/support/workload_failover_client.h"
#include "tests/support/workload_move_clients.h"
#include "tests/support/workload_move_driver.h"
#include "tests/support/workload_occupancy_client.h"
#include "tests/support/workload_report.h"
#include "tests/support/workload_reservation_client.h"
#include "tests/support/workload_world.h"

namespace dcl::workload {

// The mixed workload under way, as the replica test and the rolling upgrade run it: `clients`
// reservation, occupancy and move clients and the WatchMove probe, each on a thread of its own
// from construction until Stop(); the destructor stops them too, so that whatever ends a run (an
// exception as well) the clients stop before their state goes away. The probe counts its cycles
// as before or after the disruption by `disrupted`.
class Workload {
 public:
  Workload(SuiteProcesses& suite, const Seeded& seeded, int clients, uint64_t seed, Report& report,
           const std::atomic<bool>& disrupted);
  Workload(const Workload&) = delete;
  Workload& operator=(const Workload&) = delete;
  ~Workload() { Stop(); }

  void Stop();

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

}  // namespace dcl::workload

#endif  // DCL_TESTS_SUPPORT_MIXED_WORKLOAD_H_
