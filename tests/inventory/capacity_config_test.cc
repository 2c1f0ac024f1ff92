// Configuring a rack's capacity through InventoryService (issue 40): power feeds as a set
// (SetPowerFeeds), cooling budget and airflow (UpdateRack), a device's power ports and airflow
// (RegisterDevice / UpdateDevice), judged by the schema's rules (0038/0039) against what stands
// in the rack, through a real in-process server on a real PostgreSQL.
#include <catch2/catch.hpp>
#include <string>

#include "absl/strings/str_cat.h"
#include "dcl/v1/inventory.grpc.pb.h"
#include "dcl/v1/occupancy.grpc.pb.h"
#include "services/common/grpc_status.h"
#include "tests/support/suite.h"
#include "tests/support/test_db.h"

namespace dcl {
namespace {

using IS = v1::InventoryService::Stub;

class World : public testing::SuiteWorld {
 public:
  World() {
    op = Token(Role::kDcOperator);
    v1::CreateSiteRequest site_req;
    site_req.set_name("FRA1");
    v1::Site site;
    REQUIRE(testing::Invoke(*inventory, &IS::CreateSite, op, site_req, &site).status.ok());
    site_id = site.id();
    v1::CreateRackRequest rack_req;
    rack_req.set_site_id(site_id);
    rack_req.set_name("R1");
    rack_req.mutable_geometry()->set_first_unit(1);
    rack_req.mutable_geometry()->set_unit_count(42);
    rack_req.mutable_geometry()->set_numbering(v1::NUMBERING_ASCENDING);
    v1::RackRecord rack;
    REQUIRE(testing::Invoke(*inventory, &IS::CreateRack, op, rack_req, &rack).status.ok());
    rack_id = rack.id();
  }

  static v1::PowerFeed Feed(const std::string& name, int voltage, int amperage) {
    v1::PowerFeed feed;
    feed.set_name(name);
    feed.set_voltage(voltage);
    feed.set_amperage(amperage);
    return feed;
  }

  testing::Call SetFeeds(std::initializer_list<v1::PowerFeed> feeds, v1::RackRecord* out,
                         const std::string& request_id = "") {
    v1::SetPowerFeedsRequest req;
    req.set_request_id(request_id);
    req.set_rack_id(rack_id);
    for (const v1::PowerFeed& f : feeds) *req.add_feeds() = f;
    return testing::Invoke(*inventory, &IS::SetPowerFeeds, op, req, out);
  }

  std::string Device(int watts, int ports, v1::Airflow airflow, const std::string& serial) {
    v1::RegisterDeviceRequest req;
    req.set_site_id(site_id);
    req.set_vendor("Dell");
    req.set_model("R650");
    req.set_serial(serial);
    req.set_height_units(1);
    req.set_depth_class(v1::DEPTH_HALF);
    req.set_initial_state(v1::PROCESS_NORMAL);
    req.set_power_draw_watts(watts);
    req.set_power_port_count(ports);
    req.set_airflow(airflow);
    v1::Device device;
    testing::Call call = testing::Invoke(*inventory, &IS::RegisterDevice, op, req, &device);
    INFO(call.status.error_message());
    REQUIRE(call.status.ok());
    CHECK(device.power_port_count() == ports);
    CHECK(device.airflow() == airflow);
    return device.id();
  }

  grpc::Status Place(const std::string& device, int unit, const std::string& feed = "") {
    v1::PlaceDeviceRequest req;
    req.set_rack_id(rack_id);
    req.set_device_id(device);
    req.set_side(v1::SIDE_FRONT);
    req.set_unit(unit);
    if (!feed.empty()) req.add_power_feeds(feed);
    v1::Booking booking;
    return occupancy->PlaceDevice(testing::ContextWithToken(op).get(), req, &booking);
  }

  std::string FeedNames() {
    return db.Scalar(absl::StrCat("SELECT string_agg(name, ',' ORDER BY name) FROM power_feeds "
                                  "WHERE rack_id = '",
                                  rack_id, "'"));
  }

