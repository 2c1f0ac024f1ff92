// The inventory service through a real in-process gRPC server with real tokens, beside the
// reservation, occupancy and move services it has to stay consistent with: every RPC's happy
// path and refusals, geometry changes against active bookings, device changes against
// placements, the process-state rules, decommissioning, paging, client request ids (replay after
// a lost reply, a same-id race, reuse refused) and another organization's ids reading exactly
// like unknown ones.
#include <catch2/catch.hpp>

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "dcl/v1/inventory.grpc.pb.h"
#include "dcl/v1/moves.grpc.pb.h"
#include "dcl/v1/occupancy.grpc.pb.h"
#include "dcl/v1/reservation.grpc.pb.h"
#include "services/common/grpc_status.h"
#include "tests/support/barrier.h"
#include "tests/support/fixtures.h"
#include "tests/support/grpc_harness.h"
#include "tests/support/suite.h"
#include "tests/support/test_db.h"

namespace dcl {
namespace {

using IS = v1::InventoryService::Stub;

// Every service behind one in-process server (tests/support/suite.h), one organization ("acme")
// with operator and commerce tokens, and a second organization ("globex") for foreign ids.
class World : public testing::SuiteWorld {
 public:
  World() {
    other_org = testing::CreateOrg(db, "globex");
    op = Token(Role::kDcOperator);
    commerce = Token(Role::kCommerce);
    other_op = testing::CreateTokenFor(db, other_org, Role::kDcOperator);
  }

  // A call whose response headers can be read afterwards.
  using Call = testing::Call;

  template <typename Req, typename Resp>
  Call Invoke(grpc::Status (IS::*method)(grpc::ClientContext*, const Req&, Resp*),
              const std::string& token, const Req& req, Resp* resp) {
    return testing::Invoke(*inventory, method, token, req, resp);
  }

  v1::Site Site(const std::string& name, const std::string& token = "") {
    v1::CreateSiteRequest req;
    req.set_name(name);
    v1::Site site;
    Call call = Invoke(&IS::CreateSite, token.empty() ? op : token, req, &site);
    REQUIRE(call.status.ok());
    return site;
  }

  v1::RackRecord Rack(const std::string& site_id, const std::string& name, int first = 1,
                      int count = 42, bool rear = true) {
    v1::CreateRackRequest req;
    req.set_site_id(site_id);
    req.set_name(name);
    req.mutable_geometry()->set_first_unit(first);
    req.mutable_geometry()->set_unit_count(count);
    req.mutable_geometry()->set_numbering(v1::NUMBERING_ASCENDING);
    req.mutable_geometry()->set_has_rear(rear);
    v1::RackRecord rack;
    Call call = Invoke(&IS::CreateRack, op, req, &rack);
    INFO(call.status.error_message());
    REQUIRE(call.status.ok());
    return rack;
  }

  v1::RegisterDeviceRequest DeviceRequest(const std::string& site_id, const std::string& serial) {
    v1::RegisterDeviceRequest req;
    req.set_site_id(site_id);
    req.set_vendor("Dell");
    req.set_model("R650");
    req.set_serial(serial);
    req.set_height_units(1);
    req.set_depth_class(v1::DEPTH_FULL);
    req.set_initial_state(v1::PROCESS_NORMAL);
    return req;
  }

  v1::Device Device(const std::string& site_id, const std::string& serial) {
    v1::Device device;
    Call call = Invoke(&IS::RegisterDevice, op, DeviceRequest(site_id, serial), &device);
    INFO(call.status.error_message());
    REQUIRE(call.status.ok());
    return device;
  }

  grpc::Status Place(const std::string& rack, const std::string& device, int unit,
                     v1::Booking* booking) {
    v1::PlaceDeviceRequest req;
    req.set_rack_id(rack);
    req.set_device_id(device);
    req.set_side(v1::SIDE_FRONT);
    req.set_unit(unit);
    return occupancy->PlaceDevice(testing::ContextWithToken(op).get(), req, booking);
  }

