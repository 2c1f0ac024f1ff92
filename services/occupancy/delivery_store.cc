#include "services/occupancy/delivery_store.h"

#include <map>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "services/common/booking_kind.h"
#include "services/common/db.h"
#include "services/common/status.h"
#include "services/occupancy/rack_store.h"

namespace dcl::occupancy {
namespace {

std::optional<int64_t> OptionalInt(const pqxx::field& f) {
  if (f.is_null()) return std::nullopt;
  return f.as<int64_t>();
}

}  // namespace

absl::StatusOr<std::vector<DeliveryRack>> LoadDeliveryRacks(pqxx::transaction_base& tx,
                                                            const std::string& org_id,
                                                            const std::string& site_id) {
  if (ExecCached(tx, "SELECT 1 FROM sites WHERE id = $1::uuid AND org_id = $2::uuid", site_id,
                 org_id)
          .empty()) {
    return NotFound("site", site_id);
  }
  std::vector<DeliveryRack> racks;
  std::map<std::string, size_t> index;
  for (const auto& row : ExecCached(
           tx,
           "SELECT id::text, name, first_unit, unit_count, numbering, has_rear, "
           "power_budget_watts, weight_budget_kg, cooling_budget_watts, coalesce(airflow, '') "
           "FROM racks "
           "WHERE site_id = $1::uuid AND org_id = $2::uuid ORDER BY name, id",
           site_id, org_id)) {
    DeliveryRack r;
    r.id = row[0].as<std::string>();
    r.name = row[1].as<std::string>();
    r.geometry.first_unit = row[2].as<int>();
    r.geometry.unit_count = row[3].as<int>();
    r.geometry.descending = row[4].as<std::string>() == "descending";
    r.geometry.has_rear = row[5].as<bool>();
    r.power_budget_watts = OptionalInt(row[6]);
    r.weight_budget_kg = OptionalInt(row[7]);
    r.cooling_budget_watts = OptionalInt(row[8]);
    r.airflow = row[9].as<std::string>();
    index[r.id] = racks.size();
    racks.push_back(std::move(r));
  }
  // Every active slot of the site's racks, one row per slot.
  for (const auto& row : ExecCached(
           tx,
           "SELECT s.rack_id::text, s.side, s.unit FROM booking_slots s "
           "JOIN racks r ON r.id = s.rack_id "
           "WHERE r.site_id = $1::uuid AND r.org_id = $2::uuid AND s.released_at IS NULL",
           site_id, org_id)) {
    auto it = index.find(row[0].as<std::string>());
    if (it == index.end()) continue;
    racks[it->second].occupied.push_back(
        {ParseSide(row[1].as<std::string>()), row[2].as<int>()});
  }
  // The budget rows the database judges an addition by (schema 0039): allowance and unknown.
  std::set<std::string> has_rows;
  for (const auto& row : ExecCached(
           tx,
           "SELECT b.rack_id::text, b.dimension, b.allowance, b.unknown FROM rack_budgets b "
           "JOIN racks r ON r.id = b.rack_id WHERE r.site_id = $1::uuid AND r.org_id = $2::uuid",
           site_id, org_id)) {
    auto it = index.find(row[0].as<std::string>());
    if (it == index.end()) continue;
    DeliveryRack& r = racks[it->second];
    has_rows.insert(r.id);
    const std::string dimension = row[1].as<std::string>();
    if (dimension == "power") {
      r.power_allowance_watts = row[2].as<int64_t>();
      r.power_load_unknown = row[3].as<int64_t>() > 0;
    } else if (dimension == "weight") {
      r.weight_allowance_kg = row[2].as<int64_t>();
      r.weight_load_unknown = row[3].as<int64_t>() > 0;
    } else if (dimension == "cooling") {
      r.cooling_allowance_watts = row[2].as<int64_t>();
    }
  }
  // Every active booking with the figures it counts (HeldFigures), placements first.
  std::map<std::string, std::set<std::string>> counted;
  for (const auto& row :
       ExecCached(tx,
                  "SELECT b.rack_id::text, b.id::text, b.kind, coalesce(b.device_id::text, ''), "
                  "b.power_watts, b.weight_kg, d.power_draw_watts, d.weight_kg "
                  "FROM bookings b JOIN racks r ON r.id = b.rack_id "
                  "LEFT JOIN devices d ON d.id = b.device_id "
                  "WHERE r.site_id = $1::uuid AND r.org_id = $2::uuid AND b.released_at IS NULL "
                  "ORDER BY b.rack_id, b.kind <> 'placement', b.created_at, b.id",
                  site_id, org_id)) {
    auto it = index.find(row[0].as<std::string>());
    if (it == index.end()) continue;
    DeliveryRack& r = racks[it->second];
    const std::string booking = row[1].as<std::string>();
    const v1::BookingKind kind = ParseBookingKind(row[2].as<std::string>());
    const std::string device = row[3].as<std::string>();
    const HeldFigures f =
        CountedFigures(kind, device, has_rows.count(r.id) > 0, OptionalInt(row[4]),
                       OptionalInt(row[5]), OptionalInt(row[6]), OptionalInt(row[7]));
    if (!f.counted) continue;
    if (device.empty()) {
      const std::string name = absl::StrCat(BookingKindDisplayName(kind), " ", booking);
      const std::string units_only = absl::StrCat(name, " (units only)");
      r.power.push_back({f.power_watts ? name : units_only, f.power_watts});
      r.weight.push_back({f.weight_kg ? name : units_only, f.weight_kg});
      continue;
    }
    // Without budget rows the database counts nothing: a device with a placement and a move
    // hold in one rack stands there once. With them, both bookings count until the move ends.
    if (!has_rows.count(r.id) && !counted[r.id].insert(device).second) continue;
    const std::string name = absl::StrCat("device ", device);
    r.power.push_back({name, f.power_watts});
    r.weight.push_back({name, f.weight_kg});
    // A budget the database does not decide yet (no rows): unknown is still never free.
    if (!has_rows.count(r.id)) {
      r.power_load_unknown |= r.power_budget_watts && !f.power_watts;
      r.weight_load_unknown |= r.weight_budget_kg && !f.weight_kg;
    }
  }
  return racks;
}

absl::StatusOr<std::vector<DeliveryItem>> LoadDeliveryDevices(
    pqxx::transaction_base& tx, const std::string& org_id, const std::string& site_id,
    const std::vector<std::string>& device_ids) {
  std::vector<DeliveryItem> items;
  if (device_ids.empty()) return items;
  std::set<std::string> seen;
  std::vector<std::optional<std::string>> ids;
  for (const std::string& id : device_ids) {
    if (!seen.insert(id).second) {
      return InvalidInput("items", absl::StrCat("device ", id, " is named twice"));
    }
    ids.emplace_back(id);
  }
  std::map<std::string, pqxx::row> rows;
  pqxx::result r = tx.exec_params(
      "SELECT d.id::text, d.site_id::text, d.height_units, d.depth_class, d.power_draw_watts, "
      "d.weight_kg, d.decommissioned_at IS NOT NULL, EXISTS (SELECT 1 FROM bookings b "
      "WHERE b.device_id = d.id AND b.kind = 'placement' AND b.released_at IS NULL), "
      "coalesce(d.airflow, '') "
      "FROM devices d WHERE d.id = ANY($1::uuid[]) AND d.org_id = $2::uuid",
      TextArrayLiteral(ids), org_id);
  for (const auto& row : r) rows.emplace(row[0].as<std::string>(), row);
  for (const std::string& id : device_ids) {
    auto it = rows.find(id);
    if (it == rows.end()) return NotFound("device", id);
    const pqxx::row& row = it->second;
    if (row[1].as<std::string>() != site_id) {
      return Error(absl::StatusCode::kFailedPrecondition, v1::WRONG_STATE,
                   absl::StrCat("device ", id, " is registered at another site"))
          .Meta("device_id", id)
          .status();
    }
    if (row[6].as<bool>()) {
      return Error(absl::StatusCode::kFailedPrecondition, v1::DEVICE_DECOMMISSIONED,
                   absl::StrCat("device ", id, " is decommissioned"))
          .Meta("device_id", id)
          .status();
    }
    if (row[7].as<bool>()) {
      return Error(absl::StatusCode::kFailedPrecondition, v1::DEVICE_ALREADY_PLACED,
                   absl::StrCat("device ", id, " is already placed"))
          .Meta("device_id", id)
          .status();
    }
    DeliveryItem item;
    item.name = id;
    item.device_id = id;
    item.height = row[2].as<int>();
    item.depth = ParseDepth(row[3].as<std::string>());
    item.power_watts = OptionalInt(row[4]);
    item.weight_kg = OptionalInt(row[5]);
    item.airflow = row[8].as<std::string>();
    items.push_back(std::move(item));
  }
  return items;
}

}  // namespace dcl::occupancy
