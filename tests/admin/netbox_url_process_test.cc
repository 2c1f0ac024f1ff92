// `dclctl import netbox --url` over HTTP against the stand-in NetBox (tests/admin/
// netbox_standin.py) and the real occupancy and inventory services on a test database: lists
// read across many pages, the token check, retries on 429/5xx, errors naming the URL on
// 403/404, a list that changes while it is read, the site filter — and nothing written unless
// every list was read and parsed. Also, over saved files, the refusals that end in exit 4 and
// the reserved units a device holds.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
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

std::string Cwd() {
  char cwd[4096];
  REQUIRE(getcwd(cwd, sizeof cwd) != nullptr);
  return cwd;
}

// Under Bazel's TEST_TMPDIR, which Bazel clears.
std::string TempDir() {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string dir = std::string(base != nullptr ? base : "/tmp") + "/dcl-netbox-test.XXXXXX";
  REQUIRE(mkdtemp(dir.data()) != nullptr);
  return dir;
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  REQUIRE(out.good());
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The stand-in NetBox on a free port of 127.0.0.1, with `args` (--dir or --generate, faults).
class StandIn {
 public:
  StandIn(const std::string& token, std::vector<std::string> args)
      : process_("/usr/bin/python3", WithScript(token, std::move(args)), true) {
    REQUIRE(testing::WaitUntil([&] { return absl::StrContains(process_.Log(), "port "); },
                               std::chrono::seconds(20)));
    const std::string log = process_.Log();
    port_ = std::atoi(log.c_str() + log.find("port ") + 5);
    REQUIRE(port_ > 0);
  }
  std::string url() const { return absl::StrCat("http://127.0.0.1:", port_); }

 private:
  static std::vector<std::string> WithScript(const std::string& token, std::vector<std::string> a) {
    a.insert(a.begin(), {Cwd() + "/tests/admin/netbox_standin.py", "--token", token});
    return a;
  }
  ChildProcess process_;
  int port_ = 0;
};

Result Run(const World& w, std::vector<std::string> args) {
  return testing::RunDclctl(w, std::move(args), std::chrono::seconds(120));
}

std::string Count(const World& w, const std::string& from_where) {
  return w.db.Scalar("SELECT count(*) FROM " + from_where);
}

const char* kV1Token = "0123456789abcdef0123456789abcdef01234567";
const char* kV2Token = "nbt_4F9DAouzURLb.zjebxBPzICiPbWz0Wtx0fTL7bCKXKGTYhNzkgC2S";

std::string TokenFile(const std::string& token) {
  const std::string path = TempDir() + "/token";
  WriteFile(path, std::string(token) + "\n");
  return path;
}

std::vector<std::string> UrlImport(const StandIn& netbox, const std::string& token_file) {
  return {"import", "netbox", "--url", netbox.url(), "--token-file", token_file,
          "--netbox-backoff-ms=10"};
}

TEST_CASE("--url: the fixtures over pages of 4 (an administrator's MAX_PAGE_SIZE) import as "
          "from the saved files, with a v2 token; a re-run creates nothing") {
  World w;
  StandIn netbox(kV2Token, {"--dir", Cwd() + "/tests/admin/netbox_fixtures", "--max-page-size",
                            "4"});
  Result first = Run(w, UrlImport(netbox, TokenFile(kV2Token)));
  INFO(first.out << first.err);
  CHECK(first.exit == 4);  // the overlap NetBox records, as with --dir
  CHECK(absl::StrContains(first.out, "NetBox import from " + netbox.url()));
  CHECK(Count(w, "devices") == "11");
  CHECK(Count(w, "racks") == "3");
  CHECK(Count(w, "bookings WHERE kind = 'placement' AND released_at IS NULL") == "10");
  CHECK(Count(w, "bookings WHERE kind = 'blocking' AND released_at IS NULL") == "2");
  const std::string bookings = Count(w, "bookings");
  Result again = Run(w, UrlImport(netbox, TokenFile(kV2Token)));
  INFO(again.out << again.err);
  CHECK(Count(w, "bookings") == bookings);
  CHECK(Count(w, "devices") == "11");
}

TEST_CASE("--url: a generated site of 3 racks and 100 devices over pages of 7") {
  World w;
  StandIn netbox(kV1Token, {"--generate", "3,100", "--max-page-size", "7"});
  Result first = Run(w, UrlImport(netbox, TokenFile(kV1Token)));
  INFO(first.out << first.err);
  CHECK(first.exit == 0);
  CHECK(Count(w, "devices") == "100");
  CHECK(Count(w, "bookings WHERE kind = 'placement' AND released_at IS NULL") == "100");
}

// A CA and a certificate for 127.0.0.1 it signed, made with openssl(1) in `dir`.
void MakeCertificates(const std::string& dir) {
  WriteFile(dir + "/san.ext", "subjectAltName=IP:127.0.0.1\n");
  const std::vector<std::vector<std::string>> steps = {
      {"req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", dir + "/ca.key", "-out",
       dir + "/ca.pem", "-days", "2", "-subj", "/CN=dcl test NetBox CA"},
      {"req", "-newkey", "rsa:2048", "-nodes", "-keyout", dir + "/server.key", "-out",
       dir + "/server.csr", "-subj", "/CN=127.0.0.1"},
      {"x509", "-req", "-in", dir + "/server.csr", "-CA", dir + "/ca.pem", "-CAkey",
       dir + "/ca.key", "-CAcreateserial", "-out", dir + "/server.pem", "-days", "2", "-extfile",
       dir + "/san.ext"}};
  for (const std::vector<std::string>& step : steps) {
    ChildProcess openssl("/usr/bin/openssl", step);
    INFO(openssl.Log());
    REQUIRE(openssl.WaitForExit(std::chrono::seconds(60)) == std::optional<int>(0));
  }
}

TEST_CASE("--url over HTTPS: verified against --ca; without it the certificate is refused, "
          "naming the URL, nothing written") {
  World w;
  const std::string dir = TempDir();
  MakeCertificates(dir);
  StandIn netbox(kV1Token, {"--generate", "1,5", "--tls-cert", dir + "/server.pem", "--tls-key",
                            dir + "/server.key"});
  const std::string https = "https" + netbox.url().substr(4);
  std::vector<std::string> args = {"import", "netbox", "--url", https, "--token-file",
                                   TokenFile(kV1Token), "--netbox-backoff-ms=10"};
  Result untrusted = Run(w, args);
  INFO(untrusted.out << untrusted.err);
  CHECK(untrusted.exit == 6);
  CHECK(absl::StrContains(untrusted.err, "GET " + https + "/api/dcim/sites/?limit=1000"));
  CHECK(Count(w, "sites") == "0");
  args.push_back("--ca=" + dir + "/ca.pem");
  Result trusted = Run(w, args);
  INFO(trusted.out << trusted.err);
  CHECK(trusted.exit == 0);
  CHECK(Count(w, "devices") == "5");
}

TEST_CASE("--url: a wrong token is refused naming the URL (exit 7), nothing written") {
  World w;
  StandIn netbox(kV1Token, {"--generate", "1,5"});
  Result r = Run(w, UrlImport(netbox, TokenFile("nbt_wrong.token")));
  INFO(r.out << r.err);
  CHECK(r.exit == 7);
  CHECK(absl::StrContains(r.err, "GET " + netbox.url() + "/api/dcim/sites/?limit=1000: HTTP 403"));
  CHECK(Count(w, "sites") == "0");
}

TEST_CASE("--url: 503 and 429 are retried; a 404 of the fourth list ends the import before "
          "anything is written") {
  World w;
  {
    StandIn netbox(kV1Token, {"--generate", "1,5", "--fail", "devices:503:2", "--fail",
                              "racks:429:1"});
    Result r = Run(w, UrlImport(netbox, TokenFile(kV1Token)));
    INFO(r.out << r.err);
    CHECK(r.exit == 0);
    CHECK(Count(w, "devices") == "5");
  }
  World fresh;
  StandIn netbox(kV1Token, {"--generate", "1,5", "--fail", "devices:404:99"});
  Result r = Run(fresh, UrlImport(netbox, TokenFile(kV1Token)));
  INFO(r.out << r.err);
  CHECK(r.exit == 3);
  CHECK(absl::StrContains(r.err, "GET " + netbox.url() + "/api/dcim/devices/?limit=1000: HTTP 404"));
  CHECK(Count(fresh, "sites") == "0");
  // Retries that never succeed: unavailable, exit 6.
  StandIn down(kV1Token, {"--generate", "1,5", "--fail", "sites:502:99"});
  Result d = Run(fresh, UrlImport(down, TokenFile(kV1Token)));
  INFO(d.out << d.err);
  CHECK(d.exit == 6);
  CHECK(absl::StrContains(d.err, "HTTP 502 after 5 attempts"));
}

TEST_CASE("--url: a list that changes while it is read is refused, nothing written") {
  World w;
  StandIn netbox(kV1Token, {"--generate", "2,30", "--max-page-size", "10", "--drop-after-page",
                            "devices:1"});
  Result r = Run(w, UrlImport(netbox, TokenFile(kV1Token)));
  INFO(r.out << r.err);
  CHECK(r.exit == 2);
  CHECK(absl::StrContains(r.err, "the list changed while it was read"));
  CHECK(Count(w, "sites") == "0");
}

TEST_CASE("--url --site: only the named sites; plain http off loopback and a missing token file "
          "are usage errors") {
  World w;
  StandIn netbox(kV1Token, {"--dir", Cwd() + "/tests/admin/netbox_fixtures"});
  std::vector<std::string> args = UrlImport(netbox, TokenFile(kV1Token));
  args.insert(args.end(), {"--site", "nowhere", "--site", "elsewhere"});
  Result none = Run(w, args);
  INFO(none.out << none.err);
  CHECK(none.exit == 0);
  CHECK(Count(w, "sites") == "0");
  CHECK(Count(w, "devices") == "0");
  Result clear = Run(w, {"import", "netbox", "--url", "http://netbox.example.net",
                         "--token-file", TokenFile(kV1Token)});
  CHECK(clear.exit == 2);
  CHECK(absl::StrContains(clear.err, "clear text"));
  Result no_token = Run(w, {"import", "netbox", "--url", netbox.url()});
  CHECK(no_token.exit == 2);
}

TEST_CASE("--url: pages beyond --netbox_max_bytes in all end the import naming the cap, nothing "
          "written") {
  World w;
  StandIn netbox(kV1Token, {"--dir", Cwd() + "/tests/admin/netbox_fixtures", "--max-page-size",
                            "4"});
  std::vector<std::string> args = UrlImport(netbox, TokenFile(kV1Token));
  args.push_back("--netbox_max_bytes=6000");  // the fixtures' pages: about 40 kB
  Result capped = Run(w, args);
  INFO(capped.out << capped.err);
  CHECK(capped.exit == 4);
  CHECK(absl::StrContains(capped.err, "exceed the cap of 6000 bytes in all (--netbox_max_bytes)"));
  CHECK(Count(w, "sites") == "0");
  CHECK(Count(w, "devices") == "0");
  // Under a cap the pages fit in, the import goes through.
  args.back() = "--netbox_max_bytes=1000000";
  Result fits = Run(w, args);
  INFO(fits.out << fits.err);
  CHECK(Count(w, "devices") == "11");
}

// The fixtures with one more rack and list entries: a directory of saved files.
std::string FixturesWith(const std::string& rack_json, const std::string& device_json,
                         const std::string& reservation_json,
                         const std::string& power_port_json = "") {
  const std::string dir = TempDir();
  const std::string from = Cwd() + "/tests/admin/netbox_fixtures/";
  for (const char* name : {"sites.json", "device-types.json", "power-panels.json",
                           "power-feeds.json"}) {
    WriteFile(dir + "/" + name, ReadFile(from + name));
  }
  auto with = [&](const char* name, const std::string& extra) {
    std::string text = ReadFile(from + name);
    if (!extra.empty()) {
      const size_t at = text.find("\"results\": [") + 12;
      text.insert(at, extra + ",");
      // count is checked against the rows: drop it (NetBox's cursor mode omits it too).
      const size_t count = text.find("\"count\": ");
      text.replace(count, text.find(',', count) - count, "\"count\": null");
    }
    WriteFile(dir + "/" + name, text);
  };
  with("racks.json", rack_json);
  with("devices.json", device_json);
  with("rack-reservations.json", reservation_json);
  with("power-ports.json", power_port_json);
  return dir;
}

TEST_CASE("--dir: a rack of 250 U and its device are refused by name (exit 4); a reservation "
          "over a device blocks the free units and names the held ones") {
  World w;
  const std::string dir = FixturesWith(
      R"({"id": 90, "name": "HUGE", "site": {"id": 1}, "u_height": 250, "starting_unit": 1,
          "desc_units": false, "form_factor": null})",
      R"({"id": 900, "name": "in-huge", "site": {"id": 1}, "device_type": {"id": 21},
          "rack": {"id": 90}, "position": 3, "face": "front", "parent_device": null,
          "serial": "HUGE-1", "status": "active"})",
      R"({"id": 290, "rack": {"id": 11}, "units": [20, 21, 22], "description": "over a server",
          "user": {"username": "carol"}})");
  Result r = Run(w, {"import", "netbox", "--dir", dir});
  INFO(r.out << r.err);
  CHECK(r.exit == 4);
  CHECK(absl::StrContains(r.out, "rack 90 (HUGE): u_height 250: dcl racks have 1 to 100 whole units"));
  CHECK(absl::StrContains(r.out, "device 900 (in-huge): its rack 90 is refused"));
  // Device 103 (2U, full depth) stands at U20-U21: U22 is blocked, U20-U21 are reported held.
  CHECK(absl::StrContains(r.out, "rack reservation 290: front+rear U20-U21 held by device 103"));
  CHECK(w.db.Scalar("SELECT string_agg(first_unit || '-' || last_unit, ',') FROM bookings "
                    "WHERE kind = 'blocking' AND reason LIKE '%reservation 290%'") == "22-22");
  CHECK(Count(w, "racks WHERE name = 'HUGE'") == "0");
}

