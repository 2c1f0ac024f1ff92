#include "tests/daytwo/volume.h"

#include <chrono>
#include <stdexcept>

#include <pqxx/pqxx>

#include "absl/strings/str_cat.h"
#include "services/common/auth.h"
#include "services/common/db.h"

namespace dcl::daytwo {

namespace {

constexpr int kPlacementsPerRack = 21;  // 2U each in a 42U rack

std::string Token(const std::string& url, const std::string& org, Role role) {
  DbOptions options;
  options.url = url;
  options.pool_size = 1;
  DbPool pool(options);
  auto issued = CreateToken(pool, org, role, "daytwo", "day-two volume");
  if (!issued.ok()) throw std::runtime_error(issued.status().ToString());
  return issued->token;
}

}  // namespace

Volume GenerateVolume(const std::string& url, const VolumeSpec& spec) {
  if (spec.devices < 10 || spec.booking_slots < 0 || spec.free_racks < 1) {
    throw std::invalid_argument("a volume needs at least 10 devices and one free rack");
  }
  const auto start = std::chrono::steady_clock::now();
  Volume volume;
  pqxx::connection conn(url);
  const int64_t placed = spec.devices * 4 / 5;
  const int64_t full_racks = (placed + kPlacementsPerRack - 1) / kPlacementsPerRack;
  const int64_t racks = full_racks + spec.free_racks;
  // Released placements (four slot rows each) make up the rest of the slot rows.
  const int64_t history = std::max<int64_t>(0, (spec.booking_slots - placed * 4 + 3) / 4);
  {
    pqxx::work tx(conn);
    volume.org_id = tx.exec1("INSERT INTO organizations (name) VALUES ('volume') RETURNING id")[0]
                        .as<std::string>();
    tx.exec("UPDATE feature_settings SET enabled = true WHERE feature = 'datacenter'");
    tx.exec_params(
        "INSERT INTO organization_feature_settings (org_id, feature, enabled) "
        "VALUES ($1, 'datacenter', true)",
        volume.org_id);
    volume.site_id = tx.exec_params1("INSERT INTO sites (org_id, name) VALUES ($1, 'VOL1') "
                                     "RETURNING id",
                                     volume.org_id)[0]
                         .as<std::string>();
    tx.exec_params(
        "INSERT INTO devices (org_id, site_id, vendor, model, hardware_profile, height_units, "
        "depth_class, process_state) "
        "SELECT $1, $2, 'Dell', 'R650', '', 2, 'full', 'normal' FROM generate_series(1, $3)",
        volume.org_id, volume.site_id, spec.devices);
    tx.exec_params(
        "INSERT INTO racks (org_id, site_id, name, first_unit, unit_count, numbering, has_rear) "
        "SELECT $1, $2, 'R' || g, 1, 42, 'ascending', true FROM generate_series(0, $3 - 1) g",
        volume.org_id, volume.site_id, racks);
    tx.commit();
  }
  {
    // Device n (in id order) at rack n / 21, units 1 + 2 (n % 21) and the next, both sides.
    pqxx::work tx(conn);
    tx.exec_params(
        "INSERT INTO bookings (org_id, site_id, rack_id, kind, device_id, front, rear, "
        "first_unit, last_unit, created_by, reason) "
        "SELECT $1, $2, r.id, 'placement', d.id, true, true, 1 + 2 * (d.n % 21), "
        "2 + 2 * (d.n % 21), 'volume', 'generated' "
        "FROM (SELECT id, row_number() OVER (ORDER BY id) - 1 AS n FROM devices "
        "      WHERE site_id = $2 ORDER BY id LIMIT $3) d "
        "JOIN racks r ON r.site_id = $2 AND r.name = 'R' || (d.n / 21)",
        volume.org_id, volume.site_id, placed);
    // History: placements of the same devices at the same units, released long ago.
    tx.exec_params(
        "INSERT INTO bookings (org_id, site_id, rack_id, kind, device_id, front, rear, "
        "first_unit, last_unit, created_by, reason, created_at, released_at, released_by, "
        "release_reason) "
        "SELECT b.org_id, b.site_id, b.rack_id, 'placement', b.device_id, true, true, "
        "b.first_unit, b.last_unit, 'volume', 'generated', now() - interval '400 days', "
        "now() - interval '300 days', 'volume', 'history' "
        "FROM (SELECT * FROM bookings WHERE site_id = $1 AND released_at IS NULL) b "
        "CROSS JOIN generate_series(1, ($2::bigint + $3::bigint - 1) / $3::bigint) k "
        "LIMIT $2::bigint",
        volume.site_id, history, std::max<int64_t>(placed, 1));
    tx.exec_params(
        "INSERT INTO booking_slots (booking_id, rack_id, side, unit, released_at) "
        "SELECT b.id, b.rack_id, s.side, u, b.released_at FROM bookings b "
        "CROSS JOIN (VALUES ('front'), ('rear')) s (side) "
        "CROSS JOIN LATERAL generate_series(b.first_unit, b.last_unit) u "
        "WHERE b.site_id = $1",
        volume.site_id);
    tx.commit();
  }
  {
    pqxx::nontransaction tx(conn);
    tx.exec("ANALYZE");
    volume.devices = tx.exec_params1("SELECT count(*) FROM devices WHERE site_id = $1",
                                     volume.site_id)[0].as<int64_t>();
    volume.booking_slots = tx.exec1("SELECT count(*) FROM booking_slots")[0].as<int64_t>();
    for (const auto& row : tx.exec_params(
             "SELECT id FROM racks WHERE site_id = $1 AND substr(name, 2)::bigint >= $2 "
             "ORDER BY name",
             volume.site_id, full_racks)) {
      volume.free_racks.push_back(row[0].as<std::string>());
    }
    for (const auto& row : tx.exec_params(
             "SELECT d.id FROM devices d WHERE d.site_id = $1 AND NOT EXISTS (SELECT 1 FROM "
             "bookings b WHERE b.device_id = d.id AND b.released_at IS NULL) LIMIT 5000",
             volume.site_id)) {
      volume.unplaced_devices.push_back(row[0].as<std::string>());
    }
  }
  volume.commerce_token = Token(url, volume.org_id, Role::kCommerce);
  volume.operator_token = Token(url, volume.org_id, Role::kDcOperator);
  volume.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return volume;
}

}  // namespace dcl::daytwo
