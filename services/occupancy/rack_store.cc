#include "services/occupancy/rack_store.h"

#include <map>
#include <utility>

#include "services/common/db.h"
#include "services/common/status.h"
#include "services/occupancy/booking_store.h"
#include "services/occupancy/rack_plan.h"

namespace dcl::occupancy {
namespace {

std::optional<int64_t> OptionalInt(const pqxx::field& f) {
  if (f.is_null()) return std::nullopt;
  return f.as<int64_t>();
}

}  // namespace

HeldFigures CountedFigures(v1::BookingKind kind, const std::string& device_id,
                           bool rack_has_budget_rows, std::optional<int64_t> booking_power_watts,
                           std::optional<int64_t> booking_weight_kg,
                           std::optional<int64_t> device_power_watts,
                           std::optional<int64_t> device_weight_kg) {
  HeldFigures f;
  if (kind == v1::BOOKING_BLOCKING) return f;
  f.counted = true;
  f.power_watts = booking_power_watts;
  f.weight_kg = booking_weight_kg;
  if (!device_id.empty() && !rack_has_budget_rows) {
    if (!f.power_watts) f.power_watts = device_power_watts;
    if (!f.weight_kg) f.weight_kg = device_weight_kg;
  }
  return f;
}

absl::StatusOr<v1::Rack> LoadRack(pqxx::transaction_base& tx, const std::string& org_id,
                                  const std::string& rack_id) {
  pqxx::result r = ExecCached(
      tx,
      "SELECT site_id::text, name, first_unit, unit_count, numbering, has_rear, "
      "power_budget_watts, weight_budget_kg FROM racks WHERE id = $1::uuid AND org_id = $2::uuid",
      rack_id, org_id);
  if (r.empty()) return NotFound("rack", rack_id);
  const auto row = r[0];
  v1::Rack rack;
  rack.set_id(rack_id);
  rack.set_site_id(row[0].as<std::string>());
  rack.set_name(row[1].as<std::string>());
  v1::RackGeometry* g = rack.mutable_geometry();
  g->set_first_unit(row[2].as<int>());
  g->set_unit_count(row[3].as<int>());
  g->set_numbering(row[4].as<std::string>() == "descending" ? v1::NUMBERING_DESCENDING
                                                            : v1::NUMBERING_ASCENDING);
  g->set_has_rear(row[5].as<bool>());
  rack.set_power_budget_watts(row[6].is_null() ? 0 : row[6].as<int>());
  rack.set_weight_budget_kg(row[7].is_null() ? 0 : row[7].as<int>());
  pqxx::result slots = ExecCached(
      tx,
      "SELECT s.side, s.unit, b.id::text, b.kind, b.device_id::text, b.reason "
      "FROM booking_slots s JOIN bookings b ON b.id = s.booking_id "
      "WHERE s.rack_id = $1::uuid AND s.released_at IS NULL ORDER BY s.unit, s.side = 'rear'",
      rack_id);
  for (const auto& s : slots) {
    v1::ElevationSlot* e = rack.add_occupied();
    e->mutable_slot()->set_side(ParseSide(s[0].as<std::string>()));
    e->mutable_slot()->set_unit(s[1].as<int>());
    e->set_booking_id(s[2].as<std::string>());
    e->set_kind(ParseBookingKind(s[3].as<std::string>()));
    if (!s[4].is_null()) e->set_device_id(s[4].as<std::string>());
    e->set_reason(s[5].as<std::string>());
  }
  return rack;
}

absl::StatusOr<RackLoad> LoadRackLoad(pqxx::transaction_base& tx, const std::string& org_id,
                                      const std::string& rack_id) {
  pqxx::result r =
      ExecCached(tx,
                 "SELECT r.unit_count, r.has_rear, r.power_budget_watts, r.weight_budget_kg, "
                 "  (SELECT count(*) FROM booking_slots s WHERE s.rack_id = r.id "
                 "     AND s.released_at IS NULL AND s.side = 'front'), "
                 "  (SELECT count(*) FROM booking_slots s WHERE s.rack_id = r.id "
                 "     AND s.released_at IS NULL AND s.side = 'rear'), "
                 "  r.cooling_budget_watts, coalesce(r.airflow, '') "
                 "FROM racks r WHERE r.id = $1::uuid AND r.org_id = $2::uuid",
                 rack_id, org_id);
  if (r.empty()) return NotFound("rack", rack_id);
  const auto row = r[0];
  RackLoad load;
  load.unit_count = row[0].as<int>();
  load.has_rear = row[1].as<bool>();
  load.power_budget_watts = OptionalInt(row[2]);
  load.weight_budget_kg = OptionalInt(row[3]);
  load.taken_front_units = row[4].as<int>();
  load.taken_rear_units = row[5].as<int>();
  load.cooling_budget_watts = OptionalInt(row[6]);
  load.airflow = row[7].as<std::string>();

  for (const auto& b : ExecCached(tx,
                                  "SELECT dimension, allowance, unknown, key, capacity, used "
                                  "FROM rack_budgets WHERE rack_id = $1::uuid "
                                  "ORDER BY dimension, array_position(dcl_port_speeds(), key)",
                                  rack_id)) {
    load.has_budget_rows = true;
    const std::string dimension = b[0].as<std::string>();
    const BudgetRow row{b[1].as<int64_t>(), b[2].as<int64_t>()};
    if (dimension == "power") load.power_row = row;
    if (dimension == "weight") load.weight_row = row;
    if (dimension == "cooling") load.cooling_row = row;
    if (dimension == "ports") {
      load.ports.push_back({b[3].as<std::string>(), b[4].as<int64_t>(), b[5].as<int64_t>()});
    }
  }
  // The feeds and their rows: 'feed' keyed by the feed's id, 'feed_lost' by "lost>carrying".
  // A row missing reads 0 (the audit, dcl_rack_budget_drift, reports it).
  std::map<std::string, size_t> feed_index;
  for (const auto& f : ExecCached(
           tx,
           "SELECT f.name, f.voltage, f.amperage, f.phase, f.max_utilization, f.available_watts, "
           "coalesce(b.used, 0) FROM power_feeds f LEFT JOIN rack_budgets b "
           "ON b.rack_id = f.rack_id AND b.dimension = 'feed' AND b.key = f.id::text "
           "WHERE f.rack_id = $1::uuid ORDER BY f.name",
           rack_id)) {
    FeedLoad feed;
    feed.name = f[0].as<std::string>();
    feed.voltage = f[1].as<int64_t>();
    feed.amperage = f[2].as<int64_t>();
    feed.phase = f[3].as<std::string>();
    feed.max_utilization_percent = f[4].as<int>();
    feed.available_watts = f[5].as<int64_t>();
    feed.used_watts = f[6].as<int64_t>();
    feed_index[feed.name] = load.feeds.size();
    load.feeds.push_back(std::move(feed));
  }
  if (!load.feeds.empty()) {
    for (const auto& l : ExecCached(
             tx,
             "SELECT c.name, l.name, coalesce(b.used, 0) FROM power_feeds c "
             "JOIN power_feeds l ON l.rack_id = c.rack_id AND l.id <> c.id "
             "LEFT JOIN rack_budgets b ON b.rack_id = c.rack_id AND b.dimension = 'feed_lost' "
             "AND b.key = l.id::text || '>' || c.id::text "
             "WHERE c.rack_id = $1::uuid ORDER BY c.name, l.name",
             rack_id)) {
      auto it = feed_index.find(l[0].as<std::string>());
      if (it == feed_index.end()) continue;  // a feed added since the first read
      load.feeds[it->second].carried_if_lost.emplace_back(l[1].as<std::string>(),
                                                          l[2].as<int64_t>());
    }
  }
  pqxx::result held = ExecCached(
      tx,
      "SELECT b.id::text, b.kind, coalesce(b.device_id::text, ''), b.power_watts, b.weight_kg, "
      "d.power_draw_watts, d.weight_kg FROM bookings b LEFT JOIN devices d ON d.id = b.device_id "
      "WHERE b.rack_id = $1::uuid AND b.released_at IS NULL "
      "ORDER BY b.kind <> 'placement', b.created_at, b.id",
      rack_id);
  load.held.reserve(held.size());
  for (const auto& h : held) {
    HeldItem item;
    item.booking_id = h[0].as<std::string>();
    item.kind = ParseBookingKind(h[1].as<std::string>());
    item.device_id = h[2].as<std::string>();
    const HeldFigures f =
        CountedFigures(item.kind, item.device_id, load.has_budget_rows, OptionalInt(h[3]),
                       OptionalInt(h[4]), OptionalInt(h[5]), OptionalInt(h[6]));
    item.power_watts = f.power_watts;
    item.weight_kg = f.weight_kg;
    load.held.push_back(std::move(item));
  }
  return load;
}

}  // namespace dcl::occupancy