TEST_CASE("re-sync is reconciliation: drift reported (exit 8), never moved or released; the "
          "units NetBox claims that dcl holds free are blocked; --dry-run writes nothing") {
  World w;
  const std::string dir = Cwd() + "/tests/admin/netbox_fixtures";
  REQUIRE(Run(w, {"import", "netbox", "--dir", dir}).exit == 4);  // the overlap of device 106
  const std::string a01 = w.db.Scalar("SELECT id FROM racks WHERE name = 'FRA1-A01'");
  const std::string site = w.db.Scalar("SELECT id FROM sites");
  const std::string web01 = w.db.Scalar("SELECT id FROM devices WHERE serial = 'DL-0101'");
  // In dcl, fra1-web-01 moves from U10 to U5 (released and placed again); a device NetBox does
  // not know goes into U3.
  const std::string booking = w.db.Scalar(
      "SELECT id FROM bookings WHERE device_id = '" + web01 + "' AND released_at IS NULL");
  REQUIRE(Run(w, {"release", booking, "--reason", "moved by hand"}).exit == 0);
  REQUIRE(Run(w, {"place", "--rack", a01, "--device", web01, "--side", "front", "--unit", "5"})
              .exit == 0);
  Result registered = Run(w, {"device", "register", "--site", site, "--vendor", "HP", "--model",
                              "DL360", "--height", "1", "--depth", "full", "--serial", "HP-1",
                              "--state", "normal", "--json"});
  REQUIRE(registered.exit == 0);
  const std::string hp = w.db.Scalar("SELECT id FROM devices WHERE serial = 'HP-1'");
  REQUIRE(Run(w, {"place", "--rack", a01, "--device", hp, "--side", "front", "--unit", "3"})
              .exit == 0);
  const std::string bookings = Count(w, "bookings");

  Result dry = Run(w, {"import", "netbox", "--dir", dir, "--dry-run"});
  INFO(dry.out << dry.err);
  CHECK(dry.exit == 8);
  CHECK(absl::StrContains(dry.out, "drift: 3"));
  CHECK(absl::StrContains(dry.out, "device 101 (fra1-web-01): NetBox: rack 11 (FRA1-A01) "
                                   "front+rear U10; dcl: rack 11 (FRA1-A01) front+rear U5"));
  CHECK(absl::StrContains(dry.out, "device 106 (fra1-web-03): NetBox: rack 11 (FRA1-A01) "
                                   "front+rear U21; dcl: placed nowhere"));
  CHECK(absl::StrContains(dry.out, "rack 11 (FRA1-A01): dcl places device " + hp));
  CHECK(absl::StrContains(dry.out, "at front+rear U3 where NetBox records no device"));
  CHECK(Count(w, "bookings") == bookings);

  Result real = Run(w, {"import", "netbox", "--dir", dir});
  INFO(real.out << real.err);
  CHECK(real.exit == 8);
  CHECK(absl::StrContains(real.out, "drift: 3"));
  // Nothing moved: web-01 stays at U5, the HP at U3; U10, which NetBox claims, is blocked.
  CHECK(w.db.Scalar("SELECT string_agg(s.side || s.unit, ' ' ORDER BY s.side, s.unit) FROM "
                    "booking_slots s JOIN bookings b ON b.id = s.booking_id WHERE b.device_id = '" +
                    web01 + "' AND s.released_at IS NULL") == "front5 rear5");
  CHECK(Count(w, "bookings WHERE device_id = '" + hp + "' AND released_at IS NULL") == "1");
  CHECK(w.db.Scalar("SELECT first_unit || '-' || last_unit || ' ' || reason FROM bookings WHERE "
                    "kind = 'blocking' AND reason LIKE 'NetBox device 101%'") ==
        "10-10 NetBox device 101 (fra1-web-01) claims these units, dcl holds them free (drift, "
        "import " + real.out.substr(real.out.find(", import ") + 9, 20) + ")");
  // A third run: the same drift, nothing more to block.
  const std::string after = Count(w, "bookings");
  Result third = Run(w, {"import", "netbox", "--dir", dir});
  CHECK(third.exit == 8);
  CHECK(Count(w, "bookings") == after);
}

