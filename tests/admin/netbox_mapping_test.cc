// The NetBox mapping (pure): the saved API lists of tests/admin/netbox_fixtures parsed and
// mapped onto dcl's inventory (geometry, heights, depths, sides, states), what is skipped and
// why, what is refused and why, the overlap NetBox records, reservations over devices, request
// ids derived from NetBox ids, lists of several pages, and the input it refuses (an incomplete
// list, a missing field, every form factor NetBox does not define).
#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "dclctl/netbox/netbox_mapping.h"
#include "dclctl/format/rack_elevation.h"

namespace dcl::admin::netbox {
namespace {

std::map<std::string, std::string> Fixtures() {
  std::map<std::string, std::string> files;
  for (const char* name : kFiles) {
    std::ifstream in(std::string("tests/admin/netbox_fixtures/") + name);
    REQUIRE(in.good());
    std::ostringstream text;
    text << in.rdbuf();
    files[name] = text.str();
  }
  return files;
}

Plan FixturePlan(const std::map<std::string, std::string>& site_map = {}) {
  absl::StatusOr<Export> in = ParseExport(Fixtures());
  INFO(in.status().ToString());
  REQUIRE(in.ok());
  absl::StatusOr<Plan> plan = MakePlan(*in, site_map);
  REQUIRE(plan.ok());
  return *plan;
}

const DevicePlan* Find(const Plan& plan, int64_t netbox_id) {
  for (const DevicePlan& d : plan.devices) {
    if (d.netbox_id == netbox_id) return &d;
  }
  return nullptr;
}

std::string SkipReason(const Plan& plan, const std::string& what_prefix) {
  for (const Skipped& s : plan.skipped) {
    if (absl::StartsWith(s.what, what_prefix)) return s.reason;
  }
  return "";
}

std::string RefusalReason(const Plan& plan, const std::string& what_prefix) {
  for (const Skipped& s : plan.refused) {
    if (absl::StartsWith(s.what, what_prefix)) return s.reason;
  }
  return "";
}

TEST_CASE("fixtures: racks keep NetBox's geometry; open frames have no rear") {
  const Plan plan = FixturePlan();
  REQUIRE(plan.sites.size() == 1);
  CHECK(plan.sites[0].request.name() == "Frankfurt 1");
  REQUIRE(plan.racks.size() == 3);
  const v1::RackGeometry& a01 = plan.racks[0].request.geometry();
  CHECK(plan.racks[0].request.name() == "FRA1-A01");
  CHECK(a01.unit_count() == 42);
  CHECK(a01.first_unit() == 1);
  CHECK(a01.numbering() == v1::NUMBERING_ASCENDING);
  CHECK(a01.has_rear());
  const v1::RackGeometry& a02 = plan.racks[1].request.geometry();
  CHECK(a02.unit_count() == 47);
  CHECK(a02.numbering() == v1::NUMBERING_DESCENDING);
  const v1::RackGeometry& f01 = plan.racks[2].request.geometry();
  CHECK(f01.unit_count() == 24);
  CHECK_FALSE(f01.has_rear());
}

TEST_CASE("fixtures: devices with heights, depths, sides and states; the rest skipped with why") {
  const Plan plan = FixturePlan();
  CHECK(plan.devices.size() == 11);
  const DevicePlan* db = Find(plan, 103);
  REQUIRE(db != nullptr);
  CHECK(db->request.vendor() == "Dell");
  CHECK(db->request.model() == "PowerEdge R750");
  CHECK(db->request.serial() == "DL-0103");
  CHECK(db->request.height_units() == 2);
  CHECK(db->request.depth_class() == v1::DEPTH_FULL);
  CHECK(db->request.initial_state() == v1::PROCESS_NORMAL);
  CHECK(db->unit == 20);
  CHECK(db->side == v1::SIDE_FRONT);
  const DevicePlan* sw = Find(plan, 104);
  REQUIRE(sw != nullptr);
  CHECK(sw->request.depth_class() == v1::DEPTH_HALF);
  CHECK(sw->side == v1::SIDE_REAR);
  // "planned" and "staged" in NetBox: not ready for sale.
  CHECK(Find(plan, 106)->request.initial_state() == v1::PROCESS_STAGING);
  CHECK(Find(plan, 111)->request.initial_state() == v1::PROCESS_STAGING);
  // A descending rack: NetBox's position 1 is the chassis' lowest number, the top of its six
  // units; dcl places it by its physically lowest unit, U6.
  CHECK(Find(plan, 109)->lowest_number == 1);
  CHECK(Find(plan, 109)->unit == 6);
  CHECK(Find(plan, 111)->unit == 10);
  // An open frame has one face: NetBox's rear becomes dcl's front.
  CHECK(Find(plan, 114)->side == v1::SIDE_FRONT);

  REQUIRE(plan.skipped.size() == 4);
  CHECK(absl::StartsWith(SkipReason(plan, "device 107 (fra1-pdu-a)"), "0U device"));
  CHECK(absl::StartsWith(SkipReason(plan, "device 108 (fra1-console)"), "half-U device (u_height 0.5)"));
  CHECK(absl::StartsWith(SkipReason(plan, "device 110 (fra1-blade-01)"),
                         "child device in a chassis (parent device 109)"));
  CHECK(absl::StartsWith(SkipReason(plan, "device 112 (fra1-spare-01)"), "non-racked device"));
}

TEST_CASE("fixtures: the rack reservation becomes one blocking per run of units") {
  const Plan plan = FixturePlan();
  REQUIRE(plan.blocks.size() == 2);
  CHECK(plan.blocks[0].request.first_unit() == 30);
  CHECK(plan.blocks[0].request.last_unit() == 32);
  CHECK(plan.blocks[1].request.first_unit() == 35);
  CHECK(plan.blocks[1].request.last_unit() == 35);
  CHECK(plan.blocks[0].request.both_sides());
  CHECK(plan.blocks[0].request.reason() ==
        "NetBox rack reservation 201 for alice: customer X expansion");
}

TEST_CASE("fixtures: the overlap NetBox records is found before any write") {
  const std::map<int64_t, std::vector<v1::Slot>> overlaps = OverlappingPlacements(FixturePlan());
  REQUIRE(overlaps.size() == 1);
  REQUIRE(overlaps.count(106) == 1);
  CHECK(DescribeSlotRanges(overlaps.at(106)) == "front+rear U21");
}

TEST_CASE("request ids: derived from NetBox ids, stable, shaped as UUIDs") {
  const Plan first = FixturePlan();
  const Plan second = FixturePlan();
  CHECK(first.devices[0].request.request_id() == second.devices[0].request.request_id());
  CHECK(first.devices[0].request.request_id() != first.devices[1].request.request_id());
  const std::string id = DerivedRequestId("netbox device 101");
  CHECK(id.size() == 36);
  CHECK(id[8] == '-');
  CHECK(id[14] == '8');  // version 8: derived, not random
  CHECK(id == DerivedRequestId("netbox device 101"));
  // A site mapped to another dcl name is another request.
  const Plan mapped = FixturePlan({{"fra1", "FRA1"}});
  CHECK(mapped.sites[0].request.name() == "FRA1");
  CHECK(mapped.sites[0].request.request_id() != first.sites[0].request.request_id());
}

TEST_CASE("claimed slots: full depth takes both sides, half one, an open frame the front") {
  CHECK(DescribeSlotRanges(ClaimedSlots(9, 2, v1::SIDE_FRONT, v1::DEPTH_FULL, true)) ==
        "front+rear U9-U10");
  CHECK(DescribeSlotRanges(ClaimedSlots(9, 1, v1::SIDE_REAR, v1::DEPTH_HALF, true)) == "rear U9");
  CHECK(DescribeSlotRanges(ClaimedSlots(9, 1, v1::SIDE_FRONT, v1::DEPTH_UNKNOWN, false)) ==
        "front U9");
}

TEST_CASE("input refused: a page of a longer list, a missing field, a bad site map") {
  std::map<std::string, std::string> files = Fixtures();
  files["devices.json"] =
      R"({"count": 40, "next": "https://nb/api/dcim/devices/?limit=10&offset=10",
          "previous": null, "results": []})";
  absl::StatusOr<Export> paged = ParseExport(files);
  REQUIRE_FALSE(paged.ok());
  CHECK(absl::StrContains(paged.status().message(),
                          "devices.json: an incomplete list: \"next\" is set and no page follows"));

