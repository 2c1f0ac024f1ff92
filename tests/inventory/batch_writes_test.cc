// The batch writes InventoryService.RegisterDevices and OccupancyService.PlaceDevices through a
// real in-process gRPC server on a real PostgreSQL: all or none, a refused item named by its
// index with the single call's reason, per-item request ids that a retried or re-composed batch
// and a single call replay, the size limit, another organization's ids, and a batch racing a
// single PlaceDevice for one slot on real connections.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "dcl/v1/inventory.grpc.pb.h"
#include "dcl/v1/occupancy.grpc.pb.h"
#include "services/common/grpc_status.h"
#include "tests/support/barrier.h"
#include "tests/support/fixtures.h"
#include "tests/support/grpc_harness.h"
#include "tests/support/suite.h"
#include "tests/support/test_db.h"

namespace dcl {
namespace {

using IS = v1::InventoryService::Stub;
using OS = v1::OccupancyService::Stub;

// A request id per test item: a UUID whose last group is `n`.
std::string Id(int n) { return absl::StrCat("5e1f0c2a-7b3d-4e8f-9a10-", 100000000000 + n); }

// The services behind one in-process server (tests/support/suite.h), one organization ("acme")
// with an operator's token and a site with a rack, and a second organization ("globex").
class World : public testing::SuiteWorld {
 public:
  World() {
    other_org = testing::CreateOrg(db, "globex");
    op = Token(Role::kDcOperator);
    other_op = testing::CreateTokenFor(db, other_org, Role::kDcOperator);
    site = Site(op, "FRA1");
    rack = Rack(op, site, "R1");
  }

  using Call = testing::Call;

  template <typename Stub, typename Req, typename Resp>
  Call Invoke(Stub& stub, grpc::Status (Stub::*method)(grpc::ClientContext*, const Req&, Resp*),
              const std::string& token, const Req& req, Resp* resp) {
    return testing::Invoke(stub, method, token, req, resp);
  }

  std::string Site(const std::string& token, const std::string& name) {
    v1::CreateSiteRequest req;
    req.set_name(name);
    v1::Site out;
    REQUIRE(Invoke(*inventory, &IS::CreateSite, token, req, &out).status.ok());
    return out.id();
  }

  std::string Rack(const std::string& token, const std::string& site_id, const std::string& name) {
    v1::CreateRackRequest req;
    req.set_site_id(site_id);
    req.set_name(name);
    req.mutable_geometry()->set_first_unit(1);
    req.mutable_geometry()->set_unit_count(42);
    req.mutable_geometry()->set_numbering(v1::NUMBERING_ASCENDING);
    req.mutable_geometry()->set_has_rear(true);
    v1::RackRecord out;
    REQUIRE(Invoke(*inventory, &IS::CreateRack, token, req, &out).status.ok());
    return out.id();
  }

  static v1::RegisterDeviceRequest Device(const std::string& site_id, const std::string& serial,
                                          const std::string& request_id) {
    v1::RegisterDeviceRequest req;
    req.set_request_id(request_id);
    req.set_site_id(site_id);
    req.set_vendor("Dell");
    req.set_model("R650");
    req.set_serial(serial);
    req.set_height_units(1);
    req.set_depth_class(v1::DEPTH_FULL);
    req.set_initial_state(v1::PROCESS_NORMAL);
    return req;
  }

  // `n` registered devices of the site, serials prefix-0 …, one batch.
  std::vector<std::string> Devices(const std::string& prefix, int n) {
    v1::RegisterDevicesRequest req;
    for (int i = 0; i < n; ++i) *req.add_requests() = Device(site, absl::StrCat(prefix, i), "");
    v1::RegisterDevicesResponse resp;
    Call call = Invoke(*inventory, &IS::RegisterDevices, op, req, &resp);
    INFO(call.status.error_message());
    REQUIRE(call.status.ok());
    std::vector<std::string> ids;
    for (const v1::Device& d : resp.devices()) ids.push_back(d.id());
    return ids;
  }

