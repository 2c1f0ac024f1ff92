#include "services/occupancy/site_capacity_store.h"

#include <map>
#include <optional>

#include "services/common/db.h"
#include "services/common/status.h"

namespace dcl::occupancy {
namespace {

std::optional<BudgetFigures> BudgetAt(const pqxx::row& row, int first) {
  if (row[first].is_null()) return std::nullopt;
  return BudgetFigures{row[first].as<int64_t>(), row[first + 1].as<int64_t>(),
                       row[first + 2].as<int64_t>()};
}

// The racks with their slots and their 'power', 'cooling' and 'weight' rows (the rows the
// database decides by; a rack without the row has no such budget).
constexpr char kRacksSql[] =
    "SELECT r.id::text, r.unit_count * (CASE WHEN r.has_rear THEN 2 ELSE 1 END), "
    "  (SELECT count(*) FROM booking_slots s WHERE s.rack_id = r.id AND s.released_at IS NULL), "
    "  p.capacity, p.used, p.unknown, c.capacity, c.used, c.unknown, "
    "  w.capacity, w.used, w.unknown "
    "FROM racks r "
    "LEFT JOIN rack_budgets p ON p.rack_id = r.id AND p.dimension = 'power' AND p.key = '' "
    "LEFT JOIN rack_budgets c ON c.rack_id = r.id AND c.dimension = 'cooling' AND c.key = '' "
    "LEFT JOIN rack_budgets w ON w.rack_id = r.id AND w.dimension = 'weight' AND w.key = '' "
    "WHERE r.site_id = $1::uuid ORDER BY r.name, r.id";

// Per rack, what the window's bookings added and gave back: slots (a side of a unit), power
// (also the heat) and weight, each booking with the figures it carries (none: 0). Two range
// scans, each on its own index (0043): the bookings made in the window
// (bookings_site_created_idx), and those made before it and released in it
// (bookings_site_released_idx); so the cost follows the window's bookings, not the history.
constexpr char kFlowSql[] =
    "WITH w AS ("
    "  SELECT b.rack_id, true AS made, "
    "      coalesce(b.released_at > now() - make_interval(days => $2::int), false) AS gone, "
    "      b.first_unit, b.last_unit, b.front, b.rear, b.power_watts, b.weight_kg "
    "    FROM bookings b WHERE b.site_id = $1::uuid "
    "      AND b.created_at > now() - make_interval(days => $2::int) "
    "  UNION ALL "
    "  SELECT b.rack_id, false, true, b.first_unit, b.last_unit, b.front, b.rear, "
    "      b.power_watts, b.weight_kg "
    "    FROM bookings b WHERE b.site_id = $1::uuid AND b.released_at IS NOT NULL "
    "      AND b.released_at > now() - make_interval(days => $2::int) "
    "      AND b.created_at <= now() - make_interval(days => $2::int)), "
    "f AS (SELECT rack_id, made, gone, "
    "      (last_unit - first_unit + 1) * ((CASE WHEN front THEN 1 ELSE 0 END) "
    "        + (CASE WHEN rear THEN 1 ELSE 0 END)) AS slots, "
    "      coalesce(power_watts, 0) AS power, coalesce(weight_kg, 0) AS weight FROM w) "
    "SELECT rack_id::text, "
    "  coalesce(sum(slots) FILTER (WHERE made), 0), coalesce(sum(slots) FILTER (WHERE gone), 0), "
    "  coalesce(sum(power) FILTER (WHERE made), 0), coalesce(sum(power) FILTER (WHERE gone), 0), "
    "  coalesce(sum(weight) FILTER (WHERE made), 0), "
    "  coalesce(sum(weight) FILTER (WHERE gone), 0) "
    "FROM f GROUP BY rack_id";

// The typical device: the lower median of the placed devices' figures (percentile_disc takes
// the first value whose cumulative share reaches one half; NULLs are left out).
constexpr char kMedianSql[] =
    "SELECT coalesce(percentile_disc(0.5) WITHIN GROUP (ORDER BY d.power_draw_watts), 0), "
    "  coalesce(percentile_disc(0.5) WITHIN GROUP (ORDER BY d.weight_kg), 0) "
    "FROM racks r JOIN bookings b ON b.rack_id = r.id AND b.released_at IS NULL "
    "  AND b.kind = 'placement' "
    "JOIN devices d ON d.id = b.device_id WHERE r.site_id = $1::uuid";

}  // namespace

absl::StatusOr<SiteFigures> LoadSiteFigures(pqxx::transaction_base& tx, const std::string& org_id,
                                            const std::string& site_id, int window_days) {
  if (!org_id.empty()) {
    pqxx::result site = ExecCached(
        tx, "SELECT 1 FROM sites WHERE id = $1::uuid AND org_id = $2::uuid", site_id, org_id);
    if (site.empty()) return NotFound("site", site_id);
  }
  SiteFigures figures;
  std::map<std::string, size_t> by_id;
  for (const auto& r : ExecCached(tx, kRacksSql, site_id)) {
    RackFigures rack;
    rack.rack_id = r[0].as<std::string>();
    rack.slots = r[1].as<int64_t>();
    rack.taken_slots = r[2].as<int64_t>();
    rack.power = BudgetAt(r, 3);
    rack.cooling = BudgetAt(r, 6);
    rack.weight = BudgetAt(r, 9);
    by_id[rack.rack_id] = figures.racks.size();
    figures.racks.push_back(std::move(rack));
  }
  for (const auto& f : ExecCached(tx, kFlowSql, site_id, window_days)) {
    auto it = by_id.find(f[0].as<std::string>());
    if (it == by_id.end()) continue;  // a rack of another site (moved bookings keep their site)
    RackFigures& rack = figures.racks[it->second];
    const WindowFlow power{f[3].as<int64_t>(), f[4].as<int64_t>()};
    rack.flow[static_cast<int>(SiteDimension::kUnits)] = {f[1].as<int64_t>(), f[2].as<int64_t>()};
    rack.flow[static_cast<int>(SiteDimension::kPower)] = power;
    rack.flow[static_cast<int>(SiteDimension::kCooling)] = power;
    rack.flow[static_cast<int>(SiteDimension::kWeight)] = {f[5].as<int64_t>(),
                                                          f[6].as<int64_t>()};
  }
  const pqxx::row median = ExecCached1(tx, kMedianSql, site_id);
  figures.median_device.power_watts = median[0].as<int64_t>();
  figures.median_device.weight_kg = median[1].as<int64_t>();
  return figures;
}

std::vector<std::string> ListSiteIds(pqxx::transaction_base& tx, int limit) {
  std::vector<std::string> ids;
  for (const auto& r : ExecCached(tx, "SELECT id::text FROM sites ORDER BY id LIMIT $1", limit)) {
    ids.push_back(r[0].as<std::string>());
  }
  return ids;
}

}  // namespace dcl::occupancy