  files = Fixtures();
  files["racks.json"] = R"({"count": 1, "next": null, "results": [{"id": 5, "name": "R"}]})";
  absl::StatusOr<Export> no_site = ParseExport(files);
  REQUIRE_FALSE(no_site.ok());
  CHECK(absl::StrContains(no_site.status().message(), "racks.json results[0]: no \"site\""));

  files = Fixtures();
  files.erase("sites.json");
  CHECK_FALSE(ParseExport(files).ok());

  CHECK_FALSE(ParseSiteMap("fra1").ok());
  CHECK(ParseSiteMap("fra1=FRA1, ams=AMS2")->at("ams") == "AMS2");
}

TEST_CASE("older NetBox: `type` instead of form_factor, decimals as strings, bare ids") {
  std::map<std::string, std::string> files = Fixtures();
  files["racks.json"] = R"({"count": 1, "next": null, "results": [
      {"id": 7, "name": "OLD-1", "site": 1, "u_height": 12, "starting_unit": 0,
       "desc_units": false, "type": {"value": "4-post-frame", "label": "4-post frame"}}]})";
  files["devices.json"] = R"({"count": 1, "next": null, "results": [
      {"id": 9, "name": "old", "site": {"id": 1}, "device_type": {"id": 21},
       "rack": {"id": 7}, "position": "3.0", "face": "front", "parent_device": null,
       "serial": "S9", "status": "active"}]})";
  files["rack-reservations.json"] = R"({"count": 0, "next": null, "results": []})";
  absl::StatusOr<Export> in = ParseExport(files);
  INFO(in.status().ToString());
  REQUIRE(in.ok());
  absl::StatusOr<Plan> plan = MakePlan(*in, {});
  REQUIRE(plan.ok());
  REQUIRE(plan->racks.size() == 1);
  CHECK(plan->racks[0].request.geometry().first_unit() == 0);
  CHECK(plan->racks[0].request.geometry().has_rear());  // a 4-post frame has rear rails
  REQUIRE(plan->devices.size() == 1);
  CHECK(plan->devices[0].unit == 3);
}


// --- The five fixes of issue 22 (written against the importer before them: each was red) ----

