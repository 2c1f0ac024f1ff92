#include "tests/capacity/capacity_world.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "services/common/status.h"
#include "services/occupancy/booking_store.h"
#include "tests/support/fixtures.h"

namespace dcl::testing {
namespace {

std::string Quoted(const std::string& s) { return absl::StrCat("'", s, "'"); }

// A budget row's used, the feeds named by their names; -1 when there is no such row.
int64_t Used(TestDatabase& db, const std::string& rack, const std::string& dimension,
             const std::string& key_sql) {
  const std::string used = db.Scalar(
      absl::StrCat("SELECT coalesce((SELECT used FROM rack_budgets WHERE rack_id = '", rack,
                   "' AND dimension = '", dimension, "' AND key = (", key_sql, ")), -1)"));
  return std::stoll(used);
}

std::string FeedIdSql(const std::string& rack, const std::string& name) {
  return absl::StrCat("SELECT id::text FROM power_feeds WHERE rack_id = '", rack,
                      "' AND name = ", Quoted(name));
}

}  // namespace

CapacityWorld::CapacityWorld() : Site(std::vector<RackSpec>{}), pool_(db.MakePool(2)) {}

std::string CapacityWorld::Rack(int cooling_budget_watts, const std::string& airflow) {
  RackSpec spec;
  spec.name = absl::StrCat("R", ++racks_);
  const std::string rack = CreateRack(db, org, site, spec);
  if (cooling_budget_watts > 0 || !airflow.empty()) {
    db.Exec(absl::StrCat("UPDATE racks SET cooling_budget_watts = ",
                         cooling_budget_watts > 0 ? std::to_string(cooling_budget_watts) : "NULL",
                         ", airflow = ", airflow.empty() ? "NULL" : Quoted(airflow),
                         " WHERE id = '", rack, "'"));
  }
  return rack;
}

std::string CapacityWorld::BudgetedRack(int power_budget_watts, int weight_budget_kg) {
  RackSpec spec;
  spec.name = absl::StrCat("R", ++racks_);
  spec.power_budget_watts = power_budget_watts;
  spec.weight_budget_kg = weight_budget_kg;
  return CreateRack(db, org, site, spec);
}

std::string CapacityWorld::Feed(const std::string& rack, const std::string& name, int voltage,
                                int amperage, const std::string& phase, int max_utilization) {
  return db.Scalar(absl::StrCat(
      "INSERT INTO power_feeds (rack_id, name, voltage, amperage, phase, max_utilization) "
      "VALUES ('",
      rack, "', ", Quoted(name), ", ", voltage, ", ", amperage, ", ", Quoted(phase), ", ",
      max_utilization, ") RETURNING id"));
}

std::string CapacityWorld::Device(int power_watts, int ports, const std::string& airflow,
                                  int weight_kg) {
  DeviceSpec spec;
  spec.depth_class = "half";
  spec.power_draw_watts = power_watts;
  spec.weight_kg = weight_kg;
  const std::string device = CreateDevice(db, org, site, spec);
  db.Exec(absl::StrCat(
      "UPDATE devices SET power_port_count = ", ports >= 0 ? std::to_string(ports) : "NULL",
      ", airflow = ", airflow.empty() ? "NULL" : Quoted(airflow), " WHERE id = '", device, "'"));
  return device;
}

std::vector<std::string> CapacityWorld::Devices(int count, int power_watts, int ports) {
  const pqxx::result r = db.Exec(absl::StrCat(
      "INSERT INTO devices (org_id, site_id, vendor, model, height_units, depth_class, "
      "power_draw_watts, power_port_count, airflow) SELECT '",
      org, "', '", site, "', 'Dell', 'R650', 1, 'half', ", power_watts, ", ", ports,
      ", 'front-to-rear' FROM generate_series(1, ", count, ") RETURNING id"));
  std::vector<std::string> ids;
  for (const auto& row : r) ids.push_back(row[0].as<std::string>());
  return ids;
}

absl::StatusOr<v1::Booking> CapacityWorld::Place(const std::string& rack, const std::string& device,
                                                 int unit) {
  return Place(*pool_, rack, device, unit);
}

absl::StatusOr<v1::Booking> CapacityWorld::Place(DbPool& pool, const std::string& rack,
                                                 const std::string& device, int unit) {
  const occupancy::BookingSpec spec = occupancy::DeviceFootprintSpec(
      v1::BOOKING_PLACEMENT, rack, device, v1::SIDE_FRONT, unit, "capacity test");
  return pool.Transact([&](pqxx::work& tx) { return occupancy::CreateBooking(tx, op, spec); });
}

int64_t CapacityWorld::FeedUsed(const std::string& rack, const std::string& feed) {
  return Used(db, rack, "feed", FeedIdSql(rack, feed));
}

int64_t CapacityWorld::LostUsed(const std::string& rack, const std::string& lost,
                                const std::string& carrying) {
  return Used(
      db, rack, "feed_lost",
      absl::StrCat("(", FeedIdSql(rack, lost), ") || '>' || (", FeedIdSql(rack, carrying), ")"));
}

int64_t CapacityWorld::CoolingUsed(const std::string& rack) {
  return Used(db, rack, "cooling", "''");
}

int64_t CapacityWorld::BudgetColumn(const std::string& rack, const std::string& dimension,
                                    const std::string& column) {
  return std::stoll(db.Scalar(absl::StrCat("SELECT coalesce((SELECT ", column,
                                           " FROM rack_budgets WHERE rack_id = '", rack,
                                           "' AND dimension = '", dimension, "'), -1)")));
}

void CapacityWorld::SetSwitchPorts(const std::string& rack, const std::string& ports_json) {
  db.Exec(absl::StrCat("UPDATE racks SET switch_ports = ",
                       ports_json.empty() ? "NULL" : Quoted(ports_json), " WHERE id = '", rack,
                       "'"));
}

void CapacityWorld::SetNetworkPorts(const std::string& device, const std::string& ports_json) {
  db.Exec(absl::StrCat("UPDATE devices SET network_ports = ",
                       ports_json.empty() ? "NULL" : Quoted(ports_json), " WHERE id = '", device,
                       "'"));
}

int64_t CapacityWorld::PortsUsed(const std::string& rack, const std::string& speed) {
  return Used(db, rack, "ports", Quoted(speed));
}

int64_t CapacityWorld::Drift() { return db.Count("SELECT count(*) FROM dcl_rack_budget_drift()"); }

v1::Reason ReasonOf(const absl::Status& status) {
  const std::optional<v1::ErrorDetail> detail = GetErrorDetail(status);
  return detail ? detail->reason() : v1::REASON_UNSPECIFIED;
}

std::string MetaOf(const absl::Status& status, const std::string& key) {
  const std::optional<v1::ErrorDetail> detail = GetErrorDetail(status);
  if (!detail) return "";
  auto it = detail->metadata().find(key);
  return it == detail->metadata().end() ? "" : it->second;
}

}  // namespace dcl::testing