TEST_CASE("capacity: NetBox's feeds, weights and draws come over; a device NetBox racks over "
          "its rack's feeds, and one whose draw NetBox does not record, are reported and left for "
          "a person, never booked; a re-run reports them again and writes nothing") {
  World w;
  // Rack 13 (FRA1-F01): feeds A and B, 230 V x 16 A at 80 % (2,944 W each), max_weight 500 kg;
  // fra1-edge-01 (150 W, one PSU) and fra1-web-05 (2 x 250 W) stand there. Device 190 adds
  // 2 x 1,400 W: with A lost, B would carry far above its 2,944 W. Device 191's second PSU
  // records no allocated_draw: its power is unknown.
  const std::string dir = FixturesWith(
      "",
      R"({"id": 190, "name": "fra1-gpu-01", "site": {"id": 1}, "device_type": {"id": 21},
          "rack": {"id": 13}, "position": 15, "face": "front", "parent_device": null,
          "serial": "GPU-190", "status": "active"},
         {"id": 191, "name": "fra1-odd-01", "site": {"id": 1}, "device_type": {"id": 21},
          "rack": {"id": 13}, "position": 17, "face": "front", "parent_device": null,
          "serial": "ODD-191", "status": "active"})",
      "",
      R"({"id": 990, "device": {"id": 190}, "allocated_draw": 1400, "maximum_draw": 1600},
         {"id": 991, "device": {"id": 190}, "allocated_draw": 1400, "maximum_draw": 1600},
         {"id": 992, "device": {"id": 191}, "allocated_draw": 300, "maximum_draw": 495},
         {"id": 993, "device": {"id": 191}, "allocated_draw": null, "maximum_draw": 495})");
  Result first = Run(w, {"import", "netbox", "--dir", dir});
  INFO(first.out << first.err);
  CHECK(first.exit == 4);
  const std::string f01 = w.db.Scalar("SELECT id FROM racks WHERE name = 'FRA1-F01'");
  // The rack's capacity, as NetBox records it.
  CHECK(w.db.Scalar("SELECT string_agg(name || ' ' || voltage || 'x' || amperage || ' ' || phase "
                    "|| ' ' || max_utilization || ' ' || available_watts, ', ' ORDER BY name) "
                    "FROM power_feeds WHERE rack_id = '" + f01 + "'") ==
        "A 230x16 single-phase 80 2944, B 230x16 single-phase 80 2944");
  CHECK(w.db.Scalar("SELECT weight_budget_kg FROM racks WHERE id = '" + f01 + "'") == "500");
  // The devices' figures: the sum of allocated_draw, the ports, the type's weight in kg.
  CHECK(w.db.Scalar("SELECT power_draw_watts || ' ' || power_port_count || ' ' || weight_kg || "
                    "' ' || airflow FROM devices WHERE serial = 'GPU-190'") ==
        "2800 2 18 front-to-rear");
  CHECK(w.db.Scalar("SELECT coalesce(power_draw_watts::text, 'unknown') || ' ' || power_port_count "
                    "FROM devices WHERE serial = 'ODD-191'") == "unknown 2");
  // The devices within the budget are placed; the two others are reported, not booked.
  CHECK(Count(w, "bookings b JOIN devices d ON d.id = b.device_id WHERE b.released_at IS NULL "
                 "AND d.serial IN ('JN-0113', 'DL-0114')") == "2");
  CHECK(Count(w, "bookings b JOIN devices d ON d.id = b.device_id WHERE d.serial IN "
                 "('GPU-190', 'ODD-191')") == "0");
  CHECK(absl::StrContains(first.out, "device 190 (fra1-gpu-01): placement at rack 13 (FRA1-F01) "
                                     "front U15 refused: FEED_REDUNDANCY_LOST: "));
  CHECK(absl::StrContains(first.out, "device 191 (fra1-odd-01): placement at rack 13 (FRA1-F01) "
                                     "front U17 refused: POWER_UNKNOWN: "));
  CHECK(absl::StrContains(first.out, "(left for a person)"));
  CHECK(absl::StrContains(first.out, "device 191 (fra1-odd-01): power (power port 993 records no "
                                     "allocated_draw): left unknown in dcl"));
  // Their units are out of sale, the blocking naming the refusal; no budget row is over or
  // drifted.
  CHECK(w.db.Scalar("SELECT first_unit || '-' || last_unit FROM bookings WHERE kind = "
                    "'blocking' AND reason LIKE 'NetBox device 190 (fra1-gpu-01) stands here; its "
                    "placement was refused, left for a person: FEED_REDUNDANCY_LOST: rack "
                    "FRA1-F01: with feed B lost, feed A would carry 3450 W of its 2944 W%'") ==
        "15-15");
  CHECK(Count(w, "dcl_rack_budget_drift()") == "0");

  // A re-run: the same two reported again, nothing tried, nothing written.
  const std::string bookings = Count(w, "bookings");
  const std::string ledger = Count(w, "client_requests");
  Result again = Run(w, {"import", "netbox", "--dir", dir});
  INFO(again.out << again.err);
  CHECK(again.exit == 4);
  CHECK(absl::StrContains(again.out, "device 190 (fra1-gpu-01): placement at rack 13 (FRA1-F01) "
                                     "front U15 refused: FEED_REDUNDANCY_LOST: "));
  CHECK(absl::StrContains(again.out, "device 191 (fra1-odd-01): placement at rack 13 (FRA1-F01) "
                                     "front U17 refused: POWER_UNKNOWN: "));
  CHECK(absl::StrContains(again.out, "(reported again, not retried: left for a person)"));
  CHECK_FALSE(absl::StrContains(again.out, "device 190 (fra1-gpu-01): NetBox: "));
  CHECK(Count(w, "bookings") == bookings);
  CHECK(Count(w, "client_requests") == ledger);
}