// Rack 7 ("R7", `rack_fields` adds its height and form factor) with the given devices and
// rack reservations; the fixtures' site and device types.
std::map<std::string, std::string> OneRack(const std::string& rack_fields,
                                           const std::string& devices_results,
                                           const std::string& reservations_results = "") {
  std::map<std::string, std::string> files = Fixtures();
  files["racks.json"] = R"({"count": 1, "next": null, "previous": null, "results": [
      {"id": 7, "name": "R7", "site": {"id": 1}, "starting_unit": 1, "desc_units": false, )" +
                        rack_fields + "}]}";
  files["devices.json"] = R"({"count": null, "next": null, "previous": null, "results": [)" +
                          devices_results + "]}";
  files["rack-reservations.json"] =
      R"({"count": null, "next": null, "previous": null, "results": [)" + reservations_results +
      "]}";
  return files;
}

absl::StatusOr<Plan> PlanOf(const std::map<std::string, std::string>& files) {
  absl::StatusOr<Export> in = ParseExport(files);
  if (!in.ok()) return in.status();
  return MakePlan(*in, {});
}

// Device type 23 of the fixtures is a half-depth 1U switch, 21 a full-depth 1U server.
std::string DeviceJson(int id, int type, const std::string& position, const std::string& face) {
  return absl::StrCat(R"({"id": )", id, R"(, "name": "d)", id,
                      R"(", "site": {"id": 1}, "device_type": {"id": )", type,
                      R"(}, "rack": {"id": 7}, "position": )", position, R"(, "face": )", face,
                      R"(, "parent_device": null, "serial": "S)", id,
                      R"(", "status": "active"})");
}

TEST_CASE("fix 1: a 4-post frame has a rear; a half-depth switch on its rear face hangs at the "
          "rear") {
  absl::StatusOr<Plan> plan = PlanOf(OneRack(
      R"("u_height": 42, "form_factor": {"value": "4-post-frame", "label": "4-post frame"})",
      DeviceJson(1, 23, "30", R"({"value": "rear", "label": "Rear"})")));
  INFO(plan.status().ToString());
  REQUIRE(plan.ok());
  REQUIRE(plan->racks.size() == 1);
  CHECK(plan->racks[0].request.geometry().has_rear());
  REQUIRE(plan->devices.size() == 1);
  CHECK(plan->devices[0].side == v1::SIDE_REAR);
}

TEST_CASE("fix 1: NetBox before 4.1 (`type`): a 4-post frame has a rear too") {
  absl::StatusOr<Plan> plan =
      PlanOf(OneRack(R"("u_height": 42, "type": {"value": "4-post-frame", "label": "4-post frame"})", ""));
  REQUIRE(plan.ok());
  REQUIRE(plan->racks.size() == 1);
  CHECK(plan->racks[0].request.geometry().has_rear());
}

TEST_CASE("fix 2: a half-depth device with a position and no face is not given a side") {
  absl::StatusOr<Plan> plan = PlanOf(OneRack(
      R"("u_height": 42, "form_factor": {"value": "4-post-cabinet", "label": "4-post cabinet"})",
      DeviceJson(1, 23, "30", "null")));
  REQUIRE(plan.ok());
  // No placement planned for a side NetBox does not record: refused, naming the device.
  CHECK(plan->devices.empty());
  CHECK(absl::StrContains(RefusalReason(*plan, "device 1 (d1)"),
                          "half-depth device at position 30 without a face"));
}

TEST_CASE("face null: a full-depth device takes both faces, an open frame has one: no guess") {
  absl::StatusOr<Plan> plan = PlanOf(OneRack(
      R"("u_height": 42, "form_factor": {"value": "4-post-cabinet", "label": "4-post cabinet"})",
      DeviceJson(1, 21, "30", "null")));
  REQUIRE(plan.ok());
  REQUIRE(plan->devices.size() == 1);
  CHECK(plan->refused.empty());
  plan = PlanOf(OneRack(R"("u_height": 42, "form_factor": "2-post-frame")",
                        DeviceJson(1, 23, "30", "null")));
  REQUIRE(plan.ok());
  REQUIRE(plan->devices.size() == 1);
  CHECK(plan->devices[0].side == v1::SIDE_FRONT);
  // A face NetBox does not define is refused too.
  plan = PlanOf(OneRack(R"("u_height": 42, "form_factor": "4-post-cabinet")",
                        DeviceJson(1, 23, "30", R"("left")")));
  REQUIRE(plan.ok());
  CHECK(absl::StrContains(RefusalReason(*plan, "device 1"), "face \"left\""));
}

TEST_CASE("fix 3: a rack reservation over a device blocks the units that are free") {
  absl::StatusOr<Plan> plan = PlanOf(OneRack(
      R"("u_height": 42, "form_factor": {"value": "4-post-cabinet", "label": "4-post cabinet"})",
      DeviceJson(1, 21, "38", R"("front")"),
      R"({"id": 5, "rack": {"id": 7}, "units": [38, 39, 40], "description": "cust",
          "user": {"username": "bob"}})"));
  REQUIRE(plan.ok());
  REQUIRE(plan->blocks.size() == 1);
  CHECK(plan->blocks[0].request.first_unit() == 39);
  CHECK(plan->blocks[0].request.last_unit() == 40);
  CHECK(plan->blocks[0].request.both_sides());
  CHECK(plan->blocks[0].request.reason() == "NetBox rack reservation 5 for bob: cust");
  REQUIRE(plan->held.size() == 1);
  CHECK(plan->held[0].what == "rack reservation 5");
  CHECK(plan->held[0].reason == "front+rear U38 held by device 1 (d1)");
  CHECK(plan->refused.empty());
}