  std::string op, site_id, rack_id;
};

v1::ErrorDetail DetailOf(const grpc::Status& status) {
  INFO(status.error_message());
  auto detail = ErrorDetailFromGrpc(status);
  REQUIRE(detail.has_value());
  return *detail;
}

TEST_CASE("a rack's feeds are set as a set and judged where the set ends, against its load") {
  World w;
  v1::RackRecord rack;
  // 230 V x 16 A x 80 % = 2944 W; 230 V x 32 A x 80 % = 5888 W.
  REQUIRE(w.SetFeeds({World::Feed("A", 230, 16), World::Feed("B", 230, 32)}, &rack).status.ok());
  REQUIRE(rack.power_feeds_size() == 2);
  CHECK(rack.power_feeds(0).name() == "A");
  CHECK(rack.power_feeds(0).available_watts() == 2944);
  CHECK(rack.power_feeds(0).max_utilization() == 80);
  CHECK(rack.power_feeds(0).phase() == v1::POWER_PHASE_SINGLE);
  CHECK(rack.power_feeds(1).available_watts() == 5888);
  const std::string dual = w.Device(1500, 2, v1::AIRFLOW_FRONT_TO_REAR, "DUAL");
  REQUIRE(w.Place(dual, 1).ok());

  SECTION("removing B is fine while A carries the load alone; back again") {
    REQUIRE(w.SetFeeds({World::Feed("A", 230, 16)}, &rack).status.ok());
    CHECK(rack.power_feeds_size() == 1);
    CHECK(w.FeedNames() == "A");
    REQUIRE(w.SetFeeds({World::Feed("A", 230, 16), World::Feed("B", 230, 32)}, &rack).status.ok());
    CHECK(w.db.Scalar("SELECT count(*) FROM dcl_rack_budget_drift()") == "0");
  }

  SECTION("a third feed leaves the dual-PSU device without named feeds: FEEDS_UNNAMED") {
    testing::Call call = w.SetFeeds(
        {World::Feed("A", 230, 16), World::Feed("B", 230, 32), World::Feed("C", 230, 32)}, &rack);
    CHECK(call.status.error_code() == grpc::StatusCode::FAILED_PRECONDITION);
    const v1::ErrorDetail detail = DetailOf(call.status);
    CHECK(detail.reason() == v1::FEEDS_UNNAMED);
    CHECK(detail.metadata().at("device_id") == dual);
    CHECK(detail.metadata().at("rack_name") == "R1");
    CHECK(w.FeedNames() == "A,B");  // nothing of the refused set stays
  }

  SECTION("replacing B by C is judged at its end, not at {A,B,C} in between") {
    REQUIRE(w.SetFeeds({World::Feed("A", 230, 16), World::Feed("C", 230, 32)}, &rack).status.ok());
    CHECK(w.FeedNames() == "A,C");
    CHECK(w.db.Scalar("SELECT count(*) FROM dcl_rack_budget_drift()") == "0");
  }

  SECTION("A lowered below its normal load is POWER_BUDGET_EXCEEDED naming A") {
    // 230 x 4 x 80 % = 736 W < A's share 750 W (and < 1500 W with B lost).
    testing::Call call = w.SetFeeds({World::Feed("A", 230, 4), World::Feed("B", 230, 32)}, &rack);
    const v1::ErrorDetail detail = DetailOf(call.status);
    CHECK(detail.reason() == v1::POWER_BUDGET_EXCEEDED);
    CHECK(detail.metadata().at("feed") == "A");
    CHECK(detail.metadata().at("used_watts") == "750");
    CHECK(detail.metadata().at("capacity_watts") == "736");
  }

  SECTION("A lowered below what it carries with B lost is FEED_REDUNDANCY_LOST") {
    // 230 x 6 x 80 % = 1104 W: A's share 750 W fits, the whole 1500 W with B lost does not.
    testing::Call call = w.SetFeeds({World::Feed("A", 230, 6), World::Feed("B", 230, 32)}, &rack);
    const v1::ErrorDetail detail = DetailOf(call.status);
    CHECK(detail.reason() == v1::FEED_REDUNDANCY_LOST);
    CHECK(detail.metadata().at("feed") == "A");
    CHECK(detail.metadata().at("lost_feed") == "B");
  }

  SECTION("with a single-PSU device on B, removing B puts it on A: refused when A cannot carry") {
    const std::string single = w.Device(2000, 1, v1::AIRFLOW_FRONT_TO_REAR, "SINGLE");
    REQUIRE(w.Place(single, 3, "B").ok());
    testing::Call call = w.SetFeeds({World::Feed("A", 230, 16)}, &rack);
    const v1::ErrorDetail detail = DetailOf(call.status);
    CHECK(detail.reason() == v1::POWER_BUDGET_EXCEEDED);
    CHECK(detail.metadata().at("feed") == "A");
    CHECK(detail.metadata().at("used_watts") == "3500");
    CHECK(w.FeedNames() == "A,B");
  }

  SECTION("the same request id replays the first answer") {
    v1::RackRecord first, second;
    const std::string id = "5e1d0000-0000-4000-8000-000000000040";
    testing::Call a = w.SetFeeds({World::Feed("A", 230, 32), World::Feed("B", 230, 32)}, &first, id);
    REQUIRE(a.status.ok());
    CHECK_FALSE(a.replay());
    testing::Call b =
        w.SetFeeds({World::Feed("A", 230, 32), World::Feed("B", 230, 32)}, &second, id);
    REQUIRE(b.status.ok());
    CHECK(b.replay());
    CHECK(first.SerializeAsString() == second.SerializeAsString());
  }
}

TEST_CASE("a rack's cooling budget and airflow are judged against the devices in it") {
  World w;
  const std::string device = w.Device(1500, 2, v1::AIRFLOW_FRONT_TO_REAR, "D1");
  REQUIRE(w.Place(device, 1).ok());
  v1::UpdateRackRequest req;
  req.set_rack_id(w.rack_id);
  v1::RackRecord rack;

  req.set_airflow(v1::AIRFLOW_REAR_TO_FRONT);
  testing::Call opposite = testing::Invoke(*w.inventory, &IS::UpdateRack, w.op, req, &rack);
  v1::ErrorDetail detail = DetailOf(opposite.status);
  CHECK(detail.reason() == v1::AIRFLOW_MISMATCH);
  CHECK(detail.metadata().at("device_id") == device);

  req.set_airflow(v1::AIRFLOW_FRONT_TO_REAR);
  REQUIRE(testing::Invoke(*w.inventory, &IS::UpdateRack, w.op, req, &rack).status.ok());
  CHECK(rack.airflow() == v1::AIRFLOW_FRONT_TO_REAR);

  req.clear_airflow();
  req.set_cooling_budget_watts(1000);
  detail = DetailOf(testing::Invoke(*w.inventory, &IS::UpdateRack, w.op, req, &rack).status);
  CHECK(detail.reason() == v1::COOLING_BUDGET_EXCEEDED);
  CHECK(detail.metadata().at("used_watts") == "1500");
  req.set_cooling_budget_watts(2000);
  REQUIRE(testing::Invoke(*w.inventory, &IS::UpdateRack, w.op, req, &rack).status.ok());
  CHECK(rack.cooling_budget_watts() == 2000);
  CHECK(rack.airflow() == v1::AIRFLOW_FRONT_TO_REAR);  // unset: unchanged

  // AIRFLOW_UNSPECIFIED set: none; a device airflow is not a rack's.
  req.clear_cooling_budget_watts();
  req.set_airflow(v1::AIRFLOW_UNSPECIFIED);
  REQUIRE(testing::Invoke(*w.inventory, &IS::UpdateRack, w.op, req, &rack).status.ok());
  CHECK(rack.airflow() == v1::AIRFLOW_UNSPECIFIED);
  req.set_airflow(v1::AIRFLOW_PASSIVE);
  CHECK(DetailOf(testing::Invoke(*w.inventory, &IS::UpdateRack, w.op, req, &rack).status)
            .metadata()
            .at("field") == "airflow");

  // A device's power ports and airflow are forgotten explicitly.
  v1::UpdateDeviceRequest forget;
  forget.set_device_id(device);
  forget.set_power_port_count_unknown(true);
  forget.set_airflow_unknown(true);
  v1::Device updated;
  REQUIRE(testing::Invoke(*w.inventory, &IS::UpdateDevice, w.op, forget, &updated).status.ok());
  CHECK_FALSE(updated.has_power_port_count());
  CHECK(updated.airflow() == v1::AIRFLOW_UNSPECIFIED);
}

TEST_CASE("a rack's switch ports and a device's network ports by speed: set, judged against "
          "the devices in the rack, read back and shown by GetRackCapacity") {
  World w;
  v1::RegisterDeviceRequest reg;
  reg.set_site_id(w.site_id);
  reg.set_vendor("Dell");
  reg.set_model("R650");
  reg.set_serial("P1");
  reg.set_height_units(1);
  reg.set_depth_class(v1::DEPTH_HALF);
  reg.set_initial_state(v1::PROCESS_NORMAL);
  reg.set_network_ports_known(true);
  v1::PortCount* need = reg.add_network_ports();
  need->set_speed("10g");
  need->set_count(2);
  v1::Device device;
  REQUIRE(testing::Invoke(*w.inventory, &IS::RegisterDevice, w.op, reg, &device).status.ok());
  REQUIRE(device.network_ports_known());
  REQUIRE(device.network_ports_size() == 1);
  CHECK(device.network_ports(0).speed() == "10g");
  CHECK(device.network_ports(0).count() == 2);
  REQUIRE(w.Place(device.id(), 1).ok());

  v1::UpdateRackRequest req;
  req.set_rack_id(w.rack_id);
  req.set_set_switch_ports(true);
  v1::PortCount* offer = req.add_switch_ports();
  offer->set_speed("10g");
  offer->set_count(1);
  v1::RackRecord rack;
  v1::ErrorDetail detail =
      DetailOf(testing::Invoke(*w.inventory, &IS::UpdateRack, w.op, req, &rack).status);
  CHECK(detail.reason() == v1::PORTS_EXHAUSTED);
  CHECK(detail.metadata().at("speed") == "10g");
  CHECK(detail.metadata().at("used_ports") == "2");
  CHECK(detail.metadata().at("offered_ports") == "1");
  CHECK(detail.metadata().at("over_ports") == "1");
  offer->set_count(3);
  REQUIRE(testing::Invoke(*w.inventory, &IS::UpdateRack, w.op, req, &rack).status.ok());
  REQUIRE(rack.switch_ports_size() == 1);
  CHECK(rack.switch_ports(0).count() == 3);

  // Unset: unchanged.
  v1::UpdateRackRequest rename;
  rename.set_rack_id(w.rack_id);
  rename.set_name("R1b");
  REQUIRE(testing::Invoke(*w.inventory, &IS::UpdateRack, w.op, rename, &rack).status.ok());
  CHECK(rack.switch_ports_size() == 1);

  v1::GetRackCapacityRequest cap_req;
  cap_req.set_rack_id(w.rack_id);
  v1::RackCapacity capacity;
  REQUIRE(
      w.occupancy->GetRackCapacity(testing::ContextWithToken(w.op).get(), cap_req, &capacity).ok());
  REQUIRE(capacity.ports_size() == 4);  // every speed of the vocabulary, in its order
  CHECK(capacity.ports(1).speed() == "10g");
  CHECK(capacity.ports(1).offered() == 3);
  CHECK(capacity.ports(1).used() == 2);
  CHECK(capacity.ports(2).speed() == "25g");
  CHECK(capacity.ports(2).offered() == 0);

  // A second device of 2 x 10g does not fit; placing it is PORTS_EXHAUSTED.
  reg.set_serial("P2");
  v1::Device second;
  REQUIRE(testing::Invoke(*w.inventory, &IS::RegisterDevice, w.op, reg, &second).status.ok());
  detail = DetailOf(w.Place(second.id(), 2));
  CHECK(detail.reason() == v1::PORTS_EXHAUSTED);
  CHECK(detail.metadata().at("over_ports") == "1");

  // Its needs lowered through UpdateDevice, it fits; forgotten, it is PORTS_UNKNOWN.
  v1::UpdateDeviceRequest lower;
  lower.set_device_id(second.id());
  lower.set_set_network_ports(true);
  v1::PortCount* one = lower.add_network_ports();
  one->set_speed("10g");
  one->set_count(1);
  v1::Device updated;
  REQUIRE(testing::Invoke(*w.inventory, &IS::UpdateDevice, w.op, lower, &updated).status.ok());
  CHECK(updated.network_ports(0).count() == 1);
  v1::UpdateDeviceRequest forget;
  forget.set_device_id(second.id());
  forget.set_network_ports_unknown(true);
  REQUIRE(testing::Invoke(*w.inventory, &IS::UpdateDevice, w.op, forget, &updated).status.ok());
  CHECK_FALSE(updated.network_ports_known());
  detail = DetailOf(w.Place(second.id(), 2));
  CHECK(detail.reason() == v1::PORTS_UNKNOWN);
  CHECK(detail.metadata().at("missing") == "network_ports");
  REQUIRE(testing::Invoke(*w.inventory, &IS::UpdateDevice, w.op, lower, &updated).status.ok());
  REQUIRE(w.Place(second.id(), 2).ok());

  // An empty list records none: the rack has no ports rule.
  req.clear_switch_ports();
  REQUIRE(testing::Invoke(*w.inventory, &IS::UpdateRack, w.op, req, &rack).status.ok());
  CHECK(rack.switch_ports_size() == 0);
}

TEST_CASE("bad ports are INVALID_ARGUMENT naming the field, before anything is written") {
  World w;
  v1::RackRecord rack;
  v1::UpdateRackRequest req;
  req.set_rack_id(w.rack_id);
  req.set_set_switch_ports(true);
  v1::PortCount* offer = req.add_switch_ports();
  offer->set_speed("5g");
  offer->set_count(1);
  auto field_of = [&](const testing::Call& call) {
    CHECK(call.status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    return DetailOf(call.status).metadata().at("field");
  };
  CHECK(field_of(testing::Invoke(*w.inventory, &IS::UpdateRack, w.op, req, &rack)) ==
        "switch_ports[0].speed");
  offer->set_speed("10g");
  offer->set_count(-1);
  CHECK(field_of(testing::Invoke(*w.inventory, &IS::UpdateRack, w.op, req, &rack)).find("count") !=
        std::string::npos);
  offer->set_count(4);
  *req.add_switch_ports() = *offer;
  CHECK(field_of(testing::Invoke(*w.inventory, &IS::UpdateRack, w.op, req, &rack)) ==
        "switch_ports[1].speed");
  req.set_set_switch_ports(false);
  req.mutable_switch_ports()->RemoveLast();
  CHECK(field_of(testing::Invoke(*w.inventory, &IS::UpdateRack, w.op, req, &rack)) ==
        "set_switch_ports");

  v1::RegisterDeviceRequest reg;
  reg.set_site_id(w.site_id);
  reg.set_vendor("Dell");
  reg.set_model("R650");
  reg.set_height_units(1);
  reg.set_network_ports_known(true);
  v1::PortCount* need = reg.add_network_ports();
  need->set_speed("10g");
  need->set_count(2000);
  v1::Device device;
  CHECK(field_of(testing::Invoke(*w.inventory, &IS::RegisterDevice, w.op, reg, &device)) ==
        "network_ports[0].count");
  need->set_count(2);
  reg.set_network_ports_known(false);
  CHECK(field_of(testing::Invoke(*w.inventory, &IS::RegisterDevice, w.op, reg, &device)) ==
        "network_ports_known");
  CHECK(w.db.Count("SELECT count(*) FROM devices") == 0);
  CHECK(w.db.Scalar(absl::StrCat("SELECT coalesce(switch_ports::text, 'NULL') FROM racks "
                                 "WHERE id = '",
                                 w.rack_id, "'")) == "NULL");
}

TEST_CASE("bad feeds are INVALID_ARGUMENT naming the field, before anything is written") {
  World w;
  v1::RackRecord rack;
  auto field_of = [&](v1::SetPowerFeedsRequest req) {
    req.set_rack_id(w.rack_id);
    testing::Call call = testing::Invoke(*w.inventory, &IS::SetPowerFeeds, w.op, req, &rack);
    CHECK(call.status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    return DetailOf(call.status).metadata().at("field");
  };
  v1::SetPowerFeedsRequest req;
  *req.add_feeds() = World::Feed("A", 0, 16);
  CHECK(field_of(req) == "feeds[0].voltage");
  req.mutable_feeds(0)->set_voltage(1000000000);
  CHECK(field_of(req) == "feeds[0].voltage");
  req.mutable_feeds(0)->set_voltage(230);
  req.mutable_feeds(0)->set_phase(static_cast<v1::PowerPhase>(7));
  CHECK(field_of(req) == "feeds[0].phase");
  req.mutable_feeds(0)->set_phase(v1::POWER_PHASE_THREE);
  req.mutable_feeds(0)->set_name("");
  CHECK(field_of(req) == "feeds[0].name");
  req.mutable_feeds(0)->set_name("A");
  *req.add_feeds() = World::Feed("A", 230, 16);
  CHECK(field_of(req) == "feeds[1].name");
  req.clear_feeds();
  for (int i = 0; i < 1000; ++i) *req.add_feeds() = World::Feed(absl::StrCat("F", i), 230, 16);
  CHECK(field_of(req) == "feeds");
  CHECK(w.FeedNames().empty());
  // Three-phase: 400 V x 32 A x sqrt 3 x 80 % = 17,736 W, rounded down.
  req.clear_feeds();
  req.set_rack_id(w.rack_id);
  *req.add_feeds() = World::Feed("A", 400, 32);
  req.mutable_feeds(0)->set_phase(v1::POWER_PHASE_THREE);
  req.mutable_feeds(0)->set_max_utilization(0);
  REQUIRE(testing::Invoke(*w.inventory, &IS::SetPowerFeeds, w.op, req, &rack).status.ok());
  CHECK(rack.power_feeds(0).available_watts() == 17736);
}

}  // namespace
}  // namespace dcl

namespace dcl {
namespace {

TEST_CASE("a placed device's airflow is judged against its rack when it changes") {
  World w;
  v1::UpdateRackRequest rack_req;
  rack_req.set_rack_id(w.rack_id);
  rack_req.set_airflow(v1::AIRFLOW_FRONT_TO_REAR);
  v1::RackRecord rack;
  REQUIRE(testing::Invoke(*w.inventory, &IS::UpdateRack, w.op, rack_req, &rack).status.ok());
  const std::string device = w.Device(300, 2, v1::AIRFLOW_FRONT_TO_REAR, "D1");
  REQUIRE(w.Place(device, 1).ok());

  v1::UpdateDeviceRequest req;
  req.set_device_id(device);
  v1::Device updated;
  req.set_airflow(v1::AIRFLOW_REAR_TO_FRONT);
  v1::ErrorDetail detail =
      DetailOf(testing::Invoke(*w.inventory, &IS::UpdateDevice, w.op, req, &updated).status);
  CHECK(detail.reason() == v1::AIRFLOW_MISMATCH);
  CHECK(detail.message() == absl::StrCat("device ", device,
                                         " stands in rack R1 (airflow front-to-rear): its airflow "
                                         "cannot become rear-to-front there; move or release it "
                                         "first"));
  CHECK(detail.metadata().at("rack_airflow") == "front-to-rear");
  CHECK_FALSE(detail.metadata().at("booking_id").empty());

  v1::UpdateDeviceRequest forget;
  forget.set_device_id(device);
  forget.set_airflow_unknown(true);
  CHECK(DetailOf(testing::Invoke(*w.inventory, &IS::UpdateDevice, w.op, forget, &updated).status)
            .reason() == v1::AIRFLOW_UNKNOWN);
  // Nothing changed by the refusals; a sideways flow does not oppose the rack's.
  CHECK(w.db.Scalar(absl::StrCat("SELECT airflow FROM devices WHERE id = '", device, "'")) ==
        "front-to-rear");
  req.set_airflow(v1::AIRFLOW_LEFT_TO_RIGHT);
  REQUIRE(testing::Invoke(*w.inventory, &IS::UpdateDevice, w.op, req, &updated).status.ok());
  CHECK(updated.airflow() == v1::AIRFLOW_LEFT_TO_RIGHT);

  // Released, the device is no rack's business any more.
  v1::ReleaseBookingRequest release;
  release.set_booking_id(detail.metadata().at("booking_id"));
  release.set_reason("unracked");
  v1::Booking released;
  REQUIRE(
      w.occupancy->ReleaseBooking(testing::ContextWithToken(w.op).get(), release, &released).ok());
  req.set_airflow(v1::AIRFLOW_REAR_TO_FRONT);
  CHECK(testing::Invoke(*w.inventory, &IS::UpdateDevice, w.op, req, &updated).status.ok());
}

}  // namespace
}  // namespace dcl
