// delivery_bench: PlanDelivery and ReserveDelivery through the occupancy service's own logic
// (OccupancyLogic → the site's reads + the pure planner; → the booking write path), on a seeded
// site of --racks racks × 42 units (a third of each rack already booked: placements of devices
// with figures, some without, blockings, rack reservations; budgets of 8–12 kW and 800–1,200 kg)
// and a delivery of --items registered devices (1–4 U, every depth, some without figures).
// Printed: PlanDelivery p50 / p90 / max over --plans calls (goal: p50 ≤ 250 ms for 500 items
// over 300 racks), how many items were planned, then one ReserveDelivery of the same request
// (planned again inside its transaction, one unit reservation per item, all or nothing) with its
// time (goal: ≤ 1 s), and an audit: exactly one active reservation per planned item, no slot
// booked twice. Not a timed test: run it on a quiet machine.
//
// Run: DCL_BAZEL_OUTPUT_ROOT=/work/.bazel-me tests/bench/run_delivery_bench [--racks=300
// --items=500 --plans=20] (a throwaway PostgreSQL, optimised build).
// Exit status 1 when the audit fails or the reservation is refused.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <pqxx/pqxx>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "services/common/auth.h"
#include "services/common/db.h"
#include "services/common/logging.h"
#include "services/common/server.h"
#include "services/common/status.h"
#include "services/occupancy/occupancy_logic.h"

ABSL_FLAG(std::string, database_url, "", "PostgreSQL connection string (or DCL_DATABASE_URL)");
ABSL_FLAG(int, racks, 300, "racks of the site (42 units each)");
ABSL_FLAG(int, items, 500, "devices in the delivery");
ABSL_FLAG(int, plans, 20, "PlanDelivery calls measured");

namespace dcl::occupancy {
namespace {

using Clock = std::chrono::steady_clock;

struct World {
  std::string org;
  std::string site;
  std::vector<std::string> delivery;  // device ids
};

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5))];
}

std::string Figure(std::mt19937& rng, int lo, int hi, int unknown_percent) {
  if (static_cast<int>(rng() % 100) < unknown_percent) return "NULL";
  return std::to_string(lo + static_cast<int>(rng() % (hi - lo + 1)));
}

World Seed(const std::string& url, int racks, int items) {
  pqxx::connection conn(url);
  pqxx::work tx(conn);
  World w;
  tx.exec0("UPDATE feature_settings SET enabled = true WHERE feature = 'datacenter'");
  w.org = tx.exec1(absl::StrCat("INSERT INTO organizations (name) VALUES ('delivery-bench-",
                                ::getpid(), "-", Clock::now().time_since_epoch().count(),
                                "') RETURNING id"))[0]
              .as<std::string>();
  tx.exec0(absl::StrCat("INSERT INTO organization_feature_settings (org_id, feature, enabled) "
                        "VALUES ('", w.org, "', 'datacenter', true)"));
  w.site = tx.exec1("INSERT INTO sites (org_id, name) VALUES ('" + w.org +
                    "', 'S') RETURNING id")[0]
               .as<std::string>();
  std::mt19937 rng(7);
  const char* depths[] = {"half", "full", "unknown"};
  for (int r = 0; r < racks; ++r) {
    const std::string rack =
        tx.exec1(absl::StrCat("INSERT INTO racks (org_id, site_id, name, first_unit, unit_count, "
                              "numbering, has_rear, power_budget_watts, weight_budget_kg) "
                              "VALUES ('",
                              w.org, "', '", w.site, "', 'R", 1000 + r,
                              "', 1, 42, 'ascending', true, ", 8000 + rng() % 4001, ", ",
                              800 + rng() % 401, ") RETURNING id"))[0]
            .as<std::string>();
    // About a third of the rack booked, from the bottom: mostly placements, a few blockings and
    // rack reservations (without figures: units only).
    int unit = 1;
    while (unit <= 14) {
      const int height = 1 + static_cast<int>(rng() % 2);
      const int what = static_cast<int>(rng() % 10);
      std::string kind = what < 8 ? "placement" : what == 8 ? "blocking" : "reservation";
      std::string device = "NULL";
      if (kind == "placement") {
        device = "'" +
                 tx.exec1(absl::StrCat("INSERT INTO devices (org_id, site_id, vendor, model, "
                                       "height_units, depth_class, power_draw_watts, weight_kg) "
                                       "VALUES ('",
                                       w.org, "', '", w.site, "', 'Dell', 'R650', ", height,
                                       ", 'full', ", Figure(rng, 150, 450, 3), ", ",
                                       Figure(rng, 10, 30, 3), ") RETURNING id"))[0]
                     .as<std::string>() +
                 "'";
      }
      const std::string booking =
          tx.exec1(absl::StrCat("INSERT INTO bookings (org_id, site_id, rack_id, kind, device_id, "
                                "front, rear, first_unit, last_unit, expires_at, created_by) "
                                "VALUES ('",
                                w.org, "', '", w.site, "', '", rack, "', '", kind, "', ", device,
                                ", true, true, ", unit, ", ", unit + height - 1, ", ",
                                kind == "reservation" ? "now() + interval '1 day'" : "NULL",
                                ", 'bench') RETURNING id"))[0]
              .as<std::string>();
      tx.exec0(absl::StrCat("INSERT INTO booking_slots (booking_id, rack_id, side, unit) "
                            "SELECT '",
                            booking, "', '", rack, "', s, u FROM unnest(ARRAY['front','rear']) s, "
                            "generate_series(", unit, ", ", unit + height - 1, ") u"));
      unit += height;
    }
  }
  for (int i = 0; i < items; ++i) {
    w.delivery.push_back(
        tx.exec1(absl::StrCat("INSERT INTO devices (org_id, site_id, vendor, model, height_units, "
                              "depth_class, power_draw_watts, weight_kg) VALUES ('",
                              w.org, "', '", w.site, "', 'Dell', 'R760', ", 1 + rng() % 4, ", '",
                              depths[rng() % 3], "', ", Figure(rng, 200, 900, 2), ", ",
                              Figure(rng, 15, 40, 2), ") RETURNING id"))[0]
            .as<std::string>());
  }
  tx.commit();
  return w;
}