TEST_CASE("a reservation over a half-depth device blocks the other face of its unit") {
  absl::StatusOr<Plan> plan = PlanOf(OneRack(
      R"("u_height": 42, "form_factor": "4-post-cabinet")",
      DeviceJson(1, 23, "39", R"("front")"),
      R"({"id": 5, "rack": {"id": 7}, "units": [38, 39, 40]})"));
  REQUIRE(plan.ok());
  std::vector<std::string> blocks;
  for (const BlockPlan& b : plan->blocks) blocks.push_back(DescribeSlotRanges(BlockedSlots(b.request)));
  CHECK(blocks == std::vector<std::string>{"front+rear U38", "rear U39", "front+rear U40"});
  REQUIRE(plan->held.size() == 1);
  CHECK(plan->held[0].reason == "front U39 held by device 1 (d1)");
}

TEST_CASE("split by holders: every slot held leaves no blocking; a one-sided request stays one-sided") {
  v1::BlockUnitsRequest block;
  block.set_first_unit(5);
  block.set_last_unit(6);
  block.set_both_sides(true);
  Holders all = {{{v1::SIDE_FRONT, 5}, "x"}, {{v1::SIDE_REAR, 5}, "x"},
                 {{v1::SIDE_FRONT, 6}, "y"}, {{v1::SIDE_REAR, 6}, "y"}};
  SplitBlock split = SplitByHolders(block, true, all);
  CHECK(split.free.empty());
  CHECK(split.held == std::vector<std::string>{"front+rear U5 held by x", "front+rear U6 held by y"});
  block.set_both_sides(false);
  block.set_side(v1::SIDE_REAR);
  split = SplitByHolders(block, true, {{{v1::SIDE_FRONT, 5}, "x"}});
  REQUIRE(split.free.size() == 1);
  CHECK(DescribeSlotRanges(BlockedSlots(split.free[0])) == "rear U5-U6");
  CHECK(split.held.empty());
}

TEST_CASE("fix 4: a rack dcl cannot hold is not merely skipped") {
  absl::StatusOr<Plan> plan =
      PlanOf(OneRack(R"("form_factor": null, "u_height": 250)", DeviceJson(1, 21, "10",
                                                                        R"("front")")));
  REQUIRE(plan.ok());
  // Skipped is for what takes no units; this rack and its device take units.
  CHECK(SkipReason(*plan, "rack 7") == "");
  CHECK(SkipReason(*plan, "device 1") == "");
  // Refused instead, each named with why: the import exits 4.
  CHECK(RefusalReason(*plan, "rack 7 (R7)") == "u_height 250: dcl racks have 1 to 100 whole units");
  CHECK(RefusalReason(*plan, "device 1 (d1)") ==
        "its rack 7 is refused (u_height 250: dcl racks have 1 to 100 whole units)");
  CHECK(plan->racks.empty());
  CHECK(plan->devices.empty());
}

TEST_CASE("refused, not skipped: a device taller than 20 U, a fractional position, a position "
          "outside the rack, an unknown device type, a reservation of a refused rack") {
  absl::StatusOr<Plan> plan = PlanOf(OneRack(
      R"("u_height": 42, "form_factor": "4-post-cabinet")",
      DeviceJson(1, 21, "10.5", R"("front")") + "," + DeviceJson(2, 99, "3", R"("front")") +
          "," + DeviceJson(3, 22, "42", R"("front")")));
  REQUIRE(plan.ok());
  CHECK(plan->devices.empty());
  CHECK(RefusalReason(*plan, "device 1") == "position 10.5: dcl books whole rack units only");
  CHECK(absl::StartsWith(RefusalReason(*plan, "device 2"), "its device type 99 is not among"));
  CHECK(RefusalReason(*plan, "device 3") ==
        "position 42 with 2 units is outside its rack's units 1-42");
  plan = PlanOf(OneRack(R"("u_height": 42, "form_factor": "3-post-frame")", "",
                        R"({"id": 5, "rack": {"id": 7}, "units": [1]})"));
  REQUIRE(plan.ok());
  CHECK(RefusalReason(*plan, "rack 7") ==
        "form factor \"3-post-frame\" is not one NetBox defines: its faces are unknown");
  CHECK(absl::StartsWith(RefusalReason(*plan, "rack reservation 5"), "its rack 7 is refused"));
}

TEST_CASE("every form factor NetBox defines, and the ones it does not") {
  CHECK(RackHasRear("2-post-frame") == false);
  CHECK(RackHasRear("4-post-frame") == true);
  CHECK(RackHasRear("4-post-cabinet") == true);
  CHECK(RackHasRear("wall-frame") == false);
  CHECK(RackHasRear("wall-frame-vertical") == false);
  CHECK(RackHasRear("wall-cabinet") == true);
  CHECK(RackHasRear("wall-cabinet-vertical") == true);
  CHECK(RackHasRear("") == true);  // unknown: the expensive case
  CHECK_FALSE(RackHasRear("4-Post-Frame").has_value());
  CHECK_FALSE(RackHasRear("open").has_value());
}

TEST_CASE("fix 5: a saved list of several pages is read as one list") {
  std::map<std::string, std::string> files = OneRack(
      R"("u_height": 42, "form_factor": {"value": "4-post-cabinet", "label": "4-post cabinet"})", "");
  files["devices.json"] =
      R"({"count": 2, "next": "https://nb/api/dcim/devices/?limit=1&offset=1", "previous": null,
          "results": [)" + DeviceJson(1, 21, "10", R"("front")") + R"(]}
         {"count": 2, "next": null, "previous": "https://nb/api/dcim/devices/?limit=1",
          "results": [)" + DeviceJson(2, 21, "12", R"("front")") + "]}";
  absl::StatusOr<Plan> plan = PlanOf(files);
  INFO(plan.status().ToString());
  REQUIRE(plan.ok());
  CHECK(plan->devices.size() == 2);
}