TEST_CASE("capacity: a rack whose feed belongs to another site's panel is refused with its "
          "devices; nothing of it is written") {
  World w;
  const std::string dir = FixturesWith("", "", "");
  // Panel 301 moves to a site NetBox's lists do not hold.
  std::string panels = ReadFile(dir + "/power-panels.json");
  const size_t at = panels.find("\"id\": 1,");
  REQUIRE(at != std::string::npos);
  WriteFile(dir + "/power-panels.json", panels.replace(at, 8, "\"id\": 2,"));
  Result r = Run(w, {"import", "netbox", "--dir", dir});
  INFO(r.out << r.err);
  CHECK(r.exit == 4);
  CHECK(absl::StrContains(r.out, "rack 13 (FRA1-F01): power feed 401 (A): its power panel 301 "
                                 "(PP-1) is at site 2, its rack at site 1: another site's feed"));
  CHECK(absl::StrContains(r.out, "device 114 (fra1-web-05): its rack 13 is refused"));
  CHECK(Count(w, "racks WHERE name = 'FRA1-F01'") == "0");
  CHECK(Count(w, "power_feeds") == "0");
}

TEST_CASE("capacity: a dry run says which racks' figures it would set and writes none; feeds "
          "dcl holds otherwise are drift, reported and kept, never overwritten") {
  World w;
  const std::string dir = Cwd() + "/tests/admin/netbox_fixtures";
  Result dry = Run(w, {"import", "netbox", "--dir", dir, "--dry-run", "--json"});
  INFO(dry.out << dry.err);
  google::protobuf::Struct report;
  REQUIRE(google::protobuf::util::JsonStringToMessage(dry.out, &report).ok());
  const auto& counts = report.fields().at("rack capacity").struct_value().fields();
  CHECK(counts.at("created").number_value() == 1);
  CHECK(counts.at("unchanged").number_value() == 0);
  CHECK(Count(w, "power_feeds") == "0");
  REQUIRE(Run(w, {"import", "netbox", "--dir", dir}).exit == 4);  // the overlap of device 106
  const std::string f01 = w.db.Scalar("SELECT id FROM racks WHERE name = 'FRA1-F01'");
  CHECK(Count(w, "power_feeds WHERE rack_id = '" + f01 + "'") == "2");
  // An operator gives FRA1-F01 stronger feeds in dcl; NetBox still records 16 A.
  Result feeds = Run(w, {"rack", "feeds", f01, "A:230x32", "B:230x32"});
  INFO(feeds.out << feeds.err);
  REQUIRE(feeds.exit == 0);
  Result again = Run(w, {"import", "netbox", "--dir", dir});
  INFO(again.out << again.err);
  CHECK(absl::StrContains(again.out, "rack 13 (FRA1-F01): power feeds: NetBox: A 230V x 16A 80%, "
                                     "B 230V x 16A 80%; dcl: A 230V x 32A 80%, B 230V x 32A 80%"));
  CHECK(w.db.Scalar("SELECT string_agg(amperage::text, ',' ORDER BY name) FROM power_feeds WHERE "
                    "rack_id = '" + f01 + "'") == "32,32");
}

