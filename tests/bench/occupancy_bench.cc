// occupancy_bench: concurrent PlaceDevice / ReleaseBooking through the occupancy service's own
// logic (OccupancyLogic → the booking write path → PostgreSQL), in two scenarios:
//   site       --clients clients over a site of --racks racks × 42 units
//   contended  --clients clients all on one rack
// Each client owns --devices_per_client devices (1–2 U, half/full/unknown depth) and, for
// --seconds, alternates between placing an unplaced one at a random rack, side and unit and
// releasing one it placed. Printed per scenario: placements/s, latency percentiles, the count of
// every outcome, and an audit that nothing is double-booked (checked on the booking headers'
// ranges, independently of the slot index that enforces it) and that the database holds exactly
// the bookings the clients believe they hold.
// Beside each scenario, the commit ceiling measured in the same run on the same cluster: one-row
// INSERTs, one per transaction (autocommit), at the same number of clients, each on its own
// connection, for the same duration; "ratio" = calls/s / INSERT tx/s, printed for PlaceDevice
// alone and for every write call (PlaceDevice + ReleaseBooking; each client alternates them),
// with the CPU per write call of this process and of the PostgreSQL cluster (tests/bench/cpu_meter.h).
//
// Run: DCL_BAZEL_OUTPUT_ROOT=/work/.bazel-me tests/bench/run_occupancy_bench [--seconds=N ...]
// (a throwaway PostgreSQL, optimised build), or against any migrated database:
//   deploy/pg-cluster init /tmp/pg 55999 && deploy/pg-cluster start /tmp/pg 55999
//   psql "host=127.0.0.1 port=55999 user=dcl dbname=postgres" -c "CREATE DATABASE bench"
//   bazel build //schema:migrate //tests/bench:occupancy_bench
//   bazel-bin/schema/migrate --database_url="host=127.0.0.1 port=55999 user=dcl dbname=bench"
//   bazel-bin/tests/bench/occupancy_bench --seconds=10
//       --database_url="host=127.0.0.1 port=55999 user=dcl dbname=bench"
// Exit status 1 when the audit fails.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <pqxx/pqxx>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dcl/v1/common.pb.h"
#include "services/common/auth.h"
#include "services/common/db.h"
#include "services/common/logging.h"
#include "services/common/server.h"
#include "services/common/status.h"
#include "services/occupancy/occupancy_logic.h"
#include "tests/bench/bench_csv.h"
#include "tests/bench/cpu_meter.h"
#include "tests/bench/insert_ceiling.h"

ABSL_FLAG(std::string, database_url, "", "PostgreSQL connection string (or DCL_DATABASE_URL)");
ABSL_FLAG(std::vector<std::string>, clients, {"32"},
          "concurrent clients; a comma-separated list runs both scenarios at each count");
ABSL_FLAG(int, racks, 50, "racks in the site scenario (42 units each)");
ABSL_FLAG(int, devices_per_client, 24, "devices each client places and releases");
ABSL_FLAG(int, seconds, 10, "duration of each scenario");

namespace dcl::occupancy {
namespace {

using Clock = std::chrono::steady_clock;

struct World {
  std::string org;
  std::string site;
  std::vector<std::string> racks;
  std::vector<std::vector<std::string>> devices;  // per client
};

std::string Q(pqxx::connection& c, const std::string& s) { return c.quote(s); }

World Seed(const std::string& url, const std::string& label, int racks, int clients,
           int devices_per_client) {
  pqxx::connection conn(url);
  pqxx::work tx(conn);
  World w;
  const std::string suffix =
      absl::StrCat(label, "-", ::getpid(), "-", Clock::now().time_since_epoch().count());
  w.org = tx.exec1("INSERT INTO organizations (name) VALUES (" + Q(conn, "bench-" + suffix) +
                   ") RETURNING id")[0]
              .as<std::string>();
  w.site =
      tx.exec1("INSERT INTO sites (org_id, name) VALUES ('" + w.org + "', 'S') RETURNING id")[0]
          .as<std::string>();
  for (int r = 0; r < racks; ++r) {
    w.racks.push_back(
        tx.exec1("INSERT INTO racks (org_id, site_id, name, first_unit, unit_count, numbering, "
                 "has_rear) VALUES ('" +
                 w.org + "', '" + w.site + "', 'R" + std::to_string(r) +
                 "', 1, 42, 'ascending', true) RETURNING id")[0]
            .as<std::string>());
  }
  const char* depths[] = {"half", "full", "unknown"};
  std::mt19937 rng(42);
  w.devices.resize(clients);
  for (int c = 0; c < clients; ++c) {
    for (int d = 0; d < devices_per_client; ++d) {
      const int height = 1 + static_cast<int>(rng() % 2);
      w.devices[c].push_back(
          tx.exec1("INSERT INTO devices (org_id, site_id, vendor, model, height_units, "
                   "depth_class) VALUES ('" +
                   w.org + "', '" + w.site + "', 'Dell', 'R650', " + std::to_string(height) +
                   ", '" + depths[rng() % 3] + "') RETURNING id")[0]
              .as<std::string>());
    }
  }
  tx.commit();
  return w;
}

struct ClientResult {
  std::vector<double> place_ms;
  std::vector<double> release_ms;
  std::map<std::string, int64_t> outcomes;  // "place OK", "place UNIT_OCCUPIED", ...
  std::set<std::string> believed_active;    // booking ids this client holds at the end
  int64_t placed = 0;
};

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5));
  return v[i];
}

