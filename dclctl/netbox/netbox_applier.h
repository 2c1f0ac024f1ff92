// `dclctl import netbox`, the applier: runs a netbox_mapping.h Plan against the inventory and
// occupancy services. What exists is matched by natural keys first (site name, rack name in its
// site, device serial, a placement's exact slots, units already blocked), which outlives the
// servers' 7-day request ledger; every write carries a request id derived from NetBox ids, so a
// re-run (or a retry after a timeout) replays instead of writing twice. Registrations and
// placements travel in batches (RegisterDevices, PlaceDevices) whose items carry the same
// request ids as the single calls, so a batch, a re-composed batch and a single call replay
// each other. Placements go through PlaceDevice's write path, the one booking write path; the
// slot index decides who wins, and a refusal is reported with the units it names. Nothing is moved or released.
//
// Re-sync is reconciliation: a device dcl already has (found by serial, or registered by an
// earlier run) is never placed by the import. Where NetBox puts it elsewhere than dcl — other
// units, another rack, nowhere in dcl — the difference is reported as drift, and the units
// NetBox claims for it that dcl holds free are blocked (unknown reads as blocked, never as
// free), the blocking's reason naming the NetBox device and the run.
#ifndef DCL_DCLCTL_NETBOX_NETBOX_APPLIER_H_
#define DCL_DCLCTL_NETBOX_NETBOX_APPLIER_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "dcl/v1/inventory.grpc.pb.h"
#include "dcl/v1/occupancy.grpc.pb.h"
#include "dclctl/netbox/netbox_mapping.h"

namespace dcl::admin::netbox {

struct ApplyOptions {
  bool dry_run = false;   // read and compare, write nothing
  bool progress = false;  // a one-line progress bar on stdout, when stdout is a terminal
  // Names this run in the reasons of the blockings drift makes ("import 2026-12-01T20:31:07Z").
  std::string run = "import";
  // Registrations and placements go in batches (RegisterDevices, PlaceDevices: one call and
  // one transaction per batch, all or none; the slot index still decides every placement) of
  // at most `batch_size` devices, `batches_in_flight` at once. A refused batch is sent again
  // one device per call, `parallel` calls at once, so that the report names each refused
  // device with its own reason. batch_size 1 = single calls only.
  int batch_size = 200;
  int batches_in_flight = 3;
  int parallel = 8;
};

struct Report {
  struct Counts {
    int created = 0, unchanged = 0;
  };
  // "sites", "racks", "rack capacity", "devices", "placements", "blockings", "drift blockings"
  std::map<std::string, Counts> counts;
  std::vector<Skipped> skipped;  // takes no rack unit
  // Should take units and cannot (mapping or a server's refusal); a placement a capacity rule
  // refuses is here too, "left for a person", in this run and every re-run until one decides.
  std::vector<Skipped> refused;
  std::vector<Skipped> unknown;  // figures NetBox does not record (power, weight, airflow)
  std::vector<Skipped> held;     // reserved units something else already holds, and what
  // Where NetBox and dcl disagree: a device dcl has at other units, in another rack or
  // nowhere; units dcl places a device in where NetBox records none.
  std::vector<Skipped> drift;
};

class Applier {
 public:
  using ContextFactory = std::function<std::unique_ptr<grpc::ClientContext>()>;

  Applier(v1::InventoryService::StubInterface& inventory,
          v1::OccupancyService::StubInterface& occupancy, ContextFactory make_context)
      : inventory_(inventory), occupancy_(occupancy), make_context_(std::move(make_context)) {}
  Applier(const Applier&) = delete;
  Applier& operator=(const Applier&) = delete;

  // Runs `plan`, filling `report`. A failure that is not a business refusal (unavailable,
  // not allowed …) ends the run and is returned: what was written stays, and a re-run
  // continues where it stopped.
  grpc::Status Apply(const Plan& plan, const ApplyOptions& options, Report* report);

 private:
  v1::InventoryService::StubInterface& inventory_;
  v1::OccupancyService::StubInterface& occupancy_;
  ContextFactory make_context_;
};

}  // namespace dcl::admin::netbox

#endif  // DCL_DCLCTL_NETBOX_NETBOX_APPLIER_H_
