// What dclctl's process tests share: an organization with nothing in it yet, served as the
// occupancy server serves it (OccupancyService and InventoryService in process), and the real
// dclctl binary run against it with a dc-operator's token.
#ifndef DCL_TESTS_ADMIN_DCLCTL_WORLD_H_
#define DCL_TESTS_ADMIN_DCLCTL_WORLD_H_

#include <catch2/catch.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "services/common/rpc_gate.h"
#include "services/inventory/inventory_logic.h"
#include "services/inventory/inventory_service.h"
#include "services/occupancy/occupancy_logic.h"
#include "services/occupancy/occupancy_service.h"
#include "tests/support/child_process.h"
#include "tests/support/fixtures.h"
#include "tests/support/grpc_harness.h"
#include "tests/support/test_db.h"

namespace dcl::testing {

struct DclctlWorld {
  DclctlWorld()
      : org(CreateOrg(db, "acme")),
        pool(db.MakePool(8)),
        gate(*pool),
        occupancy_logic(*pool),
        occupancy(gate, occupancy_logic),
        inventory_logic(*pool),
        inventory(gate, inventory_logic),
        server(pool.get(), {{"dcl.v1.OccupancyService", &occupancy},
                            {"dcl.v1.InventoryService", &inventory}}),
        operator_token(CreateTokenFor(db, org, Role::kDcOperator)) {}

  TestDatabase db;
  std::string org;
  std::unique_ptr<DbPool> pool;
  RpcGate gate;
  occupancy::OccupancyLogic occupancy_logic;
  occupancy::OccupancyServiceImpl occupancy;
  inventory::InventoryLogic inventory_logic;
  inventory::InventoryServiceImpl inventory;
  InProcessServer server;
  std::string operator_token;
};

struct DclctlResult {
  int exit = -1;
  std::string out;
  std::string err;
};

// dclctl `args` against the world's server, waiting at most `limit` for it to exit.
inline DclctlResult RunDclctl(const DclctlWorld& w, std::vector<std::string> args,
                              std::chrono::seconds limit) {
  args.push_back("--target=" + w.server.address());
  args.push_back("--token=" + w.operator_token);
  ChildProcess dclctl(RunfilesBinary("dclctl/dclctl"), args, /*separate_stderr=*/true);
  const std::optional<int> exit = dclctl.WaitForExit(limit);
  REQUIRE(exit.has_value());
  return DclctlResult{*exit, dclctl.Log(), dclctl.Stderr()};
}

}  // namespace dcl::testing

#endif  // DCL_TESTS_ADMIN_DCLCTL_WORLD_H_
