// The world the mixed workload works on, seeded through SQL fixtures before the load: an
// organization, a sale site with its machines, racks for occupancy and moves, tokens, and per
// client its services and devices; and the devices moves start from, placed through the servers.
#ifndef DCL_TESTS_SUPPORT_WORKLOAD_WORLD_H_
#define DCL_TESTS_SUPPORT_WORKLOAD_WORLD_H_

#include <string>
#include <vector>

#include "tests/support/suite_processes.h"
#include "tests/support/test_db.h"

namespace dcl::workload {

using testing::SuiteProcesses;
using testing::SuiteService;

constexpr int kRackUnits = 42;

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

struct Seeded {
  World world;
  std::vector<std::vector<std::string>> services;           // per reservation client
  std::vector<std::vector<std::string>> occupancy_devices;  // per occupancy client
  std::vector<std::vector<std::string>> move_devices;       // per move client
  std::string probe_device;
};

// The seeded world: an organization, a sale site with `sale_machines` machines, racks, and per
// client its services and devices.
Seeded Seed(const testing::TestDatabase& db, int clients, int sale_machines);
// The devices that moves start from, placed before the load (through the servers).
void PlaceMoveDevices(SuiteProcesses& suite, const Seeded& seeded);

}  // namespace dcl::workload

#endif  // DCL_TESTS_SUPPORT_WORKLOAD_WORLD_H_