TEST_CASE("pages: an array of pages works; a list that changed while paged, or ends early, is "
          "refused") {
  const std::string page1 =
      R"({"count": 2, "next": "https://nb/api/dcim/devices/?limit=1&offset=1", "previous": null,
          "results": [)" + DeviceJson(1, 21, "10", R"("front")") + "]}";
  const std::string page2 =
      R"({"count": 2, "next": null, "previous": "https://nb/api/dcim/devices/?limit=1",
          "results": [)" + DeviceJson(2, 21, "12", R"("front")") + "]}";
  std::map<std::string, std::string> files =
      OneRack(R"("u_height": 42, "form_factor": "4-post-cabinet")", "");
  files["devices.json"] = "[" + page1 + ",\n" + page2 + "]\n";
  absl::StatusOr<Plan> plan = PlanOf(files);
  INFO(plan.status().ToString());
  REQUIRE(plan.ok());
  CHECK(plan->devices.size() == 2);

  // The same object on two pages: rows were inserted while paging.
  files["devices.json"] = page1 + page1.substr(0, page1.find("\"next\"")) +
                          R"("next": null, "results": [)" +
                          DeviceJson(1, 21, "10", R"("front")") + "]}";
  CHECK(absl::StrContains(PlanOf(files).status().message(),
                          "devices.json page 2: object 1 a second time"));
  // Fewer rows than count.
  files["devices.json"] =
      R"({"count": 3, "next": null, "results": [)" + DeviceJson(1, 21, "10", R"("front")") + "]}";
  CHECK(absl::StrContains(PlanOf(files).status().message(),
                          "\"count\" is 3 but the pages hold 1 objects"));
  // A cut-off file, text after the array.
  CHECK_FALSE(SplitPages(page1.substr(0, 40)).ok());
  CHECK_FALSE(SplitPages("[" + page1 + "] x").ok());
  CHECK_FALSE(SplitPages("").ok());
  // Braces inside strings do not end a page.
  absl::StatusOr<std::vector<std::string>> tricky =
      SplitPages(R"({"a": "}{\"}"} {"b": [1, {"c": "]"}]})");
  REQUIRE(tricky.ok());
  CHECK(tricky->size() == 2);
}

TEST_CASE("a corrupt export: extreme ids, units and references are refused, never read as none") {
  std::map<std::string, std::string> files = Fixtures();
  files["racks.json"] = R"({"count": 1, "next": null, "results": [
      {"id": 1e300, "name": "R", "site": 1, "u_height": 42}]})";
  CHECK(absl::StrContains(ParseExport(files).status().message(),
                          "racks.json results[0]: \"id\" is not a whole number from 0 to 2^53"));
  files["racks.json"] = R"({"count": 1, "next": null, "results": [
      {"id": 7, "name": "R", "site": 1, "u_height": 42, "starting_unit": 1e19}]})";
  CHECK(absl::StrContains(ParseExport(files).status().message(),
                          "\"starting_unit\" is not a unit number"));
  files = OneRack(R"("u_height": 42, "form_factor": "4-post-cabinet")",
                  DeviceJson(1, 21, "3", R"("front")"));
  std::string devices = files["devices.json"];
  files["devices.json"] = devices.replace(devices.find(R"("rack": {"id": 7})"), 17,
                                          R"("rack": {"id": -7})");
  CHECK(absl::StrContains(ParseExport(files).status().message(),
                          "devices.json results[0]: \"rack\" is not a reference to an object id"));
  files = OneRack(R"("u_height": 42, "form_factor": "4-post-cabinet")", "",
                  R"({"id": 5, "rack": {"id": 7}, "units": [1, 4294967296]})");
  CHECK(absl::StrContains(ParseExport(files).status().message(), "a unit that is not a unit number"));
  // A position far outside any rack: refused, not cast.
  absl::StatusOr<Plan> far = PlanOf(OneRack(R"("u_height": 42, "form_factor": "4-post-cabinet")",
                                            DeviceJson(1, 21, "1e300", R"("front")")));
  REQUIRE(far.ok());
  CHECK(absl::StartsWith(RefusalReason(*far, "device 1"), "position 1e+300"));
}

// --- Capacity (issue 40): power feeds, power ports, weights, airflow --------------------------