  static v1::PlaceDeviceRequest Placement(const std::string& rack_id, const std::string& device,
                                          int unit, const std::string& request_id) {
    v1::PlaceDeviceRequest req;
    req.set_request_id(request_id);
    req.set_rack_id(rack_id);
    req.set_device_id(device);
    req.set_side(v1::SIDE_FRONT);
    req.set_unit(unit);
    return req;
  }

  int64_t Count(const std::string& sql) { return db.Count(sql); }
  int64_t ActiveBookings() {
    return db.Count("SELECT count(*) FROM bookings WHERE released_at IS NULL");
  }

  std::string other_org, op, other_op, site, rack;
};

v1::ErrorDetail DetailOf(const grpc::Status& status) {
  auto detail = ErrorDetailFromGrpc(status);
  REQUIRE(detail.has_value());
  return *detail;
}

TEST_CASE("RegisterDevices registers in order; a retried batch, a re-composed one and a single "
          "RegisterDevice with an item's id replay instead of writing twice") {
  World w;
  v1::RegisterDevicesRequest batch;
  for (int i = 0; i < 3; ++i) *batch.add_requests() = w.Device(w.site, absl::StrCat("SN-", i), Id(i));
  v1::RegisterDevicesResponse first;
  World::Call call = w.Invoke(*w.inventory, &IS::RegisterDevices, w.op, batch, &first);
  INFO(call.status.error_message());
  REQUIRE(call.status.ok());
  CHECK_FALSE(call.replay());
  REQUIRE(first.devices_size() == 3);
  CHECK(first.replayed_items_size() == 0);
  for (int i = 0; i < 3; ++i) CHECK(first.devices(i).serial() == absl::StrCat("SN-", i));
  CHECK(w.Count("SELECT count(*) FROM devices") == 3);
  CHECK(w.Count("SELECT count(*) FROM client_requests") == 3);

  // The same batch again (a retry after a lost reply): the first answers, nothing written.
  v1::RegisterDevicesResponse again;
  call = w.Invoke(*w.inventory, &IS::RegisterDevices, w.op, batch, &again);
  REQUIRE(call.status.ok());
  CHECK(call.replay());
  CHECK(again.SerializeAsString().size() > 0);
  CHECK(again.replayed_items_size() == 3);
  for (int i = 0; i < 3; ++i) CHECK(again.devices(i).id() == first.devices(i).id());
  CHECK(w.Count("SELECT count(*) FROM devices") == 3);

  // Re-composed: an old item beside a new one; only the new one is written.
  v1::RegisterDevicesRequest recomposed;
  *recomposed.add_requests() = w.Device(w.site, "SN-9", Id(9));
  *recomposed.add_requests() = batch.requests(1);
  v1::RegisterDevicesResponse mixed;
  call = w.Invoke(*w.inventory, &IS::RegisterDevices, w.op, recomposed, &mixed);
  REQUIRE(call.status.ok());
  CHECK_FALSE(call.replay());  // not every item replayed
  REQUIRE(mixed.replayed_items_size() == 1);
  CHECK(mixed.replayed_items(0) == 1);
  CHECK(mixed.devices(1).id() == first.devices(1).id());
  CHECK(w.Count("SELECT count(*) FROM devices") == 4);

  // A single RegisterDevice with an item's id replays that item.
  v1::Device single;
  call = w.Invoke(*w.inventory, &IS::RegisterDevice, w.op, batch.requests(2), &single);
  REQUIRE(call.status.ok());
  CHECK(call.replay());
  CHECK(single.id() == first.devices(2).id());
  // … and the other way round: a batch item with a single call's id replays it.
  v1::Device alone;
  REQUIRE(w.Invoke(*w.inventory, &IS::RegisterDevice, w.op, w.Device(w.site, "SN-S", Id(20)),
                   &alone).status.ok());
  v1::RegisterDevicesRequest after;
  *after.add_requests() = w.Device(w.site, "SN-S", Id(20));
  v1::RegisterDevicesResponse after_resp;
  call = w.Invoke(*w.inventory, &IS::RegisterDevices, w.op, after, &after_resp);
  REQUIRE(call.status.ok());
  CHECK(call.replay());
  CHECK(after_resp.devices(0).id() == alone.id());
  CHECK(w.Count("SELECT count(*) FROM devices") == 5);

  // An item's id with other parameters is refused as for the single call, naming the item.
  v1::RegisterDevicesRequest reused;
  *reused.add_requests() = w.Device(w.site, "SN-NEW", Id(30));
  *reused.add_requests() = w.Device(w.site, "SN-OTHER", Id(0));
  v1::RegisterDevicesResponse ignored;
  call = w.Invoke(*w.inventory, &IS::RegisterDevices, w.op, reused, &ignored);
  CHECK(call.status.error_code() == grpc::StatusCode::FAILED_PRECONDITION);
  CHECK(DetailOf(call.status).reason() == v1::REQUEST_ID_REUSED);
  CHECK(DetailOf(call.status).metadata().at("item") == "1");
  CHECK(w.Count("SELECT count(*) FROM devices") == 5);
  CHECK(w.Count("SELECT count(*) FROM devices WHERE serial = 'SN-NEW'") == 0);

  // One id twice in one batch names one write twice: refused, naming the later item.
  v1::RegisterDevicesRequest doubled;
  *doubled.add_requests() = w.Device(w.site, "SN-D1", Id(40));
  *doubled.add_requests() = w.Device(w.site, "SN-D1", Id(40));
  call = w.Invoke(*w.inventory, &IS::RegisterDevices, w.op, doubled, &ignored);
  CHECK(call.status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(DetailOf(call.status).metadata().at("field") == "requests[1].request_id");
  v1::PlaceDevicesRequest doubled_places;
  *doubled_places.add_requests() = w.Placement(w.rack, first.devices(0).id(), 1, Id(41));
  *doubled_places.add_requests() = w.Placement(w.rack, first.devices(1).id(), 3, Id(41));
  v1::PlaceDevicesResponse no_bookings;
  call = w.Invoke(*w.occupancy, &OS::PlaceDevices, w.op, doubled_places, &no_bookings);
  CHECK(call.status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(DetailOf(call.status).metadata().at("field") == "requests[1].request_id");
  CHECK(w.Count("SELECT count(*) FROM devices") == 5);
  CHECK(w.ActiveBookings() == 0);
}

TEST_CASE("RegisterDevices: one refused item fails the batch naming its index and the single "
          "call's reason, and nothing of the batch is written") {
  World w;
  v1::Device existing;
  REQUIRE(w.Invoke(*w.inventory, &IS::RegisterDevice, w.op, w.Device(w.site, "SN-TAKEN", ""),
                   &existing).status.ok());
  const int64_t ledger_before = w.Count("SELECT count(*) FROM client_requests");

  v1::RegisterDevicesRequest batch;
  *batch.add_requests() = w.Device(w.site, "SN-A", Id(1));
  *batch.add_requests() = w.Device(w.site, "SN-B", Id(2));
  *batch.add_requests() = w.Device(w.site, "SN-TAKEN", Id(3));
  v1::RegisterDevicesResponse ignored;
  World::Call call = w.Invoke(*w.inventory, &IS::RegisterDevices, w.op, batch, &ignored);
  CHECK(call.status.error_code() == grpc::StatusCode::ALREADY_EXISTS);
  const v1::ErrorDetail detail = DetailOf(call.status);
  CHECK(detail.reason() == v1::ALREADY_EXISTS);
  CHECK(detail.metadata().at("item") == "2");
  CHECK(call.status.error_message().rfind("requests[2]: ", 0) == 0);
  CHECK(w.Count("SELECT count(*) FROM devices") == 1);
  CHECK(w.Count("SELECT count(*) FROM client_requests") == ledger_before);

  // Bad input of one item: the field by its path, before anything is written.
  batch.mutable_requests(2)->set_serial("SN-C");
  batch.mutable_requests(1)->set_height_units(0);
  call = w.Invoke(*w.inventory, &IS::RegisterDevices, w.op, batch, &ignored);
  CHECK(call.status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(DetailOf(call.status).metadata().at("field") == "requests[1].height_units");
  batch.mutable_requests(1)->set_height_units(1);
  batch.mutable_requests(1)->set_vendor("");
  call = w.Invoke(*w.inventory, &IS::RegisterDevices, w.op, batch, &ignored);
  CHECK(call.status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(DetailOf(call.status).metadata().at("field") == "requests[1].vendor");
  CHECK(DetailOf(call.status).metadata().at("item") == "1");
  CHECK(w.Count("SELECT count(*) FROM devices") == 1);

  // Fixed, the retry with the same ids runs and writes every item.
  batch.mutable_requests(1)->set_vendor("Dell");
  call = w.Invoke(*w.inventory, &IS::RegisterDevices, w.op, batch, &ignored);
  INFO(call.status.error_message());
  CHECK(call.status.ok());
  CHECK_FALSE(call.replay());
  CHECK(w.Count("SELECT count(*) FROM devices") == 4);
}

TEST_CASE("batches of no item or of more than 500 items are INVALID_ARGUMENT and write nothing") {
  World w;
  v1::RegisterDevicesRequest devices;
  v1::RegisterDevicesResponse ignored;
  World::Call call = w.Invoke(*w.inventory, &IS::RegisterDevices, w.op, devices, &ignored);
  CHECK(call.status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(DetailOf(call.status).metadata().at("field") == "requests");
  for (int i = 0; i < 501; ++i) *devices.add_requests() = w.Device(w.site, absl::StrCat("SN-", i), "");
  call = w.Invoke(*w.inventory, &IS::RegisterDevices, w.op, devices, &ignored);
  CHECK(call.status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(DetailOf(call.status).reason() == v1::INVALID_INPUT);
  CHECK(DetailOf(call.status).metadata().at("limit") == "500");
  CHECK(w.Count("SELECT count(*) FROM devices") == 0);
  devices.mutable_requests()->RemoveLast();  // 500: accepted
  call = w.Invoke(*w.inventory, &IS::RegisterDevices, w.op, devices, &ignored);
  INFO(call.status.error_message());
  CHECK(call.status.ok());
  CHECK(w.Count("SELECT count(*) FROM devices") == 500);

  const std::vector<std::string> ids = w.Devices("P-", 1);
  v1::PlaceDevicesRequest places;
  v1::PlaceDevicesResponse placed;
  call = w.Invoke(*w.occupancy, &OS::PlaceDevices, w.op, places, &placed);
  CHECK(call.status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  for (int i = 0; i < 501; ++i) *places.add_requests() = w.Placement(w.rack, ids[0], 1, "");
  call = w.Invoke(*w.occupancy, &OS::PlaceDevices, w.op, places, &placed);
  CHECK(call.status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(DetailOf(call.status).metadata().at("limit") == "500");
  CHECK(w.ActiveBookings() == 0);
}

TEST_CASE("another organization's site, rack or device in any item reads NOT_FOUND like an "
          "unknown id, and nothing of the batch is written") {
  World w;
  const std::string their_site = w.Site(w.other_op, "THEIRS");
  const std::string their_rack = w.Rack(w.other_op, their_site, "TR1");
  v1::RegisterDevicesRequest theirs;
  *theirs.add_requests() = w.Device(their_site, "SN-T", "");
  v1::RegisterDevicesResponse their_devices;
  REQUIRE(w.Invoke(*w.inventory, &IS::RegisterDevices, w.other_op, theirs, &their_devices)
              .status.ok());
  const std::string their_device = their_devices.devices(0).id();

  v1::RegisterDevicesRequest batch;
  *batch.add_requests() = w.Device(w.site, "SN-1", Id(1));
  *batch.add_requests() = w.Device(their_site, "SN-2", Id(2));
  v1::RegisterDevicesResponse ignored;
  World::Call call = w.Invoke(*w.inventory, &IS::RegisterDevices, w.op, batch, &ignored);
  CHECK(call.status.error_code() == grpc::StatusCode::NOT_FOUND);
  CHECK(DetailOf(call.status).metadata().at("item") == "1");
  CHECK(call.status.error_message().find(w.other_org) == std::string::npos);
  CHECK(w.Count("SELECT count(*) FROM devices") == 1);  // theirs only

  const std::vector<std::string> mine = w.Devices("M-", 2);
  for (const auto& [rack, device] : std::vector<std::pair<std::string, std::string>>{
           {their_rack, mine[1]}, {w.rack, their_device}}) {
    v1::PlaceDevicesRequest places;
    *places.add_requests() = w.Placement(w.rack, mine[0], 1, Id(10));
    *places.add_requests() = w.Placement(rack, device, 5, Id(11));
    v1::PlaceDevicesResponse placed;
    call = w.Invoke(*w.occupancy, &OS::PlaceDevices, w.op, places, &placed);
    CHECK(call.status.error_code() == grpc::StatusCode::NOT_FOUND);
    CHECK(DetailOf(call.status).metadata().at("item") == "1");
    CHECK(w.ActiveBookings() == 0);
    CHECK(w.Count("SELECT count(*) FROM client_requests") == 0);
  }
}

TEST_CASE("PlaceDevices books every item through PlaceDevice's write path; a retry and a single "
          "PlaceDevice with an item's id replay; an item on taken units fails the batch naming "
          "its index and the units, and books nothing") {
  World w;
  const std::vector<std::string> d = w.Devices("D-", 5);
  v1::PlaceDevicesRequest batch;
  for (int i = 0; i < 3; ++i) *batch.add_requests() = w.Placement(w.rack, d[i], 10 + i, Id(i));
  v1::PlaceDevicesResponse first;
  World::Call call = w.Invoke(*w.occupancy, &OS::PlaceDevices, w.op, batch, &first);
  INFO(call.status.error_message());
  REQUIRE(call.status.ok());
  REQUIRE(first.bookings_size() == 3);
  for (int i = 0; i < 3; ++i) {
    CHECK(first.bookings(i).device_id() == d[i]);
    CHECK(first.bookings(i).kind() == v1::BOOKING_PLACEMENT);
  }
  CHECK(w.ActiveBookings() == 3);

  v1::PlaceDevicesResponse again;
  call = w.Invoke(*w.occupancy, &OS::PlaceDevices, w.op, batch, &again);
  REQUIRE(call.status.ok());
  CHECK(call.replay());
  for (int i = 0; i < 3; ++i) CHECK(again.bookings(i).id() == first.bookings(i).id());
  v1::Booking single;
  call = w.Invoke(*w.occupancy, &OS::PlaceDevice, w.op, batch.requests(1), &single);
  REQUIRE(call.status.ok());
  CHECK(call.replay());
  CHECK(single.id() == first.bookings(1).id());
  CHECK(w.ActiveBookings() == 3);

  // d[3] to a free unit, d[4] onto d[0]'s unit: the batch fails at item 1, d[3] is not placed.
  v1::PlaceDevicesRequest colliding;
  *colliding.add_requests() = w.Placement(w.rack, d[3], 30, Id(3));
  *colliding.add_requests() = w.Placement(w.rack, d[4], 10, Id(4));
  v1::PlaceDevicesResponse ignored;
  call = w.Invoke(*w.occupancy, &OS::PlaceDevices, w.op, colliding, &ignored);
  CHECK(call.status.error_code() == grpc::StatusCode::FAILED_PRECONDITION);
  const v1::ErrorDetail detail = DetailOf(call.status);
  CHECK(detail.reason() == v1::UNIT_OCCUPIED);
  CHECK(detail.metadata().at("item") == "1");
  REQUIRE(detail.colliding_slots_size() >= 1);
  CHECK(detail.colliding_slots(0).unit() == 10);
  CHECK(w.ActiveBookings() == 3);
  CHECK(w.Count("SELECT count(*) FROM client_requests WHERE request_id IN ('" + Id(3) + "', '" +
                Id(4) + "')") == 0);

  // One device twice in a batch: the device index refuses the second, naming it.
  v1::PlaceDevicesRequest twice;
  *twice.add_requests() = w.Placement(w.rack, d[3], 30, "");
  *twice.add_requests() = w.Placement(w.rack, d[3], 32, "");
  call = w.Invoke(*w.occupancy, &OS::PlaceDevices, w.op, twice, &ignored);
  CHECK(call.status.error_code() == grpc::StatusCode::FAILED_PRECONDITION);
  CHECK(DetailOf(call.status).reason() == v1::DEVICE_ALREADY_PLACED);
  CHECK(DetailOf(call.status).metadata().at("item") == "1");
  CHECK(w.ActiveBookings() == 3);
}

TEST_CASE("a batch and a single PlaceDevice racing for one slot on real connections: exactly "
          "one booking holds it, and a losing batch books none of its items") {
  World w;
  constexpr int kRounds = 12;
  const std::vector<std::string> d = w.Devices("R-", kRounds * 4);
  int batch_won = 0, single_won = 0;
  for (int round = 0; round < kRounds; ++round) {
    const int unit = 1 + round * 3;
    const std::string* dev = &d[round * 4];
    // The batch: two devices in another rack's units first (so its transaction holds work
    // when it reaches the contested slot), then the contested unit.
    const std::string other_rack = w.Rack(w.op, w.site, absl::StrCat("X", round));
    v1::PlaceDevicesRequest batch;
    *batch.add_requests() = w.Placement(other_rack, dev[0], 1, "");
    *batch.add_requests() = w.Placement(other_rack, dev[1], 2, "");
    *batch.add_requests() = w.Placement(w.rack, dev[2], unit, "");
    v1::PlaceDeviceRequest single = w.Placement(w.rack, dev[3], unit, "");
    testing::Barrier barrier(2);
    grpc::Status batch_status, single_status;
    std::thread batch_thread([&] {
      v1::PlaceDevicesResponse out;
      barrier.ArriveAndWait();
      batch_status = w.Invoke(*w.occupancy, &OS::PlaceDevices, w.op, batch, &out).status;
    });
    std::thread single_thread([&] {
      v1::Booking out;
      barrier.ArriveAndWait();
      single_status = w.Invoke(*w.occupancy, &OS::PlaceDevice, w.op, single, &out).status;
    });
    batch_thread.join();
    single_thread.join();
    INFO("round " << round << ": batch " << batch_status.error_message() << ", single "
                  << single_status.error_message());
    CHECK(batch_status.ok() != single_status.ok());
    CHECK(w.Count(absl::StrCat("SELECT count(*) FROM booking_slots WHERE released_at IS NULL "
                               "AND rack_id = '", w.rack, "' AND unit = ", unit,
                               " AND side = 'front'")) == 1);
    const int64_t batch_booked = w.Count(absl::StrCat(
        "SELECT count(*) FROM bookings WHERE released_at IS NULL AND device_id IN ('", dev[0],
        "', '", dev[1], "', '", dev[2], "')"));
    if (batch_status.ok()) {
      ++batch_won;
      CHECK(batch_booked == 3);
      CHECK(single_status.error_code() == grpc::StatusCode::FAILED_PRECONDITION);
      CHECK(DetailOf(single_status).reason() == v1::UNIT_OCCUPIED);
    } else {
      ++single_won;
      CHECK(batch_booked == 0);
      CHECK(batch_status.error_code() == grpc::StatusCode::FAILED_PRECONDITION);
      CHECK(DetailOf(batch_status).reason() == v1::UNIT_OCCUPIED);
      CHECK(DetailOf(batch_status).metadata().at("item") == "2");
    }
  }
  INFO("batch won " << batch_won << ", single won " << single_won);
  CHECK(batch_won + single_won == kRounds);
}

}  // namespace
}  // namespace dcl
