// The real dclctl binary against the real occupancy and inventory services (in process, on a
// test database): `import netbox` of tests/admin/netbox_fixtures — what exists afterwards
// (racks' geometry, placements at their units and sides, blockings for the rack reservation,
// the skipped and refused devices with their reasons), a second import that creates nothing,
// a --dry-run that writes nothing — and the device commands an operator types
// (register, set-state with a replayed request id, list, show, decommission refused while
// placed), rack show naming devices by vendor, model and serial, and the progress bar that
// only a terminal gets.
#include <unistd.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "dcl/v1/inventory.grpc.pb.h"
#include "dcl/v1/inventory.pb.h"
#include "dcl/v1/occupancy.grpc.pb.h"
#include "services/common/rpc_gate.h"
#include "services/inventory/inventory_logic.h"
#include "services/inventory/inventory_service.h"
#include "services/occupancy/occupancy_logic.h"
#include "services/occupancy/occupancy_service.h"
#include "tests/support/child_process.h"
#include "tests/support/fixtures.h"
#include "tests/support/grpc_harness.h"
#include "tests/support/test_db.h"
#include "tests/admin/dclctl_world.h"

namespace dcl {
namespace {

using testing::ChildProcess;

using World = testing::DclctlWorld;
using Result = testing::DclctlResult;

Result Run(const World& w, std::vector<std::string> args) {
  return testing::RunDclctl(w, std::move(args), std::chrono::seconds(60));
}

std::string FixtureDir() {
  char cwd[4096];
  REQUIRE(getcwd(cwd, sizeof cwd) != nullptr);
  return std::string(cwd) + "/tests/admin/netbox_fixtures";
}

// The active slots of the device with `serial`: "FRA1-A01 front20 front21 rear20 rear21".
std::string SlotsOf(const World& w, const std::string& serial) {
  return w.db.Scalar(
      "SELECT coalesce(min(r.name) || ' ' || string_agg(s.side || s.unit, ' ' ORDER BY s.side, "
      "s.unit), '') FROM booking_slots s JOIN bookings b ON b.id = s.booking_id "
      "JOIN devices d ON d.id = b.device_id JOIN racks r ON r.id = b.rack_id "
      "WHERE s.released_at IS NULL AND b.kind = 'placement' AND d.serial = '" + serial + "'");
}

std::string Count(const World& w, const std::string& from_where) {
  return w.db.Scalar("SELECT count(*) FROM " + from_where);
}

// created/unchanged of one kind in the --json report.
std::pair<int, int> Counts(const google::protobuf::Struct& report, const std::string& kind) {
  const auto& c = report.fields().at(kind).struct_value().fields();
  return {static_cast<int>(c.at("created").number_value()),
          static_cast<int>(c.at("unchanged").number_value())};
}

google::protobuf::Struct ParseReport(const std::string& json) {
  google::protobuf::Struct report;
  INFO(json);
  REQUIRE(google::protobuf::util::JsonStringToMessage(json, &report).ok());
  return report;
}

TEST_CASE("import netbox: everything NetBox records that dcl can hold, then a re-run changes "
          "nothing") {
  World w;
  Result first = Run(w, {"import", "netbox", "--dir", FixtureDir()});
  INFO(first.out << first.err);
  // One placement refused: exit 4.
  REQUIRE(first.exit == 4);
  CHECK(absl::StrContains(first.out, "skipped: 4"));
  CHECK(absl::StrContains(first.out, "device 107 (fra1-pdu-a): 0U device"));
  CHECK(absl::StrContains(first.out, "device 108 (fra1-console): half-U device (u_height 0.5)"));
  CHECK(absl::StrContains(first.out,
                          "device 110 (fra1-blade-01): child device in a chassis (parent device 109)"));
  CHECK(absl::StrContains(first.out, "device 112 (fra1-spare-01): non-racked device"));
  CHECK(absl::StrContains(first.out, "refused: 1"));
  CHECK(absl::StrContains(first.out, "device 106 (fra1-web-03): placement at rack 11 (FRA1-A01) "
                                     "front U21 refused: units taken: front+rear U21"));
  // Not a terminal: no progress bar in the output.
  CHECK_FALSE(absl::StrContains(first.out, "\r"));

  // Racks with NetBox's geometry; the 2-post frame has no rear.
  CHECK(w.db.Scalar("SELECT string_agg(name || ':' || first_unit || ':' || unit_count || ':' || "
                    "numbering || ':' || has_rear, ',' ORDER BY name) FROM racks") ==
        "FRA1-A01:1:42:ascending:true,FRA1-A02:1:47:descending:true,"
        "FRA1-F01:1:24:ascending:false");
  CHECK(w.db.Scalar("SELECT string_agg(name, ',') FROM sites") == "Frankfurt 1");
  // Eleven devices registered (the refused one too: it exists, it just stands nowhere).
  CHECK(Count(w, "devices") == "11");
  CHECK(w.db.Scalar("SELECT process_state FROM devices WHERE serial = 'DL-0111'") == "staging");
  CHECK(w.db.Scalar("SELECT process_state FROM devices WHERE serial = 'DL-0101'") == "normal");
  CHECK(SlotsOf(w, "DL-0103") == "FRA1-A01 front20 front21 rear20 rear21");
  CHECK(SlotsOf(w, "DL-0106") == "");
  CHECK(SlotsOf(w, "JN-0104") == "FRA1-A01 rear42");  // half depth, hung at the rear
  CHECK(SlotsOf(w, "JN-0105") == "FRA1-A01 front42");
  CHECK(SlotsOf(w, "DL-0111") == "FRA1-A02 front10 rear10");
  CHECK(SlotsOf(w, "DL-0114") == "FRA1-F01 front10");  // NetBox's rear of an open frame
  CHECK(SlotsOf(w, "SM-0109") ==
        "FRA1-A02 front1 front2 front3 front4 front5 front6 rear1 rear2 rear3 rear4 rear5 rear6");
  CHECK(Count(w, "bookings WHERE kind = 'placement' AND released_at IS NULL") == "10");
  // The rack reservation: U30-U32 and U35 of both sides, kept out of service.
  CHECK(w.db.Scalar("SELECT string_agg(first_unit || '-' || last_unit || ' ' || reason, ',' "
                    "ORDER BY first_unit) FROM bookings WHERE kind = 'blocking'") ==
        "30-32 NetBox rack reservation 201 for alice: customer X expansion,"
        "35-35 NetBox rack reservation 201 for alice: customer X expansion");
  CHECK(Count(w, "booking_slots s JOIN bookings b ON b.id = s.booking_id WHERE b.kind = "
                 "'blocking'") == "8");

  // The elevation names devices by vendor, model and serial.
  const std::string a01 = w.db.Scalar("SELECT id FROM racks WHERE name = 'FRA1-A01'");
  Result shown = Run(w, {"rack", "show", a01});
  INFO(shown.out);
  CHECK(absl::StrContains(shown.out, "Dell PowerEdge R750 DL-0103"));
  CHECK(absl::StrContains(shown.out, "blocking"));

  const std::string bookings_before = Count(w, "bookings");
  Result again = Run(w, {"import", "netbox", "--dir", FixtureDir(), "--json"});
  INFO(again.out << again.err);
  // The overlapping device is dcl's now (registered, placed nowhere): drift, exit 8.
  CHECK(again.exit == 8);
  const google::protobuf::Struct report = ParseReport(again.out);
  CHECK(Counts(report, "sites") == std::make_pair(0, 1));
  CHECK(Counts(report, "racks") == std::make_pair(0, 3));
  CHECK(Counts(report, "devices") == std::make_pair(0, 11));
  CHECK(Counts(report, "placements") == std::make_pair(0, 10));
  CHECK(Counts(report, "blockings") == std::make_pair(0, 2));
  CHECK(report.fields().at("skipped").list_value().values_size() == 4);
  CHECK(report.fields().at("refused").list_value().values_size() == 0);
  const auto& drift = report.fields().at("drift").list_value().values();
  REQUIRE(drift.size() == 1);
  CHECK(drift[0].struct_value().fields().at("what").string_value() == "device 106 (fra1-web-03)");
  CHECK(drift[0].struct_value().fields().at("reason").string_value() ==
        "NetBox: rack 11 (FRA1-A01) front+rear U21; dcl: placed nowhere");
  CHECK(Count(w, "devices") == "11");
  CHECK(Count(w, "racks") == "3");
  CHECK(Count(w, "bookings") == bookings_before);
}

TEST_CASE("import netbox --dry-run on an empty organization says what it would do, writes "
          "nothing") {
  World w;
  Result dry = Run(w, {"import", "netbox", "--dir", FixtureDir(), "--dry-run", "--json"});
  INFO(dry.out << dry.err);
  CHECK(dry.exit == 4);  // as the import would end: one placement would be refused
  const google::protobuf::Struct report = ParseReport(dry.out);
  CHECK(report.fields().at("dry_run").bool_value());
  CHECK(Counts(report, "sites") == std::make_pair(1, 0));
  CHECK(Counts(report, "racks") == std::make_pair(3, 0));
  CHECK(Counts(report, "devices") == std::make_pair(11, 0));
  CHECK(Counts(report, "placements") == std::make_pair(10, 0));
  CHECK(Counts(report, "blockings") == std::make_pair(2, 0));
  const auto& refused = report.fields().at("refused").list_value().values();
  REQUIRE(refused.size() == 1);
  CHECK(absl::StrContains(refused[0].struct_value().fields().at("reason").string_value(),
                          "would be refused: units taken: front+rear U21"));
  CHECK(Count(w, "sites") == "0");
  CHECK(Count(w, "racks") == "0");
  CHECK(Count(w, "devices") == "0");
  CHECK(Count(w, "bookings") == "0");
  CHECK(Count(w, "client_requests") == "0");

  Result human = Run(w, {"import", "netbox", "--dir", FixtureDir(), "--dry_run"});
  CHECK(absl::StrContains(human.out, "(dry run: nothing written)"));
  CHECK(absl::StrContains(human.out, "WOULD CREATE"));
}

TEST_CASE("import netbox on a terminal draws a progress bar before the report") {
  World w;
  // script(1) (util-linux, Essential in Debian) gives dclctl a pseudo-terminal as stdout.
  const std::string command =
      absl::StrCat(testing::RunfilesBinary("dclctl/dclctl"), " import netbox --dry-run --dir ",
                   FixtureDir(), " --target=", w.server.address(),
                   " --dcl_token_file=", testing::DclTokenFile(w.operator_token));
  ChildProcess script("/usr/bin/script", {"-qec", command, "/dev/null"}, true);
  const std::optional<int> exit = script.WaitForExit(std::chrono::seconds(60));
  INFO(script.Log() << script.Stderr());
  REQUIRE(exit.has_value());
  CHECK(*exit == 4);
  CHECK(absl::StrContains(script.Log(), "\r[####"));
  CHECK(absl::StrContains(script.Log(), "placement device 101 (fra1-web-01)"));
  CHECK(absl::StrContains(script.Log(), "(dry run: nothing written)"));
}

TEST_CASE("import netbox: unreadable input is a usage error (exit 2) and writes nothing") {
  World w;
  Result missing = Run(w, {"import", "netbox", "--dir", "/nonexistent"});
  CHECK(missing.exit == 2);
  CHECK(absl::StrContains(missing.err, "cannot read /nonexistent/sites.json"));
  Result bad_map = Run(w, {"import", "netbox", "--dir", FixtureDir(), "--site-map", "fra1"});
  CHECK(bad_map.exit == 2);
  CHECK(Count(w, "sites") == "0");
}

TEST_CASE("import netbox: a batch refused for one registration, and one refused for one "
          "placement on taken units, is sent again device by device: the report names exactly "
          "those devices with their reasons, and every other device is written") {
  World w;
  auto inventory = v1::InventoryService::NewStub(w.server.Channel());
  auto occupancy = v1::OccupancyService::NewStub(w.server.Channel());
  auto ctx = [&] { return testing::ContextWithToken(w.operator_token); };
  // An operator made NetBox's site and rack beforehand and blocked front U11 of the rack, where
  // NetBox places fra1-web-02 (device 102).
  v1::CreateSiteRequest site_req;
  site_req.set_name("Frankfurt 1");
  v1::Site site;
  REQUIRE(inventory->CreateSite(ctx().get(), site_req, &site).ok());
  v1::CreateRackRequest rack_req;
  rack_req.set_site_id(site.id());
  rack_req.set_name("FRA1-A01");
  rack_req.mutable_geometry()->set_first_unit(1);
  rack_req.mutable_geometry()->set_unit_count(42);
  rack_req.mutable_geometry()->set_numbering(v1::NUMBERING_ASCENDING);
  rack_req.mutable_geometry()->set_has_rear(true);
  v1::RackRecord rack;
  REQUIRE(inventory->CreateRack(ctx().get(), rack_req, &rack).ok());
  v1::BlockUnitsRequest block;
  block.set_rack_id(rack.id());
  block.set_side(v1::SIDE_FRONT);
  block.set_first_unit(11);
  block.set_last_unit(11);
  block.set_reason("cabling");
  v1::Booking blocked;
  REQUIRE(occupancy->BlockUnits(ctx().get(), block, &blocked).ok());
  // fra1-web-01's serial (device 101) belongs to a machine of this organization at another site.
  v1::CreateSiteRequest elsewhere_req;
  elsewhere_req.set_name("Elsewhere");
  v1::Site elsewhere;
  REQUIRE(inventory->CreateSite(ctx().get(), elsewhere_req, &elsewhere).ok());
  v1::RegisterDeviceRequest taken;
  taken.set_site_id(elsewhere.id());
  taken.set_vendor("Dell");
  taken.set_model("R650");
  taken.set_serial("DL-0101");
  taken.set_height_units(1);
  v1::Device taken_device;
  REQUIRE(inventory->RegisterDevice(ctx().get(), taken, &taken_device).ok());

  Result first = Run(w, {"import", "netbox", "--dir", FixtureDir()});
  INFO(first.out << first.err);
  REQUIRE(first.exit == 4);
  CHECK(absl::StrContains(first.out, "refused: 3"));
  CHECK(absl::StrContains(first.out, "device 101 (fra1-web-01): registration refused: "));
  CHECK(absl::StrContains(first.out, "device 102 (fra1-web-02): placement at rack 11 (FRA1-A01) "
                                     "front U11 refused: units taken: front U11"));
  CHECK(absl::StrContains(first.out, "device 106 (fra1-web-03): placement at rack 11 (FRA1-A01) "
                                     "front U21 refused: units taken: front+rear U21"));
  // Ten of NetBox's eleven registered (not fra1-web-01), beside the one at the other site.
  CHECK(Count(w, "devices") == "11");
  CHECK(Count(w, "devices WHERE serial = 'DL-0101'") == "1");
  CHECK(SlotsOf(w, "DL-0102") == "");
  CHECK(SlotsOf(w, "DL-0103") == "FRA1-A01 front20 front21 rear20 rear21");
  CHECK(SlotsOf(w, "DL-0111") == "FRA1-A02 front10 rear10");
}

TEST_CASE("device register, set-state replayed, list, show; decommission refused while placed") {
  World w;
  Result site = Run(w, {"site", "create", "--name", "FRA1", "--json"});
  INFO(site.err);
  REQUIRE(site.exit == 0);
  const std::string site_id = w.db.Scalar("SELECT id FROM sites WHERE name = 'FRA1'");
  Result rack = Run(w, {"rack", "create", "--site", site_id, "--name", "R1", "--height", "12",
                        "--descending"});
  INFO(rack.err);
  REQUIRE(rack.exit == 0);
  CHECK(absl::StrContains(rack.out, "12 units from U1, descending, front and rear"));

  Result registered = Run(w, {"device", "register", "--site", site_id, "--vendor", "Dell",
                              "--model", "R650", "--height", "1", "--depth", "full", "--serial",
                              "DL-1", "--power", "450", "--request_id", "ticket 42"});
  INFO(registered.out << registered.err);
  REQUIRE(registered.exit == 0);
  CHECK(absl::StrContains(registered.out, "state             staging"));
  CHECK(absl::StrContains(registered.out, "power draw        450 W"));
  CHECK(absl::StrContains(registered.out, "weight            unknown"));
  CHECK_FALSE(absl::StrContains(registered.out, "(replayed)"));
  // The same request id again: the first answer, said to be a replay; still one device.
  Result replayed = Run(w, {"device", "register", "--site", site_id, "--vendor", "Dell",
                            "--model", "R650", "--height", "1", "--depth", "full", "--serial",
                            "DL-1", "--power", "450", "--request_id", "ticket 42"});
  CHECK(replayed.exit == 0);
  CHECK(absl::StrContains(replayed.out, "(replayed)"));
  CHECK(Count(w, "devices") == "1");
  const std::string device = w.db.Scalar("SELECT id FROM devices WHERE serial = 'DL-1'");

  Result ready = Run(w, {"device", "set-state", device, "--state", "normal"});
  CHECK(ready.exit == 0);
  CHECK(absl::StrContains(ready.out, "state             normal"));
  Result moving = Run(w, {"device", "set-state", device, "--state", "moving"});
  CHECK(moving.exit != 0);

  Result listed = Run(w, {"device", "list", "--vendor", "Dell"});
  CHECK(listed.exit == 0);
  CHECK(absl::StrContains(listed.out, device));
  CHECK(absl::StrContains(listed.out, "DL-1"));
  CHECK(Run(w, {"device", "list", "--vendor", "HPE"}).out == "no devices\n");
  Result shown = Run(w, {"device", "show", device, "--json"});
  CHECK(absl::StrContains(shown.out, "\"serial\": \"DL-1\""));

  const std::string rack_id = w.db.Scalar("SELECT id FROM racks WHERE name = 'R1'");
  REQUIRE(Run(w, {"place", "--rack", rack_id, "--device", device, "--side", "front", "--unit",
                  "3"})
              .exit == 0);
  Result retire = Run(w, {"device", "decommission", device, "--reason", "end of life"});
  CHECK(retire.exit == 4);
  CHECK(absl::StrContains(retire.err, "placed"));
  Result missing = Run(w, {"device", "show", "00000000-0000-4000-8000-00000000dead"});
  CHECK(missing.exit == 3);
}

TEST_CASE("rack feeds, rack update and device register configure capacity; the rack's load "
          "refuses what it cannot take, naming the feed or device") {
  World w;
  REQUIRE(Run(w, {"site", "create", "--name", "FRA1"}).exit == 0);
  const std::string site_id = w.db.Scalar("SELECT id FROM sites WHERE name = 'FRA1'");
  REQUIRE(Run(w, {"rack", "create", "--site", site_id, "--name", "R1", "--height", "12"}).exit ==
          0);
  const std::string rack_id = w.db.Scalar("SELECT id FROM racks WHERE name = 'R1'");

  Result feeds = Run(w, {"rack", "feeds", rack_id, "A:230x16", "B:230Vx16A"});
  INFO(feeds.out << feeds.err);
  REQUIRE(feeds.exit == 0);
  CHECK(absl::StrContains(feeds.out, "feed A: 230 V x 16 A single-phase at 80 % = 2944 W"));
  CHECK(Count(w, "power_feeds") == "2");
  CHECK(Run(w, {"rack", "feeds", rack_id, "A:230"}).exit == 2);  // not a rating
  CHECK(Run(w, {"rack", "feeds", rack_id}).exit == 2);           // nothing, and no --none

  Result registered =
      Run(w, {"device",    "register",      "--site",   site_id,      "--vendor",      "Dell",
              "--model",   "R650",          "--height", "1",          "--depth",       "half",
              "--serial",  "DL-1",          "--power",  "1500",       "--power_ports", "2",
              "--airflow", "front-to-rear", "--ports",  "10g:2,1g:1", "--state",       "normal"});
  INFO(registered.out << registered.err);
  REQUIRE(registered.exit == 0);
  CHECK(absl::StrContains(registered.out, "network ports     1g 1, 10g 2"));
  CHECK(absl::StrContains(registered.out, "power ports       2"));
  CHECK(absl::StrContains(registered.out, "airflow           front-to-rear"));
  const std::string device = w.db.Scalar("SELECT id FROM devices WHERE serial = 'DL-1'");
  REQUIRE(Run(w, {"place", "--rack", rack_id, "--device", device, "--side", "front", "--unit",
                  "3"})
              .exit == 0);

  // 230 V x 4 A x 80 % = 736 W, below A's 750 W share.
  Result lowered = Run(w, {"rack", "feeds", rack_id, "A:230x4", "B:230x16"});
  CHECK(lowered.exit == 4);
  CHECK(absl::StrContains(lowered.err, "feed A of rack R1"));
  Result opposite = Run(w, {"rack", "update", rack_id, "--airflow", "rear-to-front"});
  CHECK(opposite.exit == 4);
  CHECK(absl::StrContains(opposite.err, device));
  Result cooled = Run(w, {"rack", "update", rack_id, "--airflow", "front-to-rear", "--cooling",
                          "4000"});
  INFO(cooled.err);
  CHECK(cooled.exit == 0);
  CHECK(absl::StrContains(cooled.out, "cooling budget  4000 W"));
  // Switch ports by speed (schema 0040): fewer 10g than the device needs are refused.
  Result few = Run(w, {"rack", "update", rack_id, "--ports", "10g:1,1g:4"});
  CHECK(few.exit == 4);
  CHECK(absl::StrContains(few.err, "10g"));
  CHECK(Run(w, {"rack", "update", rack_id, "--ports", "10g"}).exit == 2);  // no count
  Result ported = Run(w, {"rack", "update", rack_id, "--ports", "10g:48,1g:4"});
  INFO(ported.err);
  CHECK(ported.exit == 0);
  CHECK(absl::StrContains(ported.out, "switch ports    1g 4, 10g 48"));
  Result capacity = Run(w, {"rack", "capacity", rack_id});
  CHECK(absl::StrContains(capacity.out, "2 of 48 used, 46 free"));
  Result shown = Run(w, {"rack", "show", rack_id});
  CHECK(absl::StrContains(shown.out, "feed B: 230 V x 16 A single-phase at 80 % = 2944 W"));
  Result removed = Run(w, {"rack", "feeds", rack_id, "--none"});
  CHECK(removed.exit == 0);
  CHECK(Count(w, "power_feeds") == "0");
}

}  // namespace
}  // namespace dcl