TEST_CASE("fixtures: rack FRA1-F01's two active feeds come over 1:1, max_weight as its budget; "
          "a device's power is the sum of its ports' allocated_draw, its weight its type's in kg") {
  const Plan plan = FixturePlan();
  const RackPlan* f01 = nullptr;
  for (const RackPlan& r : plan.racks) {
    if (r.netbox_id == 13) f01 = &r;
  }
  REQUIRE(f01 != nullptr);
  REQUIRE(f01->feeds.size() == 2);
  CHECK(f01->feeds[0].name() == "A");
  CHECK(f01->feeds[0].voltage() == 230);
  CHECK(f01->feeds[0].amperage() == 16);
  CHECK(f01->feeds[0].phase() == v1::POWER_PHASE_SINGLE);
  CHECK(f01->feeds[0].max_utilization() == 80);
  CHECK(f01->feeds[1].name() == "B");
  CHECK(f01->weight_budget_kg == 500);
  CHECK(f01->airflow == v1::AIRFLOW_UNSPECIFIED);
  // Racks NetBox records no feed for keep none here (dcl's are left as they are).
  for (const RackPlan& r : plan.racks) {
    if (r.netbox_id != 13) CHECK(r.feeds.empty());
  }
  const DevicePlan* web = Find(plan, 114);  // two PSUs of 250 W allocated, 495 W maximum
  REQUIRE(web != nullptr);
  CHECK(web->request.power_draw_watts() == 500);
  CHECK(web->request.power_port_count() == 2);
  CHECK(web->request.weight_kg() == 18);  // 17.8 kg, rounded up
  CHECK(web->request.airflow() == v1::AIRFLOW_FRONT_TO_REAR);
  CHECK(Find(plan, 103)->request.weight_kg() == 29);  // 62 lb = 28.12 kg, rounded up
  CHECK(Find(plan, 113)->request.weight_kg() == 8);   // 7,400 g
  CHECK(Find(plan, 113)->request.power_port_count() == 1);
  CHECK(Find(plan, 113)->request.airflow() == v1::AIRFLOW_REAR_TO_FRONT);
  // A port without allocated_draw: the port count is known, the power is not, and the report
  // says which port.
  const DevicePlan* staged = Find(plan, 111);
  CHECK(staged->request.power_port_count() == 2);
  CHECK_FALSE(staged->request.has_power_draw_watts());
  std::string unknown;
  for (const Skipped& s : plan.unknown) {
    if (absl::StartsWith(s.what, "device 111")) unknown = s.reason;
  }
  CHECK(unknown == "power (power port 512 records no allocated_draw): left unknown in dcl");
  // No power port at all: power and ports unknown, never 0.
  const DevicePlan* bare = Find(plan, 115);
  CHECK_FALSE(bare->request.has_power_draw_watts());
  CHECK_FALSE(bare->request.has_power_port_count());
}

TEST_CASE("weights: g, kg, lb, oz to whole kg, a device's rounded up, a budget's down; any other "
          "unit, a negative or a huge weight refused") {
  CHECK(*Kilograms(17.8, "kg", true) == 18);
  CHECK(*Kilograms(17.8, "kg", false) == 17);
  CHECK(*Kilograms(18, "kg", true) == 18);
  CHECK(*Kilograms(1, "g", true) == 1);  // a gram is still weight: never 0
  CHECK(*Kilograms(1000, "g", true) == 1);
  CHECK(*Kilograms(2.20462262, "lb", true) == 1);  // one kilogram in pounds is one kilogram
  CHECK(*Kilograms(62, "lb", true) == 29);
  CHECK(*Kilograms(3000, "lb", false) == 1360);
  CHECK(*Kilograms(16, "oz", true) == 1);
  CHECK(*Kilograms(0, "kg", true) == 0);
  CHECK(absl::StrContains(Kilograms(5, "st", true).status().message(),
                          "weight_unit \"st\" is not one NetBox defines"));
  CHECK(absl::StrContains(Kilograms(5, "", true).status().message(), "without a weight_unit"));
  CHECK_FALSE(Kilograms(-1, "kg", true).ok());
  CHECK(absl::StrContains(Kilograms(1e12, "kg", true).status().message(), "above 1,000,000 kg"));
  CHECK_FALSE(Kilograms(std::nan(""), "kg", true).ok());
}

TEST_CASE("airflow: every DeviceAirflowChoices value maps, anything else is refused") {
  for (const char* v : {"front-to-rear", "rear-to-front", "left-to-right", "right-to-left",
                        "side-to-rear", "rear-to-side", "bottom-to-top", "top-to-bottom",
                        "passive", "mixed"}) {
    INFO(v);
    REQUIRE(AirflowOf(v).has_value());
    CHECK(*AirflowOf(v) != v1::AIRFLOW_UNSPECIFIED);
  }
  CHECK(*AirflowOf("") == v1::AIRFLOW_UNSPECIFIED);
  CHECK_FALSE(AirflowOf("front-to-back").has_value());
}

TEST_CASE("feeds: NetBox's figures 1:1; DC's magnitude; an unknown phase, a three-phase DC feed, "
          "out-of-range or fractional figures refused with the reason") {
  PowerFeed f;
  f.name = "A";
  f.status = "active";
  f.supply = "ac";
  f.phase = "three-phase";
  f.voltage = 400;
  f.amperage = 32;
  absl::StatusOr<v1::PowerFeed> feed = FeedOf(f);
  REQUIRE(feed.ok());
  CHECK(feed->phase() == v1::POWER_PHASE_THREE);
  CHECK(feed->max_utilization() == 80);  // null: NetBox's default
  f.supply = "dc";
  f.phase = "single-phase";
  f.voltage = -48;
  f.amperage = 100;
  f.max_utilization = 90;
  feed = FeedOf(f);
  REQUIRE(feed.ok());
  CHECK(feed->voltage() == 48);
  CHECK(feed->max_utilization() == 90);
  f.phase = "three-phase";
  CHECK(absl::StrContains(FeedOf(f).status().message(), "of a DC feed"));
  f.supply = "ac";
  f.voltage = 230;
  f.phase = "split-phase";
  CHECK(absl::StrContains(FeedOf(f).status().message(),
                          "phase \"split-phase\" is not single-phase or three-phase"));
  f.phase = "";
  CHECK_FALSE(FeedOf(f).ok());
  f.phase = "single-phase";
  f.voltage = -230;  // a negative AC voltage is not one
  CHECK(absl::StrContains(FeedOf(f).status().message(), "voltage -230"));
  f.voltage = 230;
  f.amperage = 65536;
  CHECK(absl::StrContains(FeedOf(f).status().message(), "amperage 65536"));
  f.amperage = 16.5;
  CHECK_FALSE(FeedOf(f).ok());
  f.amperage = 16;
  f.max_utilization = 150;
  CHECK(absl::StrContains(FeedOf(f).status().message(), "max_utilization 150"));
  f.max_utilization = 80;
  f.supply = "battery";
  CHECK(absl::StrContains(FeedOf(f).status().message(), "supply \"battery\""));
}