  std::string other_org, op, commerce, other_op;
};

v1::ErrorDetail DetailOf(const grpc::Status& status) {
  auto detail = ErrorDetailFromGrpc(status);
  REQUIRE(detail.has_value());
  return *detail;
}

TEST_CASE("sites: created, read, listed; a second site of one name is ALREADY_EXISTS naming it") {
  World w;
  const v1::Site fra = w.Site("FRA1");
  CHECK(fra.name() == "FRA1");
  CHECK(fra.has_created_at());

  v1::GetSiteRequest get;
  get.set_site_id(fra.id());
  v1::Site read;
  REQUIRE(w.Invoke(&IS::GetSite, w.commerce, get, &read).status.ok());  // commerce reads sites
  CHECK(read.SerializeAsString() == fra.SerializeAsString());

  v1::CreateSiteRequest dup;
  dup.set_name("FRA1");
  v1::Site ignored;
  World::Call again = w.Invoke(&IS::CreateSite, w.op, dup, &ignored);
  CHECK(again.status.error_code() == grpc::StatusCode::ALREADY_EXISTS);
  CHECK(DetailOf(again.status).reason() == v1::ALREADY_EXISTS);
  CHECK(DetailOf(again.status).metadata().at("existing_id") == fra.id());
  // Another organization may use the name.
  w.Site("FRA1", w.other_op);

  dup.set_name("");
  CHECK(w.Invoke(&IS::CreateSite, w.op, dup, &ignored).status.error_code() ==
        grpc::StatusCode::INVALID_ARGUMENT);
  // Commerce reads, never writes, the inventory.
  dup.set_name("AMS2");
  CHECK(w.Invoke(&IS::CreateSite, w.commerce, dup, &ignored).status.error_code() ==
        grpc::StatusCode::PERMISSION_DENIED);
}

TEST_CASE("lists page in creation order without repeats, filter, and refuse a forged token") {
  World w;
  std::vector<std::string> created;
  for (int i = 0; i < 7; ++i) created.push_back(w.Site(absl::StrCat("S", i)).id());
  w.Site("theirs", w.other_op);

  std::vector<std::string> seen;
  v1::ListSitesRequest list;
  list.set_page_size(3);
  int pages = 0;
  do {
    v1::ListSitesResponse page;
    REQUIRE(w.Invoke(&IS::ListSites, w.op, list, &page).status.ok());
    ++pages;
    CHECK(page.sites_size() <= 3);
    for (const v1::Site& s : page.sites()) seen.push_back(s.id());
    list.set_page_token(page.next_page_token());
  } while (!list.page_token().empty());
  CHECK(pages == 3);
  CHECK(seen == created);

  list.set_page_token("12345.not-a-uuid");
  v1::ListSitesResponse bad;
  World::Call forged = w.Invoke(&IS::ListSites, w.op, list, &bad);
  CHECK(forged.status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(DetailOf(forged.status).metadata().at("field") == "page_token");

  // Racks filtered by site, devices by state and site; decommissioned ones only on request.
  const std::string s0 = created[0], s1 = created[1];
  w.Rack(s0, "A");
  w.Rack(s0, "B");
  w.Rack(s1, "C");
  v1::ListRacksRequest racks;
  racks.set_site_id(s0);
  v1::ListRacksResponse rack_page;
  REQUIRE(w.Invoke(&IS::ListRacks, w.op, racks, &rack_page).status.ok());
  CHECK(rack_page.racks_size() == 2);

  w.Device(s0, "SN-1");
  v1::RegisterDeviceRequest staged = w.DeviceRequest(s1, "SN-2");
  staged.clear_initial_state();  // unspecified: staging
  v1::Device staging;
  REQUIRE(w.Invoke(&IS::RegisterDevice, w.op, staged, &staging).status.ok());
  CHECK(staging.process_state() == v1::PROCESS_STAGING);
  v1::ListDevicesRequest devices;
  devices.set_process_state(v1::PROCESS_STAGING);
  v1::ListDevicesResponse device_page;
  REQUIRE(w.Invoke(&IS::ListDevices, w.commerce, devices, &device_page).status.ok());
  REQUIRE(device_page.devices_size() == 1);
  CHECK(device_page.devices(0).id() == staging.id());
  devices.Clear();
  devices.set_site_id(s0);
  REQUIRE(w.Invoke(&IS::ListDevices, w.op, devices, &device_page).status.ok());
  CHECK(device_page.devices_size() == 1);
}

TEST_CASE("racks: geometry is validated, read back, and a geometry change that strands an "
          "active booking is refused naming the booking and its units") {
  World w;
  const v1::Site site = w.Site("FRA1");
  v1::CreateRackRequest bad;
  bad.set_site_id(site.id());
  bad.set_name("X");
  v1::RackRecord ignored;
  CHECK(DetailOf(w.Invoke(&IS::CreateRack, w.op, bad, &ignored).status).metadata().at("field") ==
        "geometry");
  bad.mutable_geometry()->set_unit_count(42);
  bad.mutable_geometry()->set_first_unit(901);  // beyond racks_first_unit_bounded
  bad.mutable_geometry()->set_numbering(v1::NUMBERING_ASCENDING);
  CHECK(DetailOf(w.Invoke(&IS::CreateRack, w.op, bad, &ignored).status).metadata().at("field") ==
        "geometry.first_unit");
  bad.mutable_geometry()->set_first_unit(1);
  bad.mutable_geometry()->set_numbering(v1::NUMBERING_UNSPECIFIED);
  CHECK(DetailOf(w.Invoke(&IS::CreateRack, w.op, bad, &ignored).status).metadata().at("field") ==
        "geometry.numbering");

  const v1::RackRecord rack = w.Rack(site.id(), "FRA1-A01");
  CHECK(rack.geometry().unit_count() == 42);
  CHECK(rack.power_budget_watts() == 0);
  v1::GetRackRequest get;
  get.set_rack_id(rack.id());
  v1::RackRecord read;
  REQUIRE(w.Invoke(&IS::GetRack, w.op, get, &read).status.ok());
  CHECK(read.SerializeAsString() == rack.SerializeAsString());

  const v1::Device device = w.Device(site.id(), "SN-1");  // full depth: front and rear
  v1::Booking placement;
  REQUIRE(w.Place(rack.id(), device.id(), 40, &placement).ok());

  v1::UpdateRackRequest shrink;
  shrink.set_rack_id(rack.id());
  *shrink.mutable_geometry() = rack.geometry();
  shrink.mutable_geometry()->set_unit_count(39);
  World::Call refused = w.Invoke(&IS::UpdateRack, w.op, shrink, &ignored);
  CHECK(refused.status.error_code() == grpc::StatusCode::FAILED_PRECONDITION);
  v1::ErrorDetail detail = DetailOf(refused.status);
  CHECK(detail.reason() == v1::OUT_OF_BOUNDS);
  CHECK(detail.metadata().at("booking_ids") == placement.id());
  CHECK(refused.status.error_message().find(placement.id()) != std::string::npos);
  CHECK(refused.status.error_message().find("front U40") != std::string::npos);
  CHECK(detail.colliding_slots_size() == 2);  // front and rear of U40

  v1::UpdateRackRequest open_frame;
  open_frame.set_rack_id(rack.id());
  *open_frame.mutable_geometry() = rack.geometry();
  open_frame.mutable_geometry()->set_has_rear(false);
  World::Call no_rear = w.Invoke(&IS::UpdateRack, w.op, open_frame, &ignored);
  CHECK(DetailOf(no_rear.status).reason() == v1::OUT_OF_BOUNDS);
  CHECK(DetailOf(no_rear.status).colliding_slots_size() == 1);
  CHECK(DetailOf(no_rear.status).colliding_slots(0).side() == v1::SIDE_REAR);
  CHECK(w.db.Scalar(absl::StrCat("SELECT unit_count FROM racks WHERE id = '", rack.id(), "'")) ==
        "42");

  // Growing keeps every booking inside; name and budgets change on their own.
  v1::UpdateRackRequest grow;
  grow.set_rack_id(rack.id());
  *grow.mutable_geometry() = rack.geometry();
  grow.mutable_geometry()->set_unit_count(47);
  grow.set_name("FRA1-A01b");
  grow.set_power_budget_watts(8000);
  v1::RackRecord grown;
  // A power budget is decided by the database from then on (schema 0039): over a device whose
  // power is unknown it is refused naming the device, and below the rack's load naming the load.
  World::Call unknown = w.Invoke(&IS::UpdateRack, w.op, grow, &grown);
  CHECK(DetailOf(unknown.status).reason() == v1::POWER_UNKNOWN);
  CHECK(DetailOf(unknown.status).metadata().at("device_id") == device.id());
  CHECK(DetailOf(unknown.status).metadata().at("missing") == "power_draw_watts");
  w.db.Exec(absl::StrCat("UPDATE devices SET power_draw_watts = 450 WHERE id = '", device.id(),
                         "'"));
  grow.set_power_budget_watts(400);
  World::Call below = w.Invoke(&IS::UpdateRack, w.op, grow, &grown);
  CHECK(below.status.error_code() == grpc::StatusCode::FAILED_PRECONDITION);
  CHECK(DetailOf(below.status).reason() == v1::POWER_BUDGET_EXCEEDED);
  CHECK(DetailOf(below.status).metadata().at("used_watts") == "450");
  CHECK(below.status.error_message() ==
        "rack FRA1-A01 already carries 450 W, more than a power budget of 400 W: release "
        "bookings first, or budget at least that");
  grow.set_power_budget_watts(8000);
  REQUIRE(w.Invoke(&IS::UpdateRack, w.op, grow, &grown).status.ok());
  CHECK(grown.geometry().unit_count() == 47);
  CHECK(grown.name() == "FRA1-A01b");
  CHECK(grown.power_budget_watts() == 8000);
  v1::UpdateRackRequest clear;
  clear.set_rack_id(rack.id());
  clear.set_power_budget_watts(0);
  REQUIRE(w.Invoke(&IS::UpdateRack, w.op, clear, &grown).status.ok());
  CHECK(grown.power_budget_watts() == 0);
  CHECK(grown.geometry().unit_count() == 47);

  // Once the booking is released, the shrink goes through.
  v1::ReleaseBookingRequest release;
  release.set_booking_id(placement.id());
  REQUIRE(w.occupancy->ReleaseBooking(testing::ContextWithToken(w.op).get(), release, &placement)
              .ok());
  REQUIRE(w.Invoke(&IS::UpdateRack, w.op, shrink, &grown).status.ok());
  CHECK(grown.geometry().unit_count() == 39);
}

TEST_CASE("a geometry change that strands a hundred bookings is refused readably: the first five "
          "named, all counted, every slot listed, within a gRPC client's header limit") {
  // The fuzzer met this as RESOURCE_EXHAUSTED "received initial metadata size exceeds limit":
  // a refusal naming every booking outgrew the client's 8 KiB of headers.
  World w;
  const v1::Site site = w.Site("FRA1");
  const v1::RackRecord rack = w.Rack(site.id(), "FRA1-FULL", 1, 100);
  std::set<std::string> placed;
  for (int unit = 1; unit <= 100; ++unit) {
    const v1::Device device = w.Device(site.id(), absl::StrCat("SN-FULL-", unit));
    v1::Booking placement;
    REQUIRE(w.Place(rack.id(), device.id(), unit, &placement).ok());
    placed.insert(placement.id());
  }
  v1::UpdateRackRequest shrink;
  shrink.set_rack_id(rack.id());
  *shrink.mutable_geometry() = rack.geometry();
  shrink.mutable_geometry()->set_first_unit(200);
  shrink.mutable_geometry()->set_unit_count(1);
  v1::RackRecord ignored;
  World::Call refused = w.Invoke(&IS::UpdateRack, w.op, shrink, &ignored);
  INFO(refused.status.error_message());
  REQUIRE(refused.status.error_code() == grpc::StatusCode::FAILED_PRECONDITION);
  const v1::ErrorDetail detail = DetailOf(refused.status);
  CHECK(detail.reason() == v1::OUT_OF_BOUNDS);
  CHECK(detail.metadata().at("booking_count") == "100");
  const std::vector<std::string> named = absl::StrSplit(detail.metadata().at("booking_ids"), ',');
  CHECK(named.size() == 5);
  for (const std::string& id : named) CHECK(placed.count(id) == 1);
  CHECK(refused.status.error_message().find("and 95 more") != std::string::npos);
  CHECK(detail.colliding_slots_size() == 200);  // U1..U100 front and rear, none left out
  CHECK(detail.metadata().count("detail_shortened") == 0);
  CHECK(w.db.Scalar(absl::StrCat("SELECT unit_count FROM racks WHERE id = '", rack.id(), "'")) ==
        "100");
}

TEST_CASE("devices: registered with their facts, serial unique per organization, and a placed "
          "device's height or depth is not changed underneath its placement") {
  World w;
  const v1::Site site = w.Site("FRA1");
  v1::RegisterDeviceRequest req = w.DeviceRequest(site.id(), "SN-1");
  req.set_hardware_profile("c32-m256");
  req.set_power_draw_watts(450);
  v1::Device device;
  REQUIRE(w.Invoke(&IS::RegisterDevice, w.op, req, &device).status.ok());
  CHECK(device.vendor() == "Dell");
  CHECK(device.serial() == "SN-1");
  CHECK(device.depth_class() == v1::DEPTH_FULL);
  CHECK(device.has_power_draw_watts());
  CHECK(device.power_draw_watts() == 450);
  CHECK_FALSE(device.has_weight_kg());  // unknown stays unknown
  CHECK(w.db.Scalar(absl::StrCat("SELECT weight_kg IS NULL FROM devices WHERE id = '",
                                 device.id(), "'")) == "t");

  v1::Device ignored;
  World::Call dup = w.Invoke(&IS::RegisterDevice, w.op, w.DeviceRequest(site.id(), "SN-1"),
                             &ignored);
  CHECK(dup.status.error_code() == grpc::StatusCode::ALREADY_EXISTS);
  CHECK(DetailOf(dup.status).metadata().at("field") == "serial");
  CHECK(DetailOf(dup.status).metadata().at("existing_id") == device.id());
  // Another organization's serials are its own.
  const v1::Site theirs = w.Site("FRA1", w.other_op);
  v1::Device their_device;
  REQUIRE(w.Invoke(&IS::RegisterDevice, w.other_op, w.DeviceRequest(theirs.id(), "SN-1"),
                   &their_device)
              .status.ok());
  v1::RegisterDeviceRequest tall = w.DeviceRequest(site.id(), "SN-9");
  tall.set_height_units(0);
  CHECK(DetailOf(w.Invoke(&IS::RegisterDevice, w.op, tall, &ignored).status)
            .metadata()
            .at("field") == "height_units");
  tall.set_height_units(1);
  tall.set_initial_state(v1::PROCESS_IN_TRANSIT);
  CHECK(DetailOf(w.Invoke(&IS::RegisterDevice, w.op, tall, &ignored).status)
            .metadata()
            .at("field") == "initial_state");

  const v1::RackRecord rack = w.Rack(site.id(), "R1");
  v1::Booking placement;
  REQUIRE(w.Place(rack.id(), device.id(), 10, &placement).ok());

  v1::UpdateDeviceRequest taller;
  taller.set_device_id(device.id());
  taller.set_height_units(2);
  World::Call refused = w.Invoke(&IS::UpdateDevice, w.op, taller, &ignored);
  CHECK(refused.status.error_code() == grpc::StatusCode::FAILED_PRECONDITION);
  CHECK(DetailOf(refused.status).reason() == v1::DEVICE_IN_USE);
  CHECK(DetailOf(refused.status).metadata().at("placed_by_booking") == placement.id());
  CHECK(refused.status.error_message().find("R1") != std::string::npos);
  v1::UpdateDeviceRequest shallower;
  shallower.set_device_id(device.id());
  shallower.set_depth_class(v1::DEPTH_HALF);
  CHECK(DetailOf(w.Invoke(&IS::UpdateDevice, w.op, shallower, &ignored).status).reason() ==
        v1::DEVICE_IN_USE);
  CHECK(w.db.Scalar(absl::StrCat("SELECT height_units::text || depth_class FROM devices WHERE "
                                 "id = '",
                                 device.id(), "'")) == "1full");

  // Facts that shape no booking change freely; serial collisions are refused here too.
  v1::UpdateDeviceRequest facts;
  facts.set_device_id(device.id());
  facts.set_model("R650xs");
  facts.set_power_draw_unknown(true);
  facts.set_weight_kg(18);
  v1::Device updated;
  REQUIRE(w.Invoke(&IS::UpdateDevice, w.op, facts, &updated).status.ok());
  CHECK(updated.model() == "R650xs");
  CHECK_FALSE(updated.has_power_draw_watts());
  CHECK(updated.weight_kg() == 18);
  const v1::Device second = w.Device(site.id(), "SN-2");
  v1::UpdateDeviceRequest steal;
  steal.set_device_id(second.id());
  steal.set_serial("SN-1");
  CHECK(w.Invoke(&IS::UpdateDevice, w.op, steal, &ignored).status.error_code() ==
        grpc::StatusCode::ALREADY_EXISTS);

  // Released, the device may change shape.
  v1::ReleaseBookingRequest release;
  release.set_booking_id(placement.id());
  REQUIRE(w.occupancy->ReleaseBooking(testing::ContextWithToken(w.op).get(), release, &placement)
              .ok());
  REQUIRE(w.Invoke(&IS::UpdateDevice, w.op, taller, &updated).status.ok());
  CHECK(updated.height_units() == 2);
}

TEST_CASE("process state: operators switch staging and normal; moving and in_transit belong to "
          "the move workflow") {
  World w;
  const v1::Site site = w.Site("FRA1");
  const v1::Device device = w.Device(site.id(), "SN-1");
  v1::SetDeviceStateRequest req;
  req.set_device_id(device.id());
  req.set_state(v1::PROCESS_STAGING);
  v1::Device out;
  REQUIRE(w.Invoke(&IS::SetDeviceState, w.op, req, &out).status.ok());
  CHECK(out.process_state() == v1::PROCESS_STAGING);
  REQUIRE(w.Invoke(&IS::SetDeviceState, w.op, req, &out).status.ok());  // already: unchanged
  CHECK(out.process_state() == v1::PROCESS_STAGING);
  req.set_state(v1::PROCESS_NORMAL);
  REQUIRE(w.Invoke(&IS::SetDeviceState, w.op, req, &out).status.ok());
  CHECK(out.process_state() == v1::PROCESS_NORMAL);

  for (v1::ProcessState target : {v1::PROCESS_MOVING, v1::PROCESS_IN_TRANSIT}) {
    req.set_state(target);
    World::Call refused = w.Invoke(&IS::SetDeviceState, w.op, req, &out);
    CHECK(refused.status.error_code() == grpc::StatusCode::FAILED_PRECONDITION);
    CHECK(DetailOf(refused.status).reason() == v1::INVALID_TRANSITION);
    CHECK(DetailOf(refused.status).allowed_targets_size() == 2);
  }
  req.set_state(v1::PROCESS_STATE_UNSPECIFIED);
  CHECK(w.Invoke(&IS::SetDeviceState, w.op, req, &out).status.error_code() ==
        grpc::StatusCode::INVALID_ARGUMENT);

  // With a move open (planned: the device is still normal) the move owns the state.
  const v1::RackRecord rack = w.Rack(site.id(), "R1");
  v1::Booking placement;
  REQUIRE(w.Place(rack.id(), device.id(), 5, &placement).ok());
  v1::StartMoveRequest start;
  start.set_device_id(device.id());
  start.set_destination_rack_id(rack.id());
  start.set_destination_side(v1::SIDE_FRONT);
  start.set_destination_unit(20);
  v1::Move move;
  REQUIRE(w.moves->StartMove(testing::ContextWithToken(w.op).get(), start, &move).ok());
  req.set_state(v1::PROCESS_STAGING);
  World::Call open = w.Invoke(&IS::SetDeviceState, w.op, req, &out);
  CHECK(DetailOf(open.status).reason() == v1::MOVE_ALREADY_OPEN);
  CHECK(DetailOf(open.status).metadata().at("move_id") == move.id());

  // A device the workflow put in transit is not taken out of it by hand.
  const v1::Device travelling = w.Device(site.id(), "SN-2");
  w.db.Exec(absl::StrCat("UPDATE devices SET process_state = 'in_transit' WHERE id = '",
                         travelling.id(), "'"));
  req.set_device_id(travelling.id());
  req.set_state(v1::PROCESS_NORMAL);
  World::Call in_transit = w.Invoke(&IS::SetDeviceState, w.op, req, &out);
  CHECK(DetailOf(in_transit.status).reason() == v1::INVALID_TRANSITION);
  CHECK(DetailOf(in_transit.status).metadata().at("process_state") == "in_transit");
}

TEST_CASE("decommission is refused while the device is held, bound, placed or moving, naming "
          "which; a decommissioned device is neither sold, placed nor changed") {
  World w;
  const v1::Site site = w.Site("FRA1");
  const v1::RackRecord rack = w.Rack(site.id(), "R1");
  v1::Device ignored;
  auto decommission = [&](const std::string& device_id) {
    v1::DecommissionDeviceRequest req;
    req.set_device_id(device_id);
    req.set_reason("end of life");
    return w.Invoke(&IS::DecommissionDevice, w.op, req, &ignored).status;
  };

  SECTION("held by an order, then bound to a service") {
    const v1::Device device = w.Device(site.id(), "SN-1");
    v1::ReserveRequest reserve;
    reserve.set_idempotency_key("order-1");
    reserve.mutable_criteria()->set_site_id(site.id());
    v1::ReserveResponse held;
    REQUIRE(w.reservations->Reserve(testing::ContextWithToken(w.commerce).get(), reserve, &held)
                .ok());
    grpc::Status refused = decommission(device.id());
    CHECK(DetailOf(refused).reason() == v1::DEVICE_IN_USE);
    CHECK(DetailOf(refused).metadata().at("held_by_reservation") == held.reservation().id());
    CHECK(refused.error_message().find("held by reservation") != std::string::npos);

    v1::CreateServiceRequest create;
    create.set_kind("dedicated");
    create.set_customer("bob");
    v1::Service service;
    REQUIRE(w.reservations->CreateService(testing::ContextWithToken(w.commerce).get(), create,
                                          &service)
                .ok());
    v1::ConvertRequest convert;
    convert.mutable_reservation()->set_reservation_id(held.reservation().id());
    convert.set_service_id(service.id());
    v1::ConvertResponse converted;
    REQUIRE(w.reservations->Convert(testing::ContextWithToken(w.commerce).get(), convert,
                                    &converted)
                .ok());
    refused = decommission(device.id());
    CHECK(DetailOf(refused).metadata().at("bound_to_service") == service.id());
    CHECK(DetailOf(refused).metadata().count("held_by_reservation") == 0);
  }

  SECTION("placed, then moving, each named; all of them at once") {
    const v1::Device device = w.Device(site.id(), "SN-1");
    v1::Booking placement;
    REQUIRE(w.Place(rack.id(), device.id(), 5, &placement).ok());
    grpc::Status refused = decommission(device.id());
    CHECK(DetailOf(refused).metadata().at("placed_by_booking") == placement.id());
    CHECK(refused.error_message().find("placed in rack R1") != std::string::npos);

    v1::StartMoveRequest start;
    start.set_device_id(device.id());
    start.set_destination_rack_id(rack.id());
    start.set_destination_side(v1::SIDE_FRONT);
    start.set_destination_unit(20);
    v1::Move move;
    REQUIRE(w.moves->StartMove(testing::ContextWithToken(w.op).get(), start, &move).ok());
    refused = decommission(device.id());
    CHECK(DetailOf(refused).metadata().at("moving") == move.id());
    CHECK(DetailOf(refused).metadata().at("placed_by_booking") == placement.id());
  }

  SECTION("free, it is decommissioned; afterwards Reserve passes it over, PlaceDevice and every "
          "change refuse it") {
    const v1::Device device = w.Device(site.id(), "SN-1");
    REQUIRE(decommission(device.id()).ok());
    v1::GetDeviceRequest get;
    get.set_device_id(device.id());
    v1::Device read;
    REQUIRE(w.Invoke(&IS::GetDevice, w.op, get, &read).status.ok());
    CHECK(read.decommissioned());
    CHECK(read.has_decommissioned_at());
    CHECK(w.db.Scalar(absl::StrCat("SELECT decommission_reason FROM devices WHERE id = '",
                                   device.id(), "'")) == "end of life");
    // Gone from the default list, there on request.
    v1::ListDevicesRequest list;
    v1::ListDevicesResponse listed;
    REQUIRE(w.Invoke(&IS::ListDevices, w.op, list, &listed).status.ok());
    CHECK(listed.devices_size() == 0);
    list.set_include_decommissioned(true);
    REQUIRE(w.Invoke(&IS::ListDevices, w.op, list, &listed).status.ok());
    CHECK(listed.devices_size() == 1);

    v1::ReserveRequest reserve;
    reserve.set_idempotency_key("order-1");
    reserve.mutable_criteria()->set_site_id(site.id());
    v1::ReserveResponse held;
    grpc::Status no_capacity =
        w.reservations->Reserve(testing::ContextWithToken(w.commerce).get(), reserve, &held);
    REQUIRE(DetailOf(no_capacity).reason() == v1::NO_CAPACITY);
    REQUIRE(DetailOf(no_capacity).exclusion_counts_size() == 1);
    CHECK(DetailOf(no_capacity).exclusion_counts(0).reason() == "decommissioned");

    v1::Booking booking;
    CHECK(DetailOf(w.Place(rack.id(), device.id(), 5, &booking)).reason() ==
          v1::DEVICE_DECOMMISSIONED);
    CHECK(DetailOf(decommission(device.id())).reason() == v1::DEVICE_DECOMMISSIONED);
    v1::SetDeviceStateRequest state;
    state.set_device_id(device.id());
    state.set_state(v1::PROCESS_STAGING);
    CHECK(DetailOf(w.Invoke(&IS::SetDeviceState, w.op, state, &ignored).status).reason() ==
          v1::DEVICE_DECOMMISSIONED);
    v1::UpdateDeviceRequest update;
    update.set_device_id(device.id());
    update.set_model("X");
    CHECK(DetailOf(w.Invoke(&IS::UpdateDevice, w.op, update, &ignored).status).reason() ==
          v1::DEVICE_DECOMMISSIONED);
  }
}

// ---- Client request ids ----

TEST_CASE("every write replays its first answer when called again with the same request id "
          "(the first reply was lost), writing nothing twice") {
  World w;
  const v1::Site site = w.Site("FRA1");
  const v1::RackRecord rack = w.Rack(site.id(), "R1");
  const v1::Device device = w.Device(site.id(), "SN-1");
  int n = 0;
  auto id = [&n]() { return absl::StrCat("5e1d0000-0000-4000-8000-", 100000000000 + ++n); };

  // Calls `method` twice with one request id; both answers must be byte-equal, only the second
  // flagged, and the database fingerprint taken after the first must not move.
  auto twice = [&](auto method, auto req, auto* resp, const std::string& rows_sql) {
    req.set_request_id(id());
    INFO(req.GetDescriptor()->name());
    World::Call first = w.Invoke(method, w.op, req, resp);
    REQUIRE(first.status.ok());
    CHECK_FALSE(first.replay());
    const std::string first_answer = resp->SerializeAsString();
    const std::string rows = w.db.Scalar(rows_sql);
    resp->Clear();
    World::Call second = w.Invoke(method, w.op, req, resp);
    REQUIRE(second.status.ok());
    CHECK(second.replay());
    CHECK(resp->SerializeAsString() == first_answer);
    CHECK(w.db.Scalar(rows_sql) == rows);
  };
  const std::string all_rows =
      "SELECT (SELECT count(*) FROM sites) || '/' || (SELECT count(*) FROM racks) || '/' || "
      "(SELECT count(*) FROM devices) || '/' || (SELECT md5(string_agg(t::text, '|' ORDER BY "
      "t::text)) FROM (SELECT * FROM devices) t) || (SELECT md5(string_agg(t::text, '|' ORDER BY "
      "t::text)) FROM (SELECT * FROM racks) t)";

  v1::CreateSiteRequest create_site;
  create_site.set_name("AMS2");
  v1::Site site_out;
  twice(&IS::CreateSite, create_site, &site_out, all_rows);

  v1::CreateRackRequest create_rack;
  create_rack.set_site_id(site.id());
  create_rack.set_name("R2");
  create_rack.mutable_geometry()->set_first_unit(1);
  create_rack.mutable_geometry()->set_unit_count(42);
  create_rack.mutable_geometry()->set_numbering(v1::NUMBERING_DESCENDING);
  v1::RackRecord rack_out;
  twice(&IS::CreateRack, create_rack, &rack_out, all_rows);

  v1::UpdateRackRequest update_rack;
  update_rack.set_rack_id(rack.id());
  update_rack.set_weight_budget_kg(900);
  twice(&IS::UpdateRack, update_rack, &rack_out, all_rows);

  v1::Device device_out;
  twice(&IS::RegisterDevice, w.DeviceRequest(site.id(), "SN-2"), &device_out, all_rows);

  v1::UpdateDeviceRequest update_device;
  update_device.set_device_id(device.id());
  update_device.set_hardware_profile("gpu");
  twice(&IS::UpdateDevice, update_device, &device_out, all_rows);

  v1::SetDeviceStateRequest set_state;
  set_state.set_device_id(device.id());
  set_state.set_state(v1::PROCESS_STAGING);
  twice(&IS::SetDeviceState, set_state, &device_out, all_rows);

  v1::DecommissionDeviceRequest decommission;
  decommission.set_device_id(device.id());
  twice(&IS::DecommissionDevice, decommission, &device_out, all_rows);
  CHECK(device_out.decommissioned());

  // Seven writes, seven ledger rows; the replays added none.
  CHECK(w.db.Count("SELECT count(*) FROM client_requests") == 7);
}

TEST_CASE("a write whose client gave up (1 ms deadline) is not done twice by its retry") {
  World w;
  v1::CreateSiteRequest req;
  req.set_request_id("8d3e4c1a-2b6f-4c1d-9e0a-7f5b3c2d1e0f");
  req.set_name("AMS2");
  v1::Site site;
  grpc::ClientContext hasty;
  hasty.AddMetadata("authorization", "Bearer " + w.op);
  hasty.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(1));
  grpc::Status first = w.inventory->CreateSite(&hasty, req, &site);
  // Whether the server committed before the deadline or not, the retry answers OK once.
  World::Call retry = w.Invoke(&IS::CreateSite, w.op, req, &site);
  INFO(first.error_message());
  REQUIRE(retry.status.ok());
  CHECK(site.name() == "AMS2");
  CHECK(w.db.Count("SELECT count(*) FROM sites WHERE name = 'AMS2'") == 1);
  World::Call third = w.Invoke(&IS::CreateSite, w.op, req, &site);
  REQUIRE(third.status.ok());
  CHECK(third.replay());
  CHECK(w.db.Count("SELECT count(*) FROM sites WHERE name = 'AMS2'") == 1);
}

TEST_CASE("eight concurrent calls with one request id: one write, eight equal answers, seven "
          "flagged as replays") {
  World w;
  const v1::Site site = w.Site("FRA1");
  v1::RegisterDeviceRequest req = w.DeviceRequest(site.id(), "SN-RACE");
  req.set_request_id("0a7c3b9e-5d41-4f2a-8c6b-1e9d2f3a4b5c");
  constexpr int kCallers = 8;
  testing::Barrier barrier(kCallers);
  std::vector<std::string> answers(kCallers);
  std::vector<int> replays(kCallers, -1);
  std::vector<std::thread> threads;
  for (int i = 0; i < kCallers; ++i) {
    threads.emplace_back([&, i] {
      v1::Device device;
      barrier.ArriveAndWait();
      World::Call call = w.Invoke(&IS::RegisterDevice, w.op, req, &device);
      if (!call.status.ok()) {
        answers[i] = "error: " + call.status.error_message();
        return;
      }
      answers[i] = device.SerializeAsString();
      replays[i] = call.replay() ? 1 : 0;
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::string& answer : answers) CHECK(answer == answers[0]);
  int flagged = 0;
  for (int r : replays) flagged += r;
  CHECK(flagged == kCallers - 1);
  CHECK(w.db.Count("SELECT count(*) FROM devices WHERE serial = 'SN-RACE'") == 1);
  CHECK(w.db.Count("SELECT count(*) FROM client_requests") == 1);
}

TEST_CASE("a request id reused with other parameters or for another RPC is REQUEST_ID_REUSED; "
          "a refused write leaves no claim and its retry runs again") {
  World w;
  const v1::Site site = w.Site("FRA1");
  const std::string id = "c0ffee00-0000-4000-8000-000000000001";
  v1::Device device;
  v1::RegisterDeviceRequest req = w.DeviceRequest(site.id(), "SN-1");
  req.set_request_id(id);
  REQUIRE(w.Invoke(&IS::RegisterDevice, w.op, req, &device).status.ok());

  v1::RegisterDeviceRequest other = req;
  other.set_serial("SN-2");
  v1::Device ignored;
  World::Call reused = w.Invoke(&IS::RegisterDevice, w.op, other, &ignored);
  CHECK(reused.status.error_code() == grpc::StatusCode::FAILED_PRECONDITION);
  CHECK(DetailOf(reused.status).reason() == v1::REQUEST_ID_REUSED);
  CHECK(DetailOf(reused.status).metadata().at("request_id") == id);
  CHECK(reused.status.error_message().find("other parameters") != std::string::npos);

  v1::CreateSiteRequest site_req;
  site_req.set_request_id(id);
  site_req.set_name("AMS2");
  v1::Site site_out;
  World::Call other_rpc = w.Invoke(&IS::CreateSite, w.op, site_req, &site_out);
  CHECK(DetailOf(other_rpc.status).reason() == v1::REQUEST_ID_REUSED);
  CHECK(DetailOf(other_rpc.status).metadata().at("rpc") ==
        "/dcl.v1.InventoryService/RegisterDevice");
  CHECK(w.db.Count("SELECT count(*) FROM devices") == 1);
  CHECK(w.db.Count("SELECT count(*) FROM sites WHERE name = 'AMS2'") == 0);

  // Another organization's calls with the same id are theirs.
  const v1::Site theirs = w.Site("AMS2", w.other_op);
  v1::RegisterDeviceRequest their_req = w.DeviceRequest(theirs.id(), "SN-1");
  their_req.set_request_id(id);
  World::Call theirs_call = w.Invoke(&IS::RegisterDevice, w.other_op, their_req, &ignored);
  REQUIRE(theirs_call.status.ok());
  CHECK_FALSE(theirs_call.replay());

  // A refused geometry change claims nothing; after the booking is gone the same call (same
  // id, same parameters) runs again and succeeds.
  const v1::RackRecord rack = w.Rack(site.id(), "R1");
  v1::Booking placement;
  REQUIRE(w.Place(rack.id(), device.id(), 40, &placement).ok());
  v1::UpdateRackRequest shrink;
  shrink.set_request_id("c0ffee00-0000-4000-8000-000000000002");
  shrink.set_rack_id(rack.id());
  *shrink.mutable_geometry() = rack.geometry();
  shrink.mutable_geometry()->set_unit_count(30);
  v1::RackRecord rack_out;
  CHECK(DetailOf(w.Invoke(&IS::UpdateRack, w.op, shrink, &rack_out).status).reason() ==
        v1::OUT_OF_BOUNDS);
  CHECK(w.db.Count("SELECT count(*) FROM client_requests WHERE request_id = "
                   "'c0ffee00-0000-4000-8000-000000000002'") == 0);
  v1::ReleaseBookingRequest release;
  release.set_booking_id(placement.id());
  REQUIRE(w.occupancy->ReleaseBooking(testing::ContextWithToken(w.op).get(), release, &placement)
              .ok());
  World::Call retried = w.Invoke(&IS::UpdateRack, w.op, shrink, &rack_out);
  REQUIRE(retried.status.ok());
  CHECK_FALSE(retried.replay());
  CHECK(rack_out.geometry().unit_count() == 30);
}

// ---- Organizations ----

TEST_CASE("another organization's ids read exactly like unknown ids on every inventory RPC") {
  World w;
  const v1::Site their_site = w.Site("FRA1", w.other_op);
  v1::CreateRackRequest their_rack_req;
  their_rack_req.set_site_id(their_site.id());
  their_rack_req.set_name("R1");
  their_rack_req.mutable_geometry()->set_first_unit(1);
  their_rack_req.mutable_geometry()->set_unit_count(42);
  their_rack_req.mutable_geometry()->set_numbering(v1::NUMBERING_ASCENDING);
  v1::RackRecord their_rack;
  REQUIRE(w.Invoke(&IS::CreateRack, w.other_op, their_rack_req, &their_rack).status.ok());
  v1::Device their_device;
  REQUIRE(w.Invoke(&IS::RegisterDevice, w.other_op, w.DeviceRequest(their_site.id(), "SN-1"),
                   &their_device)
              .status.ok());
  const std::string unknown = "00000000-0000-4000-8000-00000000dead";

  // Calls `call(id)` with the foreign id and with an unknown one: NOT_FOUND both times, and the
  // same words once the id itself is taken out.
  auto same = [&](const std::string& what, const std::string& foreign,
                  const std::function<grpc::Status(const std::string&)>& call) {
    INFO(what);
    const grpc::Status a = call(foreign);
    const grpc::Status b = call(unknown);
    REQUIRE(a.error_code() == grpc::StatusCode::NOT_FOUND);
    REQUIRE(b.error_code() == grpc::StatusCode::NOT_FOUND);
    CHECK(absl::StrReplaceAll(a.error_message(), {{foreign, "<id>"}}) ==
          absl::StrReplaceAll(b.error_message(), {{unknown, "<id>"}}));
    v1::ErrorDetail da = DetailOf(a), db = DetailOf(b);
    CHECK(da.metadata().size() == db.metadata().size());
  };
  v1::Site site;
  v1::RackRecord rack;
  v1::Device device;
  same("GetSite", their_site.id(), [&](const std::string& id) {
    v1::GetSiteRequest r;
    r.set_site_id(id);
    return w.Invoke(&IS::GetSite, w.op, r, &site).status;
  });
  same("CreateRack", their_site.id(), [&](const std::string& id) {
    v1::CreateRackRequest r = their_rack_req;
    r.set_site_id(id);
    return w.Invoke(&IS::CreateRack, w.op, r, &rack).status;
  });
  same("GetRack", their_rack.id(), [&](const std::string& id) {
    v1::GetRackRequest r;
    r.set_rack_id(id);
    return w.Invoke(&IS::GetRack, w.op, r, &rack).status;
  });
  same("UpdateRack", their_rack.id(), [&](const std::string& id) {
    v1::UpdateRackRequest r;
    r.set_rack_id(id);
    r.set_name("mine now");
    return w.Invoke(&IS::UpdateRack, w.op, r, &rack).status;
  });
  same("RegisterDevice", their_site.id(), [&](const std::string& id) {
    return w.Invoke(&IS::RegisterDevice, w.op, w.DeviceRequest(id, "SN-X"), &device).status;
  });
  same("GetDevice", their_device.id(), [&](const std::string& id) {
    v1::GetDeviceRequest r;
    r.set_device_id(id);
    return w.Invoke(&IS::GetDevice, w.commerce, r, &device).status;
  });
  same("UpdateDevice", their_device.id(), [&](const std::string& id) {
    v1::UpdateDeviceRequest r;
    r.set_device_id(id);
    r.set_height_units(3);
    return w.Invoke(&IS::UpdateDevice, w.op, r, &device).status;
  });
  same("SetDeviceState", their_device.id(), [&](const std::string& id) {
    v1::SetDeviceStateRequest r;
    r.set_device_id(id);
    r.set_state(v1::PROCESS_STAGING);
    return w.Invoke(&IS::SetDeviceState, w.op, r, &device).status;
  });
  same("DecommissionDevice", their_device.id(), [&](const std::string& id) {
    v1::DecommissionDeviceRequest r;
    r.set_device_id(id);
    return w.Invoke(&IS::DecommissionDevice, w.op, r, &device).status;
  });
  // Their rows are untouched, and a list filtered by their site shows nothing of theirs.
  CHECK(w.db.Scalar(absl::StrCat("SELECT name FROM racks WHERE id = '", their_rack.id(), "'")) ==
        "R1");
  CHECK(w.db.Count("SELECT count(*) FROM devices WHERE decommissioned_at IS NOT NULL") == 0);
  v1::ListRacksRequest list;
  list.set_site_id(their_site.id());
  v1::ListRacksResponse racks;
  REQUIRE(w.Invoke(&IS::ListRacks, w.op, list, &racks).status.ok());
  CHECK(racks.racks_size() == 0);
}

}  // namespace
}  // namespace dcl
