#include "tests/support/workload_world.h"

#include <chrono>

#include "dcl/v1/occupancy.grpc.pb.h"
#include "services/common/auth.h"
#include "tests/support/fixtures.h"

namespace dcl::workload {

using namespace std::chrono_literals;

Seeded Seed(const testing::TestDatabase& db, int clients, int sale_machines) {
  Seeded seeded;
  World& world = seeded.world;
  world.org = testing::CreateOrg(db, "replicas");
  world.sale_site = testing::CreateSite(db, world.org, "SALE1");
  world.dc_site = testing::CreateSite(db, world.org, "DC1");
  auto rack = [&](const std::string& name) {
    testing::RackSpec spec;
    spec.name = name;
    spec.unit_count = kRackUnits;
    // Budgets the rack's units can never exceed (every unit a 450 W, 20 kg server): every
    // booking changes the budget rows, which the audit recomputes, without a refusal the
    // clients would have to tell apart.
    spec.power_budget_watts = kRackUnits * 450;
    spec.weight_budget_kg = kRackUnits * 20;
    return testing::CreateRack(db, world.org, world.dc_site, spec);
  };
  world.occupancy_racks = {rack("O1"), rack("O2")};
  // Ten starting positions per move rack (units 1, 3, ... 19), the rest of it free to move to.
  const int move_racks = std::max(2, (2 * clients + 9) / 10);
  for (int i = 1; i <= move_racks; ++i) world.move_racks.push_back(rack(absl::StrCat("M", i)));
  world.probe_rack = rack("P1");
  testing::DeviceSpec dell;
  dell.power_draw_watts = 450;
  dell.weight_kg = 20;
  // A small stock, so that holds meet NO_CAPACITY and the sweepers return lapsed ones.
  for (int i = 0; i < sale_machines; ++i)
    testing::CreateDevice(db, world.org, world.sale_site, dell);
  seeded.services.resize(clients);
  seeded.occupancy_devices.resize(clients);
  seeded.move_devices.resize(clients);
  for (int c = 0; c < clients; ++c) {
    for (int i = 0; i < 3; ++i) {
      seeded.services[c].push_back(db.Scalar(absl::StrCat(
          "INSERT INTO services (org_id, kind, customer, created_by) VALUES ('", world.org,
          "', 'dedicated', 'customer-", c, "-", i, "', 'seed') RETURNING id")));
    }
    for (int i = 0; i < 2; ++i) {
      seeded.occupancy_devices[c].push_back(
          testing::CreateDevice(db, world.org, world.dc_site, dell));
      seeded.move_devices[c].push_back(testing::CreateDevice(db, world.org, world.dc_site, dell));
    }
  }
  seeded.probe_device = testing::CreateDevice(db, world.org, world.dc_site, dell);
  world.commerce_token = testing::CreateTokenFor(db, world.org, Role::kCommerce);
  world.operator_token = testing::CreateTokenFor(db, world.org, Role::kDcOperator);
  return seeded;
}

void PlaceMoveDevices(SuiteProcesses& suite, const Seeded& seeded) {
  auto stub = v1::OccupancyService::NewStub(
      testing::LocalChannel(suite.Port(suite.ReplicasOf(SuiteService::kOccupancy)[0])));
  auto place = [&](const std::string& device, const std::string& rack, int unit) {
    grpc::ClientContext context;
    context.AddMetadata("authorization", "Bearer " + seeded.world.operator_token);
    context.set_deadline(std::chrono::system_clock::now() + 10s);
    v1::PlaceDeviceRequest request;
    request.set_rack_id(rack);
    request.set_device_id(device);
    request.set_side(v1::SIDE_FRONT);
    request.set_unit(unit);
    request.set_reason("starting position");
    v1::Booking booking;
    const grpc::Status status = stub->PlaceDevice(&context, request, &booking);
    if (!status.ok())
      throw std::runtime_error("placing a device failed: " + status.error_message());
  };
  int placed = 0;
  for (const auto& devices : seeded.move_devices) {
    for (const std::string& device : devices) {
      place(device, seeded.world.move_racks[placed / 10], 1 + 2 * (placed % 10));
      ++placed;
    }
  }
  place(seeded.probe_device, seeded.world.probe_rack, 10);
}

}  // namespace dcl::workload