TEST_CASE("power ports: the sum of allocated_draw; maximum_draw not counted; a negative, "
          "fractional or huge draw, or 17 ports, refused") {
  PowerPort a{1, 9, 200.0, 495.0}, b{2, 9, 250.0, std::nullopt}, none{3, 9, std::nullopt, 495.0};
  absl::StatusOr<DevicePower> p = PowerOf({&a, &b});
  REQUIRE(p.ok());
  CHECK(p->ports == 2);
  CHECK(*p->allocated_watts == 450);
  p = PowerOf({&a, &none});
  REQUIRE(p.ok());
  CHECK(p->ports == 2);
  CHECK_FALSE(p->allocated_watts.has_value());
  CHECK(p->unknown_why == "power port 3 records no allocated_draw");
  PowerPort negative{4, 9, -200.0, std::nullopt};
  CHECK(absl::StrContains(PowerOf({&negative}).status().message(),
                          "power port 4: allocated_draw -200 is not 0 to 1,000,000 whole watts"));
  PowerPort huge{5, 9, 9.3e18, std::nullopt};
  CHECK_FALSE(PowerOf({&huge}).ok());
  PowerPort bad_max{6, 9, 100.0, -1.0};
  CHECK(absl::StrContains(PowerOf({&bad_max}).status().message(), "maximum_draw -1"));
  PowerPort big{7, 9, 600000.0, std::nullopt}, big2{8, 9, 600000.0, std::nullopt};
  CHECK(absl::StrContains(PowerOf({&big, &big2}).status().message(), "add up to 1200000 W"));
  std::vector<const PowerPort*> many(17, &a);
  CHECK(absl::StrContains(PowerOf(many).status().message(), "17 power ports"));
}

// The fixtures with the power lists replaced (rack 7 of OneRack, fed from panel 301 at site 1).
std::map<std::string, std::string> WithPower(std::map<std::string, std::string> files,
                                             const std::string& panels, const std::string& feeds,
                                             const std::string& ports) {
  files["power-panels.json"] = R"({"count": null, "next": null, "results": [)" + panels + "]}";
  files["power-feeds.json"] = R"({"count": null, "next": null, "results": [)" + feeds + "]}";
  files["power-ports.json"] = R"({"count": null, "next": null, "results": [)" + ports + "]}";
  return files;
}

std::string FeedJson(int id, int panel, const std::string& rack, const std::string& name,
                     const std::string& extra = "") {
  return absl::StrCat(R"({"id": )", id, R"(, "power_panel": {"id": )", panel, R"(}, "rack": )",
                      rack, R"(, "name": ")", name,
                      R"(", "status": "active", "supply": "ac", "phase": "single-phase",
                          "voltage": 230, "amperage": 16, "max_utilization": 80)",
                      extra, "}");
}

const char* kPanels = R"({"id": 301, "site": {"id": 1}, "name": "PP-1"},
                         {"id": 302, "site": {"id": 1}, "name": "PP-2"},
                         {"id": 309, "site": {"id": 9}, "name": "elsewhere"})";

TEST_CASE("feeds: a rack's feed of another site, of an unread panel, or with an unknown phase "
          "refuses the rack and its devices, nothing of it planned; inactive and rackless feeds "
          "are skipped; one name from two panels is told apart by the panel") {
  const std::string rack = R"("u_height": 42, "form_factor": "4-post-cabinet")";
  const std::string device = DeviceJson(1, 21, "3", R"("front")");
  auto plan_with = [&](const std::string& feeds) {
    absl::StatusOr<Plan> plan = PlanOf(WithPower(OneRack(rack, device), kPanels, feeds, ""));
    INFO(plan.status().ToString());
    REQUIRE(plan.ok());
    return *plan;
  };
  Plan plan = plan_with(FeedJson(1, 301, R"({"id": 7})", "A") + "," +
                        FeedJson(2, 309, R"({"id": 7})", "B"));
  CHECK(plan.racks.empty());
  CHECK(plan.devices.empty());
  CHECK(RefusalReason(plan, "rack 7 (R7)") ==
        "power feed 2 (B): its power panel 309 (elsewhere) is at site 9, its rack at site 1: "
        "another site's feed");
  CHECK(absl::StrContains(RefusalReason(plan, "device 1 (d1)"), "its rack 7 is refused"));

  plan = plan_with(FeedJson(1, 404, R"({"id": 7})", "A"));
  CHECK(absl::StrContains(RefusalReason(plan, "rack 7"),
                          "its power panel 404 is not among the panels read"));

  plan = plan_with(absl::StrCat(R"({"id": 1, "power_panel": {"id": 301}, "rack": {"id": 7},
      "name": "A", "status": "active", "supply": "ac", "phase": "two-phase", "voltage": 230,
      "amperage": 16, "max_utilization": 80})"));
  CHECK(absl::StrContains(RefusalReason(plan, "rack 7"), "phase \"two-phase\""));

  plan = plan_with(FeedJson(1, 301, R"({"id": 7})", "A") + "," +
                   FeedJson(2, 302, R"({"id": 7})", "A") + "," +
                   FeedJson(3, 301, "null", "C") + "," +
                   FeedJson(4, 301, R"({"id": 77})", "D") + "," +
                   R"({"id": 5, "power_panel": {"id": 301}, "rack": {"id": 7}, "name": "P",
                       "status": "planned", "supply": "ac", "phase": "single-phase",
                       "voltage": 230, "amperage": 16, "max_utilization": 80})");
  REQUIRE(plan.racks.size() == 1);
  REQUIRE(plan.racks[0].feeds.size() == 2);
  CHECK(plan.racks[0].feeds[0].name() == "PP-1/A");
  CHECK(plan.racks[0].feeds[1].name() == "PP-2/A");
  CHECK(SkipReason(plan, "power feed 3 (C)") == "feeds no rack: dcl keeps power feeds per rack");
  CHECK(SkipReason(plan, "power feed 4 (D)") == "its rack 77 is not among the racks read");
  CHECK(SkipReason(plan, "power feed 5 (P)") ==
        "status \"planned\": only active feeds carry power");
}

