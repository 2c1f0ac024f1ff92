// occupancy_server: the OccupancyService and the InventoryService on 127.0.0.1:50052 (--listen or
// DCL_OCCUPANCY_LISTEN). Inventory lives here because racks and devices are what occupancy books
// against: a rack's geometry change is checked against its active bookings, a device's height
// change against its placement, in the same database with the same pool.
// Rack reservations without a TTL last --occupancy_reservation_ttl_seconds (4 h).
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "absl/flags/flag.h"
#include "services/common/command_line.h"
#include "services/common/rpc_gate.h"
#include "services/common/server.h"
#include "services/common/service_main.h"
#include "services/inventory/inventory_logic.h"
#include "services/inventory/inventory_service.h"
#include "services/occupancy/occupancy_logic.h"
#include "services/occupancy/occupancy_service.h"

ABSL_FLAG(int, occupancy_reservation_ttl_seconds, 4 * 60 * 60,
          "how long a rack reservation lasts when the request names no TTL");

int main(int argc, char** argv) {
  dcl::BlockTerminationSignals();
  dcl::ParseCommandLineOrExit(
      argc, argv,
      {"occupancy_server",
       "occupancy_server: the OccupancyService (racks, placements, blockings, rack "
       "reservations) on 127.0.0.1:50052.\n  occupancy_server --database_url=CONNINFO "
       "[--listen=HOST:PORT] ...",
       __FILE__, dcl::ServerSharedFlags()});
  dcl::occupancy::OccupancyOptions options;
  options.default_reservation_ttl_seconds = absl::GetFlag(FLAGS_occupancy_reservation_ttl_seconds);
  if (options.default_reservation_ttl_seconds <= 0) {
    std::fprintf(stderr, "occupancy_server: --occupancy_reservation_ttl_seconds must be > 0\n");
    return dcl::kExitConfigurationError;  // refuse to start
  }
  return dcl::RunServiceMain(
      "occupancy", "DCL_OCCUPANCY_LISTEN", "127.0.0.1:50052", [&](dcl::DbPool& pool, dcl::TokenCache* tokens) {
        dcl::ServiceSet set;
        auto gate = std::make_shared<dcl::RpcGate>(pool, tokens);
        auto logic = std::make_shared<dcl::occupancy::OccupancyLogic>(pool, options);
        auto svc = std::make_shared<dcl::occupancy::OccupancyServiceImpl>(*gate, *logic);
        auto inventory_logic = std::make_shared<dcl::inventory::InventoryLogic>(pool);
        auto inventory =
            std::make_shared<dcl::inventory::InventoryServiceImpl>(*gate, *inventory_logic);
        set.services.push_back({"dcl.v1.OccupancyService", svc.get()});
        set.services.push_back({"dcl.v1.InventoryService", inventory.get()});
        set.keep_alive = {gate, logic, svc, inventory_logic, inventory};
        return set;
      });
}