int Run(const std::string& url) {
  const int racks = absl::GetFlag(FLAGS_racks);
  const int items = absl::GetFlag(FLAGS_items);
  const int plans = std::max(1, absl::GetFlag(FLAGS_plans));
  const Clock::time_point seed_start = Clock::now();
  const World w = Seed(url, racks, items);
  std::printf("seeded %d racks and a delivery of %d devices in %.1f s\n", racks, items,
              Ms(Clock::now() - seed_start) / 1000);
  DbOptions options;
  options.url = url;
  options.pool_size = 2;
  DbPool pool(options);
  OccupancyLogic logic(pool);
  Principal op;
  op.token_id = "00000000-0000-0000-0000-000000000000";
  op.org_id = w.org;
  op.role = Role::kDcOperator;
  op.module_enabled = true;

  v1::PlanDeliveryRequest req;
  req.set_site_id(w.site);
  for (const std::string& d : w.delivery) req.add_items()->set_device_id(d);
  std::vector<double> ms;
  v1::DeliveryPlan plan;
  for (int i = 0; i < plans; ++i) {
    plan.Clear();
    const Clock::time_point start = Clock::now();
    absl::Status st = logic.PlanDelivery(op, req, &plan);
    ms.push_back(Ms(Clock::now() - start));
    if (!st.ok()) {
      std::fprintf(stderr, "PlanDelivery failed: %s\n", st.ToString().c_str());
      return 1;
    }
  }
  std::printf("PlanDelivery (%d items, %d racks, %d calls): p50 %.1f ms, p90 %.1f ms, max %.1f ms "
              "(goal p50 <= 250 ms); %d planned, %d fit nowhere; strategy: %s\n",
              items, racks, plans, Percentile(ms, 0.5), Percentile(ms, 0.9), Percentile(ms, 1.0),
              plan.planned_size(), plan.unplaced_size(), plan.strategy().c_str());

  // Reserve what fits: the planned devices only, so that the reservation is not refused for the
  // ones that fit nowhere (a delivery is all or nothing).
  v1::ReserveDeliveryRequest reserve;
  reserve.set_ttl_seconds(3600);
  reserve.set_request_id(absl::StrCat("0b6a3c1e-1f4e-4c8e-9a61-", 100000000000 + ::getpid()));
  v1::PlanDeliveryRequest* again = reserve.mutable_plan_request();
  again->set_site_id(w.site);
  for (const v1::PlannedDeliveryItem& p : plan.planned()) again->add_items()->set_device_id(p.device_id());
  v1::DeliveryReservation reserved;
  const Clock::time_point start = Clock::now();
  absl::Status st = logic.ReserveDelivery(op, reserve, &reserved);
  const double reserve_ms = Ms(Clock::now() - start);
  if (!st.ok()) {
    std::fprintf(stderr, "ReserveDelivery failed: %s\n", st.ToString().c_str());
    return 1;
  }
  std::printf("ReserveDelivery (plan again + %d unit reservations, one transaction): %.1f ms "
              "(goal <= 1000 ms)\n",
              reserved.reservations_size(), reserve_ms);

  pqxx::connection conn(url);
  pqxx::nontransaction tx(conn);
  const int64_t active = tx.exec1("SELECT count(*) FROM bookings WHERE org_id = '" + w.org +
                                  "' AND kind = 'reservation' AND released_at IS NULL "
                                  "AND created_by <> 'bench'")[0]
                             .as<int64_t>();
  const int64_t doubled =
      tx.exec1("SELECT count(*) FROM (SELECT rack_id, side, unit FROM booking_slots "
               "WHERE released_at IS NULL GROUP BY 1, 2, 3 HAVING count(*) > 1) x")[0]
          .as<int64_t>();
  const bool ok = active == reserved.reservations_size() && doubled == 0;
  std::printf("audit: %lld active delivery reservations for %d planned items, %lld slots booked "
              "twice: %s\n",
              static_cast<long long>(active), reserved.reservations_size(),
              static_cast<long long>(doubled), ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace dcl::occupancy

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  std::string url = absl::GetFlag(FLAGS_database_url);
  if (url.empty() && std::getenv("DCL_DATABASE_URL") != nullptr) url = std::getenv("DCL_DATABASE_URL");
  if (url.empty()) {
    std::fprintf(stderr, "delivery_bench: --database_url or DCL_DATABASE_URL is required\n");
    return 2;
  }
  dcl::InitLogging("delivery_bench", "text");
  dcl::TurnOffMutexDeadlockDetection();
  return dcl::occupancy::Run(url);
}
