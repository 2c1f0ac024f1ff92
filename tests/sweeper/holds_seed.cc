#include "tests/sweeper/holds_seed.h"

namespace dcl::testing {

HoldsOrg SeedHoldsOrg(pqxx::connection& conn, const std::string& name) {
  pqxx::work tx(conn);
  HoldsOrg org;
  org.org_id = tx.exec_params1("INSERT INTO organizations (name) VALUES ($1) RETURNING id", name)[0]
                   .as<std::string>();
  org.site_id = tx.exec_params1(
                      "INSERT INTO sites (org_id, name) VALUES ($1, 'FRA1') RETURNING id",
                      org.org_id)[0]
                    .as<std::string>();
  org.service_id = tx.exec_params1("INSERT INTO services (org_id, kind, customer) "
                                   "VALUES ($1, 'dedicated', 'customer-1') RETURNING id",
                                   org.org_id)[0]
                       .as<std::string>();
  tx.commit();
  return org;
}

void InsertReservations(pqxx::connection& conn, const HoldsOrg& org, int64_t count,
                        const std::string& state, int expires_in_seconds,
                        const std::string& key_prefix) {
  pqxx::work tx(conn);
  tx.exec_params(R"sql(
WITH d AS (
  INSERT INTO devices (org_id, site_id, vendor, model, height_units, depth_class)
  SELECT $1::uuid, $2::uuid, 'Dell', 'R650', 1, 'full' FROM generate_series(1, $3::bigint)
  RETURNING id
), numbered AS (
  SELECT id, row_number() OVER () AS n FROM d
)
INSERT INTO reservations (org_id, idempotency_key, device_id, state, criteria_site_id,
                          selection_reason, created_at, created_by, expires_at,
                          ended_at, end_reason, ended_by, service_id)
SELECT $1::uuid, $5 || n, numbered.id, $4, $2::uuid, '{"seeded": true}'::jsonb,
       now() - interval '2 hours', 'seed', now() + make_interval(secs => $6::int),
       CASE WHEN $4 = 'held' THEN NULL ELSE now() - interval '1 hour' END,
       CASE $4 WHEN 'held' THEN NULL WHEN 'expired' THEN 'expired_at_conversion' ELSE $4 END,
       CASE WHEN $4 = 'held' THEN NULL ELSE 'seed' END,
       CASE WHEN $4 = 'converted' THEN $7::uuid END
FROM numbered
)sql",
                 org.org_id, org.site_id, count, state, key_prefix, expires_in_seconds,
                 org.service_id);
  tx.commit();
}

std::string InsertSiteWithDevices(pqxx::connection& conn, const HoldsOrg& org,
                                  const std::string& name, int devices) {
  pqxx::work tx(conn);
  const std::string id =
      tx.exec_params1("INSERT INTO sites (org_id, name) VALUES ($1, $2) RETURNING id",
                      org.org_id, name)[0]
          .as<std::string>();
  tx.exec_params("INSERT INTO devices (org_id, site_id, vendor, model, height_units, depth_class) "
                 "SELECT $1, $2, 'Dell', 'R650', 1, 'full' FROM generate_series(1, $3)",
                 org.org_id, id, devices);
  tx.commit();
  return id;
}

std::string InsertRack(pqxx::connection& conn, const HoldsOrg& org, const std::string& name) {
  pqxx::work tx(conn);
  const std::string id =
      tx.exec_params1("INSERT INTO racks (org_id, site_id, name, first_unit, unit_count, "
                      "numbering, has_rear) VALUES ($1, $2, $3, 1, 42, 'ascending', true) "
                      "RETURNING id",
                      org.org_id, org.site_id, name)[0]
          .as<std::string>();
  tx.commit();
  return id;
}

std::string InsertDevice(pqxx::connection& conn, const HoldsOrg& org) {
  pqxx::work tx(conn);
  const std::string id =
      tx.exec_params1("INSERT INTO devices (org_id, site_id, vendor, model, height_units, "
                      "depth_class) VALUES ($1, $2, 'Dell', 'R650', 1, 'half') RETURNING id",
                      org.org_id, org.site_id)[0]
          .as<std::string>();
  tx.commit();
  return id;
}

std::string InsertBooking(pqxx::connection& conn, const HoldsOrg& org, const std::string& rack_id,
                          const std::string& kind, int first_unit, int last_unit,
                          std::optional<int> expires_in_seconds, const std::string& device_id) {
  pqxx::work tx(conn);
  const std::string id =
      tx.exec_params1(
            "INSERT INTO bookings (org_id, site_id, rack_id, kind, device_id, front, rear, "
            "first_unit, last_unit, expires_at, created_by, reason, created_at) "
            "VALUES ($1, $2, $3, $4, nullif($5, '')::uuid, true, false, $6, $7, "
            "now() + make_interval(secs => $8::int), 'seed', 'seeded', now() - interval '1 hour') "
            "RETURNING id",
            org.org_id, org.site_id, rack_id, kind, device_id, first_unit, last_unit,
            expires_in_seconds)[0]
          .as<std::string>();
  tx.exec_params(
      "INSERT INTO booking_slots (booking_id, rack_id, side, unit) "
      "SELECT $1, $2, 'front', u FROM generate_series($3::int, $4::int) u",
      id, rack_id, first_unit, last_unit);
  tx.commit();
  return id;
}

}  // namespace dcl::testing