TEST_CASE("capacity: feeds NetBox records below what a rack carries already are refused by the "
          "database and reported; no device is added to that rack, each left for a person, "
          "again on a re-run") {
  World w;
  // First without the power feeds: FRA1-F01 takes fra1-edge-01 and fra1-web-05 (650 W).
  const std::string before = FixturesWith("", "", "");
  std::remove((before + "/power-feeds.json").c_str());
  REQUIRE(Run(w, {"import", "netbox", "--dir", before}).exit == 4);  // the overlap of device 106
  REQUIRE(Count(w, "power_feeds") == "0");
  // Then NetBox records 230 V x 1 A feeds (184 W derated each) and a new device in the rack.
  const std::string after = FixturesWith(
      "",
      R"({"id": 190, "name": "fra1-gpu-01", "site": {"id": 1}, "device_type": {"id": 21},
          "rack": {"id": 13}, "position": 15, "face": "front", "parent_device": null,
          "serial": "GPU-190", "status": "active"})",
      "", R"({"id": 990, "device": {"id": 190}, "allocated_draw": 100})");
  std::string weak = ReadFile(after + "/power-feeds.json");
  for (size_t at = weak.find("\"amperage\": 16"); at != std::string::npos;
       at = weak.find("\"amperage\": 16", at)) {
    weak.replace(at, 14, "\"amperage\": 1");
  }
  WriteFile(after + "/power-feeds.json", weak);
  for (int run = 0; run < 2; ++run) {
    Result r = Run(w, {"import", "netbox", "--dir", after});
    INFO("run " << run << "\n" << r.out << r.err);
    CHECK(r.exit == 4);
    CHECK(absl::StrContains(r.out, "rack 13 (FRA1-F01): power feeds A 230V x 1A 80%, B 230V x "
                                   "1A 80% refused: "));
    CHECK(absl::StrContains(r.out, "device 190 (fra1-gpu-01): placement at rack 13 (FRA1-F01) "
                                   "front U15 "));
    CHECK(absl::StrContains(r.out, "its rack's power feeds A 230V x 1A 80%, B 230V x 1A 80% "
                                   "refused: "));
    CHECK(Count(w, "power_feeds") == "0");
    CHECK(Count(w, "bookings b JOIN devices d ON d.id = b.device_id WHERE d.serial = 'GPU-190' "
                   "AND b.kind <> 'blocking'") == "0");
    CHECK(Count(w, "bookings WHERE kind = 'blocking' AND reason LIKE 'NetBox device 190 %'") ==
          "1");
  }
}

}  // namespace
}  // namespace dcl