TEST_CASE("corrupt figures: a negative draw, a huge weight, an unknown unit or airflow refuse the "
          "device (or the rack) with the reason; a string where a number belongs ends the parse") {
  const std::string rack = R"("u_height": 42, "form_factor": "4-post-cabinet")";
  const std::string device = DeviceJson(1, 21, "3", R"("front")");
  absl::StatusOr<Plan> plan =
      PlanOf(WithPower(OneRack(rack, device), kPanels, "",
                       R"({"id": 9, "device": {"id": 1}, "allocated_draw": -450})"));
  REQUIRE(plan.ok());
  CHECK(plan->devices.empty());
  CHECK(RefusalReason(*plan, "device 1 (d1)") ==
        "power port 9: allocated_draw -450 is not 0 to 1,000,000 whole watts");

  std::map<std::string, std::string> files = OneRack(rack, device);
  std::string types = files["device-types.json"];
  const size_t at = types.find(R"("weight": 17.8)");  // device type 21
  REQUIRE(at != std::string::npos);
  files["device-types.json"] = types.replace(at, 14, R"("weight": 1e15)");
  plan = PlanOf(files);
  REQUIRE(plan.ok());
  CHECK(absl::StrContains(RefusalReason(*plan, "device 1"), "above 1,000,000 kg"));

  files = OneRack(rack, device);
  types = files["device-types.json"];
  files["device-types.json"] =
      types.replace(types.find("\"airflow\": {"), 11, "\"airflow\": \"sideways\", \"x\": ");
  plan = PlanOf(files);
  REQUIRE(plan.ok());
  CHECK(absl::StrContains(RefusalReason(*plan, "device 1"), "airflow \"sideways\""));

  plan = PlanOf(OneRack(R"("u_height": 42, "form_factor": "4-post-cabinet", "max_weight": 900,
                            "weight_unit": "stone")", device));
  REQUIRE(plan.ok());
  CHECK(RefusalReason(*plan, "rack 7") ==
        "max_weight: weight_unit \"stone\" is not one NetBox defines (kg, g, lb, oz)");
  plan = PlanOf(OneRack(R"("u_height": 42, "form_factor": "4-post-cabinet", "airflow": "passive")",
                        device));
  REQUIRE(plan.ok());
  CHECK(absl::StrContains(RefusalReason(*plan, "rack 7"), "is not a rack's"));
  plan = PlanOf(OneRack(R"("u_height": 42, "form_factor": "4-post-cabinet", "max_weight": 1000,
                            "weight_unit": "lb", "airflow": "rear-to-front")", device));
  REQUIRE(plan.ok());
  REQUIRE(plan->racks.size() == 1);
  CHECK(plan->racks[0].weight_budget_kg == 453);  // 453.59 kg, rounded down
  CHECK(plan->racks[0].airflow == v1::AIRFLOW_REAR_TO_FRONT);

  files = WithPower(OneRack(rack, device), kPanels, "",
                    R"({"id": 9, "device": {"id": 1}, "allocated_draw": "lots"})");
  CHECK(absl::StrContains(ParseExport(files).status().message(),
                          "power-ports.json results[0]: \"allocated_draw\" is not a number"));
}

TEST_CASE("a directory saved before the power lists were read: absent reads as empty, every "
          "device's power unknown, no feed") {
  std::map<std::string, std::string> files = Fixtures();
  files.erase("power-panels.json");
  files.erase("power-feeds.json");
  files.erase("power-ports.json");
  absl::StatusOr<Export> in = ParseExport(files);
  REQUIRE(in.ok());
  absl::StatusOr<Plan> plan = MakePlan(*in, {});
  REQUIRE(plan.ok());
  for (const RackPlan& r : plan->racks) CHECK(r.feeds.empty());
  for (const DevicePlan& d : plan->devices) CHECK_FALSE(d.request.has_power_draw_watts());
  CHECK(plan->devices.size() == 11);
}

}  // namespace
}  // namespace dcl::admin::netbox