struct Audit {
  int64_t duplicate_slots = 0;      // active slot rows sharing (rack, side, unit)
  int64_t overlapping_headers = 0;  // pairs of active bookings whose ranges and sides overlap
  int64_t devices_twice_placed = 0;
  int64_t inconsistent_headers = 0;  // active header without active slots, or the reverse
  int64_t active_bookings = 0;
  bool matches_clients = false;
  bool ok() const {
    return duplicate_slots == 0 && overlapping_headers == 0 && devices_twice_placed == 0 &&
           inconsistent_headers == 0 && matches_clients;
  }
};

Audit RunAudit(const std::string& url, const World& w, const std::set<std::string>& believed) {
  pqxx::connection conn(url);
  pqxx::work tx(conn);
  const std::string org = "'" + w.org + "'";
  Audit a;
  a.duplicate_slots = tx.exec1(
                            "SELECT count(*) FROM (SELECT s.rack_id, s.side, s.unit FROM "
                            "booking_slots s JOIN racks r "
                            "ON r.id = s.rack_id WHERE r.org_id = " +
                            org +
                            " AND s.released_at IS NULL "
                            "GROUP BY 1, 2, 3 HAVING count(*) > 1) d")[0]
                          .as<int64_t>();
  a.overlapping_headers = tx.exec1(
                                "SELECT count(*) FROM bookings x JOIN bookings y ON x.rack_id = "
                                "y.rack_id AND x.id < y.id "
                                "WHERE x.org_id = " +
                                org +
                                " AND x.released_at IS NULL AND y.released_at IS NULL "
                                "AND x.first_unit <= y.last_unit AND y.first_unit <= x.last_unit "
                                "AND ((x.front AND y.front) OR (x.rear AND y.rear))")[0]
                              .as<int64_t>();
  a.devices_twice_placed =
      tx.exec1(
            "SELECT count(*) FROM (SELECT device_id FROM bookings WHERE org_id = " + org +
            " AND kind = 'placement' AND released_at IS NULL GROUP BY 1 HAVING count(*) > 1) d")[0]
          .as<int64_t>();
  a.inconsistent_headers =
      tx.exec1(
            "SELECT count(*) FROM bookings b WHERE b.org_id = " + org +
            " AND "
            "(b.released_at IS NULL) <> EXISTS (SELECT 1 FROM booking_slots s WHERE s.booking_id = "
            "b.id AND s.released_at IS NULL)")[0]
          .as<int64_t>();
  std::set<std::string> active;
  for (const auto& row : tx.exec("SELECT id::text FROM bookings WHERE org_id = " + org +
                                 " AND released_at IS NULL")) {
    active.insert(row[0].as<std::string>());
  }
  a.active_bookings = static_cast<int64_t>(active.size());
  a.matches_clients = active == believed;
  return a;
}

