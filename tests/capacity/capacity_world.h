// The world of the capacity tests: one organization and site in a fresh database, racks with
// power feeds, a cooling budget, an airflow, power and weight budgets, devices with their power
// figure, power port count, weight and airflow, placements through the booking write path (CreateBooking), and the budget
// rows read by feed names. Configuration is written as the owner (the inventory's RPCs do not
// carry feeds yet); bookings go through the services' role.
#ifndef DCL_TESTS_CAPACITY_CAPACITY_WORLD_H_
#define DCL_TESTS_CAPACITY_CAPACITY_WORLD_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dcl/v1/common.pb.h"
#include "dcl/v1/occupancy.pb.h"
#include "services/common/db.h"
#include "tests/support/site.h"
#include "tests/support/test_db.h"

namespace dcl::testing {

// The shared seeded site (tests/support/site.h) without racks: each test adds the racks it needs.
class CapacityWorld : public Site {
 public:
  CapacityWorld();

  // A rack of 42 units; cooling_budget_watts 0 = none, airflow "" = none.
  std::string Rack(int cooling_budget_watts = 0, const std::string& airflow = "");
  // A rack of 42 units with the rack's own power and weight budgets (0 = none).
  std::string BudgetedRack(int power_budget_watts, int weight_budget_kg);
  // A power feed of the rack (NetBox's fields); returns its id.
  std::string Feed(const std::string& rack, const std::string& name, int voltage, int amperage,
                   const std::string& phase = "single-phase", int max_utilization = 80);
  // A 1U half-depth device; power_watts / ports / weight_kg -1 = unknown, airflow "" = unknown.
  std::string Device(int power_watts, int ports, const std::string& airflow = "front-to-rear",
                     int weight_kg = -1);
  // `count` such devices in one statement (front-to-rear), for the races.
  std::vector<std::string> Devices(int count, int power_watts, int ports);

  // A placement of `device` at front U`unit`, through CreateBooking in its own transaction.
  absl::StatusOr<v1::Booking> Place(const std::string& rack, const std::string& device, int unit);
  absl::StatusOr<v1::Booking> Place(DbPool& pool, const std::string& rack,
                                    const std::string& device, int unit);

  // `used` of a budget row: Feed("A") / Lost("A", "B") / Cooling(); -1 when the row is missing.
  int64_t FeedUsed(const std::string& rack, const std::string& feed);
  int64_t LostUsed(const std::string& rack, const std::string& lost, const std::string& carrying);
  int64_t CoolingUsed(const std::string& rack);
  // `used` / `allowance` / `unknown` of the rack's 'power' or 'weight' row; -1 when missing.
  int64_t BudgetColumn(const std::string& rack, const std::string& dimension,
                       const std::string& column = "used");
  // Switch ports (schema 0040): the rack's offer / a device's needs by speed, as a JSON object
  // ('{"10g": 48}'; "" = NULL: none recorded / unknown), written as the owner.
  void SetSwitchPorts(const std::string& rack, const std::string& ports_json);
  void SetNetworkPorts(const std::string& device, const std::string& ports_json);
  // `used` of the rack's 'ports' row of `speed`; -1 when missing.
  int64_t PortsUsed(const std::string& rack, const std::string& speed);
  // Rows of dcl_rack_budget_drift(): 0 when every row equals a recomputation.
  int64_t Drift();

 private:
  std::unique_ptr<DbPool> pool_;
  int racks_ = 0;
};

// The reason of a refusal (REASON_UNSPECIFIED when there is no detail).
v1::Reason ReasonOf(const absl::Status& status);
// A metadata value of a refusal ("" when absent).
std::string MetaOf(const absl::Status& status, const std::string& key);

}  // namespace dcl::testing

#endif  // DCL_TESTS_CAPACITY_CAPACITY_WORLD_H_