bool RunScenario(const std::string& url, const std::string& name, int racks, int clients,
                 int devices_per_client, int seconds) {
  World w = Seed(url, name, racks, clients, devices_per_client);
  const double ceiling = bench::InsertCeiling(url, clients, seconds);
  DbOptions options;
  options.url = url;
  options.pool_size = clients;
  DbPool pool(options);
  OccupancyLogic logic(pool);
  Principal op;
  op.token_id = "00000000-0000-0000-0000-000000000000";
  op.org_id = w.org;
  op.role = Role::kDcOperator;
  op.module_enabled = true;

  std::vector<ClientResult> results(clients);
  std::vector<std::thread> threads;
  const bench::CpuSeconds cpu_before = bench::ReadCpuSeconds(url);
  const Clock::time_point start = Clock::now();
  const Clock::time_point end = start + std::chrono::seconds(seconds);
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      ClientResult& r = results[c];
      std::mt19937 rng(1000 + c);
      std::vector<std::string> booking_of(w.devices[c].size());
      while (Clock::now() < end) {
        std::vector<size_t> placed, free;
        for (size_t i = 0; i < booking_of.size(); ++i) {
          (booking_of[i].empty() ? free : placed).push_back(i);
        }
        const bool place = placed.empty() || (!free.empty() && rng() % 2 == 0);
        const Clock::time_point t0 = Clock::now();
        if (place) {
          const size_t i = free[rng() % free.size()];
          v1::PlaceDeviceRequest req;
          req.set_rack_id(w.racks[rng() % w.racks.size()]);
          req.set_device_id(w.devices[c][i]);
          req.set_side(rng() % 2 == 0 ? v1::SIDE_FRONT : v1::SIDE_REAR);
          req.set_unit(1 + static_cast<int>(rng() % 42));
          v1::Booking booking;
          absl::Status st = logic.PlaceDevice(op, req, &booking);
          r.place_ms.push_back(
              std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
          std::string outcome = absl::StrCat(
              "place ", v1::Reason_Name(st.ok() ? v1::REASON_UNSPECIFIED : ReasonOf(st)));
          // Who caught a collision: the planner's read, or the slot index (a real race).
          if (auto detail = GetErrorDetail(st); detail && detail->metadata().count("detected_by")) {
            absl::StrAppend(&outcome, " by ", detail->metadata().at("detected_by"));
          }
          ++r.outcomes[outcome];
          if (st.ok()) {
            booking_of[i] = booking.id();
            ++r.placed;
          }
        } else {
          const size_t i = placed[rng() % placed.size()];
          v1::ReleaseBookingRequest req;
          req.set_booking_id(booking_of[i]);
          v1::Booking booking;
          absl::Status st = logic.ReleaseBooking(op, req, &booking);
          r.release_ms.push_back(
              std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
          ++r.outcomes[absl::StrCat(
              "release ", v1::Reason_Name(st.ok() ? v1::REASON_UNSPECIFIED : ReasonOf(st)))];
          if (st.ok()) booking_of[i].clear();
        }
      }
      for (const std::string& id : booking_of) {
        if (!id.empty()) r.believed_active.insert(id);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  const bench::CpuSeconds cpu_after = bench::ReadCpuSeconds(url);

  std::vector<double> place_ms, release_ms;
  std::map<std::string, int64_t> outcomes;
  std::set<std::string> believed;
  int64_t placed = 0;
  for (const ClientResult& r : results) {
    place_ms.insert(place_ms.end(), r.place_ms.begin(), r.place_ms.end());
    release_ms.insert(release_ms.end(), r.release_ms.begin(), r.release_ms.end());
    for (const auto& [k, v] : r.outcomes) outcomes[k] += v;
    believed.insert(r.believed_active.begin(), r.believed_active.end());
    placed += r.placed;
  }
  const Audit audit = RunAudit(url, w, believed);

  std::printf("\n== %s: %d clients, %d rack(s) x 42 units, %.1f s ==\n", name.c_str(), clients,
              racks, elapsed);
  std::printf("%-34s %12s\n", "measure", "value");
  std::printf("%-34s %12zu\n", "PlaceDevice calls", place_ms.size());
  std::printf("%-34s %12lld\n", "placements (OK)", static_cast<long long>(placed));
  std::printf("%-34s %12.1f\n", "placements/s", placed / elapsed);
  std::printf("%-34s %12.1f\n", "PlaceDevice calls/s", place_ms.size() / elapsed);
  std::printf("%-34s %12.1f\n", "write calls/s (place + release)",
              (place_ms.size() + release_ms.size()) / elapsed);
  std::printf("%-34s %12.0f\n", "ceiling: one-row INSERT tx/s", ceiling);
  std::printf("%-34s %12.3f\n", "ratio: PlaceDevice calls/ceiling",
              place_ms.size() / elapsed / ceiling);
  std::printf("%-34s %12.3f\n", "ratio: write calls/ceiling",
              (place_ms.size() + release_ms.size()) / elapsed / ceiling);
  std::printf("%-34s %12.2f\n", "PlaceDevice p50 ms", Percentile(place_ms, 0.50));
  std::printf("%-34s %12.2f\n", "PlaceDevice p99 ms", Percentile(place_ms, 0.99));
  std::printf("%-34s %12zu\n", "ReleaseBooking calls", release_ms.size());
  std::printf("%-34s %12.2f\n", "ReleaseBooking p50 ms", Percentile(release_ms, 0.50));
  std::printf("%-34s %12.2f\n", "ReleaseBooking p99 ms", Percentile(release_ms, 0.99));
  const bench::CpuPerCall cpu = bench::PrintCpuPerCall(
      cpu_before, cpu_after, static_cast<long long>(place_ms.size() + release_ms.size()),
      "bench process (clients + domain logic; per write call)");
  const std::string scenario = absl::StrCat(name, ", ", racks, racks == 1 ? " rack" : " racks");
  bench::AppendCsv({"occupancy", scenario, "PlaceDevice", clients, place_ms.size() / elapsed,
                    Percentile(place_ms, 0.50), Percentile(place_ms, 0.95),
                    Percentile(place_ms, 0.99), ceiling, -1, -1});
  // CPU is measured over every write call (PlaceDevice and ReleaseBooking together).
  bench::AppendCsv({"occupancy", scenario, "write calls", clients,
                    (place_ms.size() + release_ms.size()) / elapsed, -1, -1, -1, ceiling,
                    cpu.process_ms, cpu.database_ms});
  for (const auto& [k, v] : outcomes) {
    std::string label = k;
    const std::string unspecified = "REASON_UNSPECIFIED";
    if (size_t at = label.find(unspecified); at != std::string::npos) {
      label.replace(at, unspecified.size(), "OK");
    }
    std::printf("%-34s %12lld\n", label.c_str(), static_cast<long long>(v));
  }
  std::printf("%-34s %12lld\n", "active bookings at end",
              static_cast<long long>(audit.active_bookings));
  std::printf("%-34s %12lld\n", "audit: duplicate slots",
              static_cast<long long>(audit.duplicate_slots));
  std::printf("%-34s %12lld\n", "audit: overlapping headers",
              static_cast<long long>(audit.overlapping_headers));
  std::printf("%-34s %12lld\n", "audit: devices placed twice",
              static_cast<long long>(audit.devices_twice_placed));
  std::printf("%-34s %12lld\n", "audit: header/slot mismatch",
              static_cast<long long>(audit.inconsistent_headers));
  std::printf("%-34s %12s\n", "audit: DB == clients' view", audit.matches_clients ? "yes" : "NO");
  std::printf("%-34s %12s\n", "audit", audit.ok() ? "PASS" : "FAIL");
  return audit.ok();
}

}  // namespace
}  // namespace dcl::occupancy

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  std::string url = absl::GetFlag(FLAGS_database_url);
  if (url.empty() && std::getenv("DCL_DATABASE_URL") != nullptr) {
    url = std::getenv("DCL_DATABASE_URL");
  }
  if (url.empty()) {
    std::fprintf(stderr, "occupancy_bench: --database_url or DCL_DATABASE_URL is required\n");
    return 2;
  }
  dcl::InitLogging("occupancy_bench", "text");
  dcl::TurnOffMutexDeadlockDetection();  // as the servers run
  const int devices = absl::GetFlag(FLAGS_devices_per_client);
  const int seconds = absl::GetFlag(FLAGS_seconds);
  std::vector<int> client_counts;
  for (const std::string& text : absl::GetFlag(FLAGS_clients)) {
    int n = 0;
    if (!absl::SimpleAtoi(text, &n) || n < 1 || n > 1024) {
      std::fprintf(stderr, "--clients: '%s' is not a client count (1..1024)\n", text.c_str());
      return 2;
    }
    client_counts.push_back(n);
  }
  bool ok = true;
  for (int clients : client_counts) {
    ok = dcl::occupancy::RunScenario(url, "site", absl::GetFlag(FLAGS_racks), clients, devices,
                                     seconds) && ok;
    ok = dcl::occupancy::RunScenario(url, "contended", 1, clients, devices, seconds) && ok;
  }
  return ok ? 0 : 1;
}
