#include "services/inventory/inventory_store.h"

#include <optional>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "services/common/db.h"
#include "services/common/status.h"
#include "services/common/time_util.h"
#include "services/devices/device_custody.h"

namespace dcl::inventory {
namespace {

// The names the schema gives the constraints these writes can trip over
// (schema/migrations/0001_base.sql, 0010_inventory.sql). Violations are classified by name only.
constexpr char kSiteNameUnique[] = "sites_org_name_uq";
constexpr char kRackNameUnique[] = "racks_site_name_uq";
constexpr char kRackSiteFk[] = "racks_site_fk";
constexpr char kSerialUnique[] = "devices_org_serial_uq";
constexpr char kDeviceSiteFk[] = "devices_site_fk";
// A device booking's airflow against its rack's (schema 0038), also raised when a placed
// device's airflow changes (0041).
constexpr char kAirflowKnown[] = "bookings_airflow_known";
constexpr char kAirflowMatches[] = "bookings_airflow_matches";

// The cursor condition "(created_at, id) after the cursor", with the cursor in parameters
// $<n> (micros) and $<n+1> (id, '' = from the start).
std::string AfterCursor(const std::string& alias, int n) {
  return absl::StrCat("($", n + 1, " = '' OR (", alias, ".created_at, ", alias, ".id) > (",
                      SqlTimestampFromMicros(absl::StrCat("$", n)), ", nullif($", n + 1,
                      ", '')::uuid))");
}

std::string Text(const pqxx::field& f) { return f.is_null() ? std::string() : f.as<std::string>(); }

absl::Status AlreadyExists(const std::string& what, const std::string& field,
                           const std::string& value, const std::string& existing_id) {
  Error error(absl::StatusCode::kAlreadyExists, v1::ALREADY_EXISTS,
              absl::StrCat("a ", what, " with ", field, " \"", value, "\" exists already",
                           existing_id.empty() ? "" : absl::StrCat(" (", existing_id, ")")));
  error.Meta("field", field);
  if (!existing_id.empty()) error.Meta("existing_id", existing_id);
  return error.status();
}

// ---- Sites ----

const std::string& SiteColumns() {
  static const std::string* columns =
      new std::string(absl::StrCat("s.id::text, s.name, ", SqlMicros("s.created_at")));
  return *columns;
}

v1::Site SiteFromRow(const pqxx::row& row) {
  v1::Site site;
  site.set_id(row[0].as<std::string>());
  site.set_name(row[1].as<std::string>());
  SetTimestampFromMicros(row[2].as<int64_t>(), site.mutable_created_at());
  return site;
}

// ---- Ports by speed ----

// A ports column read as "10g:48,25g:8" in the vocabulary's order; NULL stays NULL ('{}' reads
// "").
std::string PortsSql(const std::string& column) {
  return absl::StrCat("CASE WHEN ", column, " IS NOT NULL THEN coalesce((SELECT string_agg(",
                      "p.key || ':' || (p.value::numeric)::bigint, ',' ORDER BY array_position(",
                      "dcl_port_speeds(), p.key)) FROM jsonb_each_text(", column, ") p), '') END");
}

std::optional<PortCounts> PortsOf(const pqxx::field& field) {
  if (field.is_null()) return std::nullopt;
  PortCounts ports;
  for (absl::string_view item : absl::StrSplit(field.as<std::string>(), ',', absl::SkipEmpty())) {
    std::pair<std::string, std::string> kv = absl::StrSplit(item, absl::MaxSplits(':', 1));
    int64_t count = 0;
    if (!absl::SimpleAtoi(kv.second, &count)) continue;  // the schema's CHECK forbids it
    ports.emplace_back(kv.first, count);
  }
  return ports;
}

// ---- Racks ----

const std::string& RackColumns() {
  static const std::string* columns = new std::string(
      absl::StrCat("r.id::text, r.site_id::text, r.name, r.first_unit, r.unit_count, r.numbering, "
                   "r.has_rear, r.power_budget_watts, r.weight_budget_kg, ",
                   SqlMicros("r.created_at"), ", r.cooling_budget_watts, r.airflow, ",
                   PortsSql("r.switch_ports")));
  return *columns;
}
constexpr int kRackCursorColumn = 9;

v1::RackRecord RackFromRow(const pqxx::row& row) {
  v1::RackRecord rack;
  rack.set_id(row[0].as<std::string>());
  rack.set_site_id(row[1].as<std::string>());
  rack.set_name(row[2].as<std::string>());
  v1::RackGeometry* g = rack.mutable_geometry();
  g->set_first_unit(row[3].as<int>());
  g->set_unit_count(row[4].as<int>());
  g->set_numbering(row[5].as<std::string>() == "descending" ? v1::NUMBERING_DESCENDING
                                                            : v1::NUMBERING_ASCENDING);
  g->set_has_rear(row[6].as<bool>());
  rack.set_power_budget_watts(row[7].is_null() ? 0 : row[7].as<int>());
  rack.set_weight_budget_kg(row[8].is_null() ? 0 : row[8].as<int>());
  SetTimestampFromMicros(row[9].as<int64_t>(), rack.mutable_created_at());
  rack.set_cooling_budget_watts(row[10].is_null() ? 0 : row[10].as<int>());
  rack.set_airflow(AirflowOf(Text(row[11])));
  if (std::optional<PortCounts> ports = PortsOf(row[12])) {
    SetPortCounts(*ports, rack.mutable_switch_ports());
  }
  return rack;
}

// Fills each rack's power_feeds (by name), one query for all of them.
void AttachFeeds(pqxx::transaction_base& tx, const std::vector<v1::RackRecord*>& racks) {
  if (racks.empty()) return;
  std::vector<std::optional<std::string>> ids;
  for (const v1::RackRecord* rack : racks) ids.push_back(rack->id());
  pqxx::result rows = tx.exec_params(
      "SELECT rack_id::text, name, voltage, amperage, phase, max_utilization, available_watts "
      "FROM power_feeds WHERE rack_id = ANY ($1::uuid[]) ORDER BY rack_id, name",
      TextArrayLiteral(ids));
  for (const pqxx::row& row : rows) {
    for (v1::RackRecord* rack : racks) {
      if (rack->id() != row[0].as<std::string>()) continue;
      v1::PowerFeed* feed = rack->add_power_feeds();
      feed->set_name(row[1].as<std::string>());
      feed->set_voltage(row[2].as<int>());
      feed->set_amperage(row[3].as<int>());
      feed->set_phase(row[4].as<std::string>() == "three-phase" ? v1::POWER_PHASE_THREE
                                                                 : v1::POWER_PHASE_SINGLE);
      feed->set_max_utilization(row[5].as<int>());
      feed->set_available_watts(row[6].as<int64_t>());
    }
  }
}

std::vector<std::optional<std::string>> RackArgs(const std::string& org_id,
                                                 const RackFields& rack) {
  return {org_id,
          rack.site_id,
          rack.name,
          std::to_string(rack.geometry.first_unit()),
          std::to_string(rack.geometry.unit_count()),
          rack.geometry.numbering() == v1::NUMBERING_DESCENDING ? "descending" : "ascending",
          rack.geometry.has_rear() ? "true" : "false",
          std::to_string(rack.power_budget_watts),
          std::to_string(rack.weight_budget_kg),
          std::to_string(rack.cooling_budget_watts),
          rack.airflow,
          PortsJson(rack.switch_ports),
          rack.set_switch_ports ? "true" : "false"};
}

// What a device booking in the rack answers for a rule of the rack's new budgets, feeds or
// airflow (schema 0038, 0039: the rebuild checks every booking as a new one would be): the first
// device, in id order, that `condition` (over bookings b and devices d) finds.
std::string DeviceInTheWay(pqxx::transaction_base& tx, const std::string& rack_id,
                           const std::string& condition,
                           const std::optional<std::string>& arg = std::nullopt) {
  const std::string sql =
      absl::StrCat("SELECT d.id::text FROM bookings b JOIN devices d ON d.id = b.device_id "
                   "WHERE b.rack_id = $1::uuid AND b.released_at IS NULL "
                   "AND b.kind IN ('placement', 'move_hold') AND (",
                   condition, ") ORDER BY d.id LIMIT 1");
  pqxx::result r = arg ? tx.exec_params(sql, rack_id, *arg) : tx.exec_params(sql, rack_id);
  return r.empty() ? std::string() : Text(r[0][0]);
}

std::string RackName(pqxx::transaction_base& tx, const std::string& rack_id,
                     const std::string& fallback) {
  pqxx::result named = tx.exec_params("SELECT name FROM racks WHERE id = $1::uuid", rack_id);
  return named.empty() ? fallback : Text(named[0][0]);
}

// A rack's load in one dimension as a rebuild of its rows counts it: a device booking's fixed
// figure, or its device's where the rack had no budget when it was booked; a reservation's own.
// `booking_column` / `device_column` name the figure ("power_watts" / "power_draw_watts").
std::string RackLoad(pqxx::transaction_base& tx, const std::string& rack_id,
                     const std::string& booking_column, const std::string& device_column) {
  pqxx::result r = tx.exec_params(
      absl::StrCat("SELECT coalesce(sum(coalesce(b.", booking_column, ", d.", device_column,
                   ")), 0) FROM bookings b LEFT JOIN devices d ON d.id = b.device_id "
                   "WHERE b.rack_id = $1::uuid AND b.released_at IS NULL AND "
                   "((b.kind IN ('placement', 'move_hold') AND b.device_id IS NOT NULL) "
                   "OR b.kind = 'reservation')"),
      rack_id);
  return r.empty() ? "?" : Text(r[0][0]);
}

// A rack's new power or weight budget the bookings standing in it refuse (schema 0039: the
// rebuild of its budget rows judges every booking as a new one would be): a budget below the
// load, or a device there whose figure the budget needs is unknown. Names the rack's load or
// the device, so that the person budgeting the rack sees what stands in it.
std::optional<absl::Status> BudgetBelowLoad(pqxx::transaction_base& tx, const std::string& rack_id,
                                            const RackFields& rack, const GuardedResult& result) {
  const std::string& name = result.violated_constraint;
  if (name != "rack_power_within_budget" && name != "rack_weight_within_budget" &&
      name != "bookings_power_known" && name != "bookings_weight_known") {
    return std::nullopt;
  }
  // The rack's name as it stands (the refused update may have renamed it).
  const std::string rack_name = RackName(tx, rack_id, rack.name);
  if (name == "rack_power_within_budget" || name == "rack_weight_within_budget") {
    const bool power = name == "rack_power_within_budget";
    const std::string unit = power ? "W" : "kg";
    const int budget = power ? rack.power_budget_watts : rack.weight_budget_kg;
    const std::string load = power ? RackLoad(tx, rack_id, "power_watts", "power_draw_watts")
                                   : RackLoad(tx, rack_id, "weight_kg", "weight_kg");
    return Error(absl::StatusCode::kFailedPrecondition,
                 power ? v1::POWER_BUDGET_EXCEEDED : v1::WEIGHT_BUDGET_EXCEEDED,
                 absl::StrCat("rack ", rack_name, " already carries ", load, " ", unit,
                              ", more than a ", power ? "power" : "weight", " budget of ", budget,
                              " ", unit, ": release bookings first, or budget at least that"))
        .Meta("rack_name", rack_name)
        .Meta("dimension", power ? "power" : "weight")
        .Meta(power ? "used_watts" : "used_kg", load)
        .Meta(power ? "capacity_watts" : "capacity_kg", std::to_string(budget))
        .status();
  }
  const bool power = name == "bookings_power_known";
  const std::string field = power ? "power_draw_watts" : "weight_kg";
  const std::string device = DeviceInTheWay(tx, rack_id, absl::StrCat("d.", field, " IS NULL"));
  return Error(absl::StatusCode::kFailedPrecondition,
               power ? v1::POWER_UNKNOWN : v1::WEIGHT_UNKNOWN,
               absl::StrCat("device ", device, " in rack ", rack_name, " has no ",
                            power ? "power" : "weight", " figure: set its ", field,
                            " before budgeting the rack or giving it feeds"))
      .Meta("rack_name", rack_name)
      .Meta("device_id", device)
      .Meta("missing", field)
      .status();
}

// A rack's new switch ports the bookings standing in it refuse (schema 0040: the rebuild judges
// every booking as a new one would be): a speed its devices need more of than offered (the one
// most over is named), or a device there without its network port figure.
std::optional<absl::Status> PortsBelowLoad(pqxx::transaction_base& tx, const std::string& rack_id,
                                           const RackFields& rack, const GuardedResult& result) {
  const std::string& name = result.violated_constraint;
  if (name != "rack_ports_within_budget" && name != "bookings_ports_known") return std::nullopt;
  const std::string rack_name = RackName(tx, rack_id, rack.name);
  if (name == "bookings_ports_known") {
    const std::string device = DeviceInTheWay(tx, rack_id, "d.network_ports IS NULL");
    return Error(absl::StatusCode::kFailedPrecondition, v1::PORTS_UNKNOWN,
                 absl::StrCat("device ", device, " in rack ", rack_name,
                              " has no network port figure: set its network_ports before "
                              "giving the rack switch ports"))
        .Meta("rack_name", rack_name)
        .Meta("device_id", device)
        .Meta("missing", "network_ports")
        .status();
  }
  // What the standing device bookings need per speed, as the rebuild counts them.
  pqxx::result needs = tx.exec_params(
      "SELECT n.key, sum(n.value::bigint) FROM bookings b JOIN devices d ON d.id = b.device_id, "
      "jsonb_each_text(coalesce(b.network_ports, d.network_ports)) n "
      "WHERE b.rack_id = $1::uuid AND b.released_at IS NULL "
      "AND b.kind IN ('placement', 'move_hold') GROUP BY n.key",
      rack_id);
  std::string speed;
  int64_t used = 0, offered = 0;
  for (const pqxx::row& row : needs) {
    const std::string key = row[0].as<std::string>();
    const int64_t need = row[1].as<int64_t>();
    int64_t offer = 0;
    for (const auto& [s, count] : rack.switch_ports.value_or(PortCounts{})) {
      if (s == key) offer = count;
    }
    if (need - offer > used - offered) {
      speed = key;
      used = need;
      offered = offer;
    }
  }
  return Error(absl::StatusCode::kFailedPrecondition, v1::PORTS_EXHAUSTED,
               absl::StrCat("rack ", rack_name, "'s devices already need ", used, " ", speed,
                            " ports, more than the ", offered,
                            " asked for: release bookings first, or offer at least that"))
      .Meta("rack_name", rack_name)
      .Meta("dimension", "ports")
      .Meta("speed", speed)
      .Meta("used_ports", std::to_string(used))
      .Meta("offered_ports", std::to_string(offered))
      .Meta("over_ports", std::to_string(used - offered))
      .status();
}

// The refusals of the rules a rack's feeds, cooling budget and airflow bring (schema 0038), by
// the violated constraint's name; nullopt for a name that is none of them. `airflow` is the
// rack's airflow as the refused change asked for it. The feed ratings (rack_feed_within_rating,
// rack_feed_redundancy) are SetPowerFeeds' own (FeedOverRating): they need the feeds asked for.
std::optional<absl::Status> ConfigurationRefusal(pqxx::transaction_base& tx,
                                                 const std::string& rack_id,
                                                 const std::string& rack_name,
                                                 const std::string& name,
                                                 const std::string& airflow, int cooling_budget,
                                                 int feed_count) {
  if (name == "rack_cooling_within_budget") {
    // Heat is the power figure (0038).
    const std::string load = RackLoad(tx, rack_id, "power_watts", "power_draw_watts");
    return Error(absl::StatusCode::kFailedPrecondition, v1::COOLING_BUDGET_EXCEEDED,
                 absl::StrCat("rack ", rack_name, " already makes ", load,
                              " W of heat, more than a cooling budget of ", cooling_budget,
                              " W: release bookings first, or budget at least that"))
        .Meta("rack_name", rack_name)
        .Meta("dimension", "cooling")
        .Meta("used_watts", load)
        .Meta("capacity_watts", std::to_string(cooling_budget))
        .status();
  }
  if (name == "bookings_power_ports_known") {
    const std::string device = DeviceInTheWay(tx, rack_id, "d.power_port_count IS NULL");
    return Error(absl::StatusCode::kFailedPrecondition, v1::POWER_PORTS_UNKNOWN,
                 absl::StrCat("device ", device, " in rack ", rack_name,
                              " has no power port count: which feeds it loads is not known; set "
                              "its power_port_count before giving the rack feeds"))
        .Meta("rack_name", rack_name)
        .Meta("device_id", device)
        .Meta("missing", "power_port_count")
        .status();
  }
  if (name == "bookings_feeds_named") {
    const std::string device = DeviceInTheWay(
        tx, rack_id,
        "coalesce(b.power_ports, d.power_port_count) BETWEEN 1 AND $2::integer - 1 AND "
        "(b.feed_ids IS NULL OR NOT b.feed_ids <@ ARRAY(SELECT id FROM power_feeds f "
        "WHERE f.rack_id = b.rack_id) OR cardinality(b.feed_ids) <> "
        "coalesce(b.power_ports, d.power_port_count))",
        std::to_string(feed_count));
    return Error(absl::StatusCode::kFailedPrecondition, v1::FEEDS_UNNAMED,
                 absl::StrCat("device ", device, " in rack ", rack_name,
                              " has fewer power ports than the rack would have feeds (",
                              feed_count,
                              "): which of them it hangs on is not known; place it again "
                              "naming its feeds, or keep as many feeds as it has ports"))
        .Meta("rack_name", rack_name)
        .Meta("device_id", device)
        .Meta("feed_count", std::to_string(feed_count))
        .status();
  }
  if (name == kAirflowKnown) {
    const std::string device =
        DeviceInTheWay(tx, rack_id, "d.airflow IS NULL OR d.airflow = 'mixed'");
    return Error(absl::StatusCode::kFailedPrecondition, v1::AIRFLOW_UNKNOWN,
                 absl::StrCat("device ", device, " in rack ", rack_name,
                              " has no single airflow: set its airflow before giving the rack "
                              "one"))
        .Meta("rack_name", rack_name)
        .Meta("device_id", device)
        .Meta("missing", "airflow")
        .status();
  }
  if (name == kAirflowMatches) {
    // The rule itself (schema 0041's dcl_airflow_refusal), not a copy of it.
    const std::string device = DeviceInTheWay(
        tx, rack_id, "dcl_airflow_refusal($2, d.airflow) = 'bookings_airflow_matches'", airflow);
    pqxx::result r =
        tx.exec_params("SELECT airflow FROM devices WHERE id = nullif($1, '')::uuid", device);
    const std::string device_airflow = r.empty() ? "" : Text(r[0][0]);
    return Error(absl::StatusCode::kFailedPrecondition, v1::AIRFLOW_MISMATCH,
                 absl::StrCat("device ", device, " in rack ", rack_name, " blows ",
                              device_airflow, ", against a rack airflow of ", airflow,
                              ": move it out first"))
        .Meta("rack_name", rack_name)
        .Meta("device_id", device)
        .Meta("device_airflow", device_airflow)
        .Meta("rack_airflow", airflow)
        .status();
  }
  return std::nullopt;
}

absl::Status RackViolation(pqxx::transaction_base& tx, const std::string& org_id,
                           const RackFields& rack, const GuardedResult& result) {
  if (result.violated_constraint == kRackNameUnique) {
    pqxx::result r = tx.exec_params(
        "SELECT id::text FROM racks WHERE org_id = $1::uuid AND site_id = $2::uuid AND name = $3",
        org_id, rack.site_id, rack.name);
    return AlreadyExists("rack at this site", "name", rack.name, r.empty() ? "" : Text(r[0][0]));
  }
  if (result.violated_constraint == kRackSiteFk) return NotFound("site", rack.site_id);
  return UnexpectedViolation("rack", result);
}

// ---- Devices ----

const std::string& DeviceColumns() {
  static const std::string* columns = new std::string(absl::StrCat(
      "d.id::text, d.site_id::text, d.vendor, d.model, d.hardware_profile, d.serial, "
      "d.height_units, d.depth_class, d.process_state, d.power_draw_watts, d.weight_kg, ",
      SqlMicros("d.decommissioned_at"), ", ", SqlMicros("d.created_at"),
      ", d.power_port_count, d.airflow, ", PortsSql("d.network_ports")));
  return *columns;
}

v1::DepthClass DepthOf(const std::string& name) {
  if (name == "full") return v1::DEPTH_FULL;
  if (name == "half") return v1::DEPTH_HALF;
  return v1::DEPTH_UNKNOWN;
}

v1::ProcessState StateOf(const std::string& name) {
  if (name == "normal") return v1::PROCESS_NORMAL;
  if (name == "staging") return v1::PROCESS_STAGING;
  if (name == "moving") return v1::PROCESS_MOVING;
  if (name == "in_transit") return v1::PROCESS_IN_TRANSIT;
  return v1::PROCESS_STATE_UNSPECIFIED;
}

DeviceRecord DeviceFromRow(const pqxx::row& row) {
  DeviceRecord d;
  DeviceFields& f = d.fields;
  f.site_id = row[1].as<std::string>();
  f.vendor = row[2].as<std::string>();
  f.model = row[3].as<std::string>();
  f.hardware_profile = row[4].as<std::string>();
  f.serial = Text(row[5]);
  f.height_units = row[6].as<int>();
  f.depth_class = row[7].as<std::string>();
  f.process_state = row[8].as<std::string>();
  if (!row[9].is_null()) f.power_draw_watts = row[9].as<int>();
  if (!row[10].is_null()) f.weight_kg = row[10].as<int>();
  if (!row[13].is_null()) f.power_port_count = row[13].as<int>();
  f.airflow = Text(row[14]);
  f.network_ports = PortsOf(row[15]);

  v1::Device& p = d.proto;
  p.set_id(row[0].as<std::string>());
  p.set_site_id(f.site_id);
  p.set_vendor(f.vendor);
  p.set_model(f.model);
  p.set_hardware_profile(f.hardware_profile);
  p.set_serial(f.serial);
  p.set_height_units(f.height_units);
  p.set_depth_class(DepthOf(f.depth_class));
  p.set_process_state(StateOf(f.process_state));
  if (f.power_draw_watts) p.set_power_draw_watts(*f.power_draw_watts);
  if (f.weight_kg) p.set_weight_kg(*f.weight_kg);
  if (f.power_port_count) p.set_power_port_count(*f.power_port_count);
  p.set_airflow(AirflowOf(f.airflow));
  if (f.network_ports) {
    p.set_network_ports_known(true);
    SetPortCounts(*f.network_ports, p.mutable_network_ports());
  }
  if (!row[11].is_null()) {
    p.set_decommissioned(true);
    SetTimestampFromMicros(row[11].as<int64_t>(), p.mutable_decommissioned_at());
  }
  SetTimestampFromMicros(row[12].as<int64_t>(), p.mutable_created_at());
  return d;
}
constexpr int kDeviceCursorColumn = 12;

std::optional<std::string> OptionalInt(const std::optional<int>& v) {
  return v ? std::optional<std::string>(std::to_string(*v)) : std::nullopt;
}

// `device_id`: the device updated ("" for a registration).
absl::Status DeviceViolation(pqxx::transaction_base& tx, const std::string& org_id,
                             const std::string& device_id, const DeviceFields& device,
                             const GuardedResult& result) {
  if (result.violated_constraint == kSerialUnique) {
    pqxx::result r = tx.exec_params(
        "SELECT id::text FROM devices WHERE org_id = $1::uuid AND serial = $2", org_id,
        device.serial);
    return AlreadyExists("device", "serial", device.serial, r.empty() ? "" : Text(r[0][0]));
  }
  if (result.violated_constraint == kDeviceSiteFk) return NotFound("site", device.site_id);
  // Schema 0041: the airflow of a device standing in a rack with an airflow is judged as its
  // booking would be now.
  if (result.violated_constraint == kAirflowKnown || result.violated_constraint == kAirflowMatches) {
    pqxx::result r = tx.exec_params(
        "SELECT r.name, r.airflow, b.id::text FROM bookings b JOIN racks r ON r.id = b.rack_id "
        "WHERE b.device_id = $1::uuid AND b.released_at IS NULL "
        "AND b.kind IN ('placement', 'move_hold') AND r.airflow IS NOT NULL "
        "AND dcl_airflow_refusal(r.airflow, nullif($2, '')) IS NOT NULL ORDER BY r.id LIMIT 1",
        device_id, device.airflow);
    const std::string rack = r.empty() ? "" : Text(r[0][0]);
    const std::string rack_airflow = r.empty() ? "" : Text(r[0][1]);
    const bool unknown = result.violated_constraint == kAirflowKnown;
    return Error(absl::StatusCode::kFailedPrecondition,
                 unknown ? v1::AIRFLOW_UNKNOWN : v1::AIRFLOW_MISMATCH,
                 absl::StrCat("device ", device_id, " stands in rack ", rack, " (airflow ",
                              rack_airflow, "): its airflow cannot ",
                              unknown ? "be forgotten or mixed there"
                                      : absl::StrCat("become ", device.airflow, " there"),
                              "; move or release it first"))
        .Meta("device_id", device_id)
        .Meta("rack_name", rack)
        .Meta("rack_airflow", rack_airflow)
        .Meta("device_airflow", device.airflow)
        .Meta("booking_id", r.empty() ? "" : Text(r[0][2]));
  }
  return UnexpectedViolation("device", result);
}

absl::StatusOr<v1::Device> Reread(pqxx::transaction_base& tx, const std::string& org_id,
                                  const std::string& device_id) {
  std::optional<DeviceRecord> d = FindDevice(tx, org_id, device_id, false);
  if (!d) return NotFound("device", device_id);
  return d->proto;
}

}  // namespace

const std::vector<std::string>& PortSpeeds() {
  static const std::vector<std::string>* speeds =
      new std::vector<std::string>{"1g", "10g", "25g", "100g"};
  return *speeds;
}

std::string PortsJson(const std::optional<PortCounts>& ports) {
  if (!ports) return "";
  std::string json = "{";
  for (const auto& [speed, count] : *ports) {
    absl::StrAppend(&json, json.size() > 1 ? ", " : "", "\"", speed, "\": ", count);
  }
  return json + "}";
}

void SetPortCounts(const PortCounts& ports,
                   google::protobuf::RepeatedPtrField<v1::PortCount>* out) {
  for (const auto& [speed, count] : ports) {
    v1::PortCount* p = out->Add();
    p->set_speed(speed);
    p->set_count(static_cast<int32_t>(count));
  }
}

std::string AirflowName(v1::Airflow airflow) {
  switch (airflow) {
    case v1::AIRFLOW_FRONT_TO_REAR: return "front-to-rear";
    case v1::AIRFLOW_REAR_TO_FRONT: return "rear-to-front";
    case v1::AIRFLOW_LEFT_TO_RIGHT: return "left-to-right";
    case v1::AIRFLOW_RIGHT_TO_LEFT: return "right-to-left";
    case v1::AIRFLOW_SIDE_TO_REAR: return "side-to-rear";
    case v1::AIRFLOW_REAR_TO_SIDE: return "rear-to-side";
    case v1::AIRFLOW_BOTTOM_TO_TOP: return "bottom-to-top";
    case v1::AIRFLOW_TOP_TO_BOTTOM: return "top-to-bottom";
    case v1::AIRFLOW_PASSIVE: return "passive";
    case v1::AIRFLOW_MIXED: return "mixed";
    default: return "";
  }
}

v1::Airflow AirflowOf(const std::string& name) {
  for (int i = v1::Airflow_MIN; i <= v1::Airflow_MAX; ++i) {
    const v1::Airflow airflow = static_cast<v1::Airflow>(i);
    if (v1::Airflow_IsValid(i) && !name.empty() && AirflowName(airflow) == name) return airflow;
  }
  return v1::AIRFLOW_UNSPECIFIED;
}

// ---- Sites ----

absl::StatusOr<v1::Site> InsertSite(pqxx::transaction_base& tx, const std::string& org_id,
                                    const std::string& name) {
  GuardedResult result = GuardedExec(
      tx, "INSERT INTO sites (org_id, name) VALUES ($1[1]::uuid, $1[2]) RETURNING id::text",
      {org_id, name});
  if (result.violated()) {
    if (result.violated_constraint == kSiteNameUnique) {
      pqxx::result r = tx.exec_params(
          "SELECT id::text FROM sites WHERE org_id = $1::uuid AND name = $2", org_id, name);
      return AlreadyExists("site", "name", name, r.empty() ? "" : Text(r[0][0]));
    }
    return UnexpectedViolation("site", result);
  }
  if (!result.returned) return Internal("the site insert returned no id");
  std::optional<v1::Site> site = FindSite(tx, org_id, *result.returned);
  if (!site) return Internal("the inserted site is not readable");
  return *std::move(site);
}

std::optional<v1::Site> FindSite(pqxx::transaction_base& tx, const std::string& org_id,
                                 const std::string& site_id) {
  pqxx::result r = tx.exec_params(
      absl::StrCat("SELECT ", SiteColumns(), " FROM sites s WHERE s.id = $1::uuid AND "
                   "s.org_id = $2::uuid"),
      site_id, org_id);
  if (r.empty()) return std::nullopt;
  return SiteFromRow(r[0]);
}

Page<v1::Site> ListSites(pqxx::transaction_base& tx, const std::string& org_id,
                         const std::optional<PageCursor>& after, int limit) {
  pqxx::result rows = tx.exec_params(
      absl::StrCat("SELECT ", SiteColumns(), " FROM sites s WHERE s.org_id = $1::uuid AND ",
                   CreationListingCondition("s"), " AND ", AfterCursor("s", 2),
                   " ORDER BY s.created_at, s.id LIMIT $4"),
      org_id, after ? after->key : int64_t{0}, after ? after->id : std::string(), limit);
  Page<v1::Site> page;
  for (const pqxx::row& row : rows) {
    page.rows.push_back(SiteFromRow(row));
    page.cursors.push_back({row[2].as<int64_t>(), row[0].as<std::string>()});
  }
  return page;
}

// ---- Racks ----

absl::StatusOr<v1::RackRecord> InsertRack(pqxx::transaction_base& tx, const std::string& org_id,
                                          const RackFields& rack) {
  GuardedResult result = GuardedExec(
      tx,
      "INSERT INTO racks (org_id, site_id, name, first_unit, unit_count, numbering, has_rear, "
      "power_budget_watts, weight_budget_kg) VALUES ($1[1]::uuid, $1[2]::uuid, $1[3], "
      "$1[4]::integer, $1[5]::integer, $1[6], $1[7]::boolean, nullif($1[8]::integer, 0), "
      "nullif($1[9]::integer, 0)) RETURNING id::text",
      RackArgs(org_id, rack));
  if (result.violated()) return RackViolation(tx, org_id, rack, result);
  if (!result.returned) return Internal("the rack insert returned no id");
  std::optional<v1::RackRecord> stored = FindRack(tx, org_id, *result.returned, false);
  if (!stored) return Internal("the inserted rack is not readable");
  return *std::move(stored);
}

std::optional<v1::RackRecord> FindRack(pqxx::transaction_base& tx, const std::string& org_id,
                                       const std::string& rack_id, bool lock) {
  pqxx::result r = tx.exec_params(
      absl::StrCat("SELECT ", RackColumns(),
                   " FROM racks r WHERE r.id = $1::uuid AND r.org_id = $2::uuid",
                   lock ? " FOR UPDATE" : ""),
      rack_id, org_id);
  if (r.empty()) return std::nullopt;
  v1::RackRecord rack = RackFromRow(r[0]);
  AttachFeeds(tx, {&rack});
  return rack;
}

Page<v1::RackRecord> ListRacks(pqxx::transaction_base& tx, const std::string& org_id,
                               const std::string& site_id, const std::optional<PageCursor>& after,
                               int limit) {
  pqxx::result rows = tx.exec_params(
      absl::StrCat("SELECT ", RackColumns(), " FROM racks r WHERE r.org_id = $1::uuid AND ",
                   CreationListingCondition("r"),
                   " AND ($2 = '' OR r.site_id = "
                   "nullif($2, '')::uuid) AND ",
                   AfterCursor("r", 3), " ORDER BY r.created_at, r.id LIMIT $5"),
      org_id, site_id, after ? after->key : int64_t{0}, after ? after->id : std::string(), limit);
  Page<v1::RackRecord> page;
  for (const pqxx::row& row : rows) {
    page.rows.push_back(RackFromRow(row));
    page.cursors.push_back({row[kRackCursorColumn].as<int64_t>(), row[0].as<std::string>()});
  }
  std::vector<v1::RackRecord*> racks;
  for (v1::RackRecord& rack : page.rows) racks.push_back(&rack);
  AttachFeeds(tx, racks);
  return page;
}

absl::StatusOr<v1::RackRecord> UpdateRack(pqxx::transaction_base& tx, const std::string& org_id,
                                          const std::string& rack_id, const RackFields& rack) {
  std::vector<std::optional<std::string>> args = RackArgs(org_id, rack);
  args.push_back(rack_id);
  GuardedResult result = GuardedExec(
      tx,
      "UPDATE racks SET name = $1[3], first_unit = $1[4]::integer, unit_count = $1[5]::integer, "
      "numbering = $1[6], has_rear = $1[7]::boolean, "
      "power_budget_watts = nullif($1[8]::integer, 0), "
      "weight_budget_kg = nullif($1[9]::integer, 0), "
      "cooling_budget_watts = nullif($1[10]::integer, 0), airflow = nullif($1[11], ''), "
      "switch_ports = CASE WHEN $1[13]::boolean THEN nullif($1[12], '')::jsonb "
      "ELSE switch_ports END "
      "WHERE id = $1[14]::uuid AND org_id = $1[1]::uuid RETURNING id::text",
      args);
  if (result.violated()) {
    if (std::optional<absl::Status> refusal = BudgetBelowLoad(tx, rack_id, rack, result)) {
      return *refusal;
    }
    if (std::optional<absl::Status> refusal = PortsBelowLoad(tx, rack_id, rack, result)) {
      return *refusal;
    }
    pqxx::result feeds = tx.exec_params(
        "SELECT count(*) FROM power_feeds WHERE rack_id = $1::uuid", rack_id);
    if (std::optional<absl::Status> refusal = ConfigurationRefusal(
            tx, rack_id, RackName(tx, rack_id, rack.name), result.violated_constraint,
            rack.airflow, rack.cooling_budget_watts, feeds[0][0].as<int>())) {
      return *refusal;
    }
    return RackViolation(tx, org_id, rack, result);
  }
  std::optional<v1::RackRecord> stored = FindRack(tx, org_id, rack_id, false);
  if (!stored || result.affected == 0) return NotFound("rack", rack_id);
  return *std::move(stored);
}

namespace {

// Writes the feeds as one statement (upsert the named ones, delete the others): the rebuild is
// deferred (power_feeds_rebuild), so nothing is judged here.
GuardedResult WriteFeeds(pqxx::transaction_base& tx, const std::string& rack_id,
                         const std::vector<FeedFields>& feeds) {
  std::vector<std::optional<std::string>> names, voltages, amperages, phases, utilizations;
  for (const FeedFields& f : feeds) {
    names.push_back(f.name);
    voltages.push_back(std::to_string(f.voltage));
    amperages.push_back(std::to_string(f.amperage));
    phases.push_back(f.phase);
    utilizations.push_back(std::to_string(f.max_utilization));
  }
  return GuardedExec(
      tx,
      "WITH given AS (SELECT * FROM unnest($1[2]::text[], $1[3]::bigint[], $1[4]::bigint[], "
      "$1[5]::text[], $1[6]::bigint[]) AS g(name, voltage, amperage, phase, max_utilization)), "
      "up AS (INSERT INTO power_feeds (rack_id, name, voltage, amperage, phase, "
      "max_utilization) SELECT $1[1]::uuid, name, voltage, amperage, phase, max_utilization "
      "FROM given ON CONFLICT (rack_id, name) DO UPDATE SET voltage = excluded.voltage, "
      "amperage = excluded.amperage, phase = excluded.phase, "
      "max_utilization = excluded.max_utilization "
      "WHERE (power_feeds.voltage, power_feeds.amperage, power_feeds.phase, "
      "power_feeds.max_utilization) IS DISTINCT FROM (excluded.voltage, excluded.amperage, "
      "excluded.phase, excluded.max_utilization) RETURNING 1), "
      "gone AS (DELETE FROM power_feeds WHERE rack_id = $1[1]::uuid "
      "AND name NOT IN (SELECT name FROM given) RETURNING 1) "
      "SELECT ((SELECT count(*) FROM up) + (SELECT count(*) FROM gone))::text",
      {rack_id, TextArrayLiteral(names), TextArrayLiteral(voltages), TextArrayLiteral(amperages),
       TextArrayLiteral(phases), TextArrayLiteral(utilizations)});
}

// The feed a refused set leaves over its derated rating in normal operation
// (POWER_BUDGET_EXCEEDED) or else, with another feed lost, over it (FEED_REDUNDANCY_LOST): read
// from the rows the set calls for (dcl_rack_budgets_expected) with the set written again,
// unjudged, in the caller's transaction, which rolls back. A set over both is answered by the
// normal-operation one, whichever row the schema's rebuild happened to refuse first.
absl::Status FeedOverRating(pqxx::transaction_base& tx, const std::string& rack_id,
                            const std::string& rack_name, const std::vector<FeedFields>& feeds) {
  WriteFeeds(tx, rack_id, feeds);
  const bool lost = tx.exec_params1("SELECT NOT EXISTS (SELECT 1 FROM "
                                    "dcl_rack_budgets_expected($1::uuid) e WHERE "
                                    "e.dimension = 'feed' AND e.used > e.capacity)",
                                    rack_id)[0]
                        .as<bool>();
  pqxx::result r = tx.exec_params(
      "SELECT coalesce(l.name, ''), c.name, e.used, e.capacity "
      "FROM dcl_rack_budgets_expected($1::uuid) e "
      "JOIN power_feeds c ON c.id::text = CASE e.dimension WHEN 'feed' THEN e.key "
      "ELSE split_part(e.key, '>', 2) END "
      "LEFT JOIN power_feeds l ON e.dimension = 'feed_lost' AND l.id::text = split_part(e.key, "
      "'>', 1) WHERE e.dimension = $2 AND e.used > e.capacity "
      "ORDER BY e.used - e.capacity DESC, c.name, l.name LIMIT 1",
      rack_id, lost ? "feed_lost" : "feed");
  std::string feed, lost_feed, used = "?", capacity = "?";
  if (!r.empty()) {
    lost_feed = Text(r[0][0]);
    feed = Text(r[0][1]);
    used = Text(r[0][2]);
    capacity = Text(r[0][3]);
  }
  Error error(absl::StatusCode::kFailedPrecondition,
              lost ? v1::FEED_REDUNDANCY_LOST : v1::POWER_BUDGET_EXCEEDED,
              absl::StrCat(lost ? absl::StrCat("with feed ", lost_feed, " lost, ") : "", "feed ",
                           feed, " of rack ", rack_name, " would carry ", used,
                           " W, more than its derated rating of ", capacity,
                           " W: rate it higher, or release bookings first"));
  error.Meta("rack_name", rack_name)
      .Meta("dimension", lost ? "feed_lost" : "feed")
      .Meta("feed", feed)
      .Meta("used_watts", used)
      .Meta("capacity_watts", capacity);
  if (lost) error.Meta("lost_feed", lost_feed);
  return error.status();
}

}  // namespace

absl::StatusOr<v1::RackRecord> SetPowerFeeds(pqxx::transaction_base& tx,
                                             const std::string& org_id,
                                             const v1::RackRecord& rack,
                                             const std::vector<FeedFields>& feeds) {
  GuardedResult result = WriteFeeds(tx, rack.id(), feeds);
  if (!result.violated()) {
    // The set is judged here, as it ends, so that a refusal names its constraint.
    result = GuardedExec(tx, "SELECT dcl_power_feeds_judge($1[1]::uuid)::text", {rack.id()});
  }
  if (result.violated()) {
    const std::string& name = result.violated_constraint;
    if (name == "rack_feed_within_rating" || name == "rack_feed_redundancy") {
      return FeedOverRating(tx, rack.id(), rack.name(), feeds);
    }
    RackFields fields;
    fields.name = rack.name();
    if (std::optional<absl::Status> refusal = BudgetBelowLoad(tx, rack.id(), fields, result)) {
      return *refusal;
    }
    if (std::optional<absl::Status> refusal = ConfigurationRefusal(
            tx, rack.id(), rack.name(), name, AirflowName(rack.airflow()),
            rack.cooling_budget_watts(), static_cast<int>(feeds.size()))) {
      return *refusal;
    }
    return UnexpectedViolation("power feeds", result);
  }
  std::optional<v1::RackRecord> stored = FindRack(tx, org_id, rack.id(), false);
  if (!stored) return NotFound("rack", rack.id());
  return *std::move(stored);
}

std::vector<BookedSlot> SlotsOutside(pqxx::transaction_base& tx, const std::string& rack_id,
                                     const v1::RackGeometry& geometry) {
  pqxx::result rows = tx.exec_params(
      "SELECT b.id::text, b.kind, b.device_id::text, s.side, s.unit "
      "FROM booking_slots s JOIN bookings b ON b.id = s.booking_id "
      "WHERE s.rack_id = $1::uuid AND s.released_at IS NULL "
      "AND (s.unit < $2::integer OR s.unit > $2::integer + $3::integer - 1 "
      "     OR (s.side = 'rear' AND NOT $4::boolean)) "
      "ORDER BY s.unit, s.side = 'rear'",
      rack_id, geometry.first_unit(), geometry.unit_count(), geometry.has_rear());
  std::vector<BookedSlot> out;
  for (const pqxx::row& row : rows) {
    BookedSlot slot;
    slot.booking_id = row[0].as<std::string>();
    slot.kind = row[1].as<std::string>();
    slot.device_id = Text(row[2]);
    slot.side = row[3].as<std::string>() == "rear" ? v1::SIDE_REAR : v1::SIDE_FRONT;
    slot.unit = row[4].as<int>();
    out.push_back(std::move(slot));
  }
  return out;
}

// ---- Devices ----

absl::StatusOr<v1::Device> InsertDevice(pqxx::transaction_base& tx, const std::string& org_id,
                                        const DeviceFields& device) {
  GuardedResult result = GuardedExec(
      tx,
      "INSERT INTO devices (org_id, site_id, vendor, model, hardware_profile, serial, "
      "height_units, depth_class, process_state, power_draw_watts, weight_kg, power_port_count, "
      "airflow, network_ports) VALUES ($1[1]::uuid, $1[2]::uuid, $1[3], $1[4], $1[5], "
      "nullif($1[6], ''), $1[7]::integer, $1[8], $1[9], $1[10]::integer, $1[11]::integer, "
      "$1[12]::integer, nullif($1[13], ''), nullif($1[14], '')::jsonb) RETURNING id::text",
      {org_id, device.site_id, device.vendor, device.model, device.hardware_profile, device.serial,
       std::to_string(device.height_units), device.depth_class, device.process_state,
       OptionalInt(device.power_draw_watts), OptionalInt(device.weight_kg),
       OptionalInt(device.power_port_count), device.airflow, PortsJson(device.network_ports)});
  if (result.violated()) return DeviceViolation(tx, org_id, "", device, result);
  if (!result.returned) return Internal("the device insert returned no id");
  return Reread(tx, org_id, *result.returned);
}

std::optional<DeviceRecord> FindDevice(pqxx::transaction_base& tx, const std::string& org_id,
                                       const std::string& device_id, bool lock) {
  pqxx::result r = tx.exec_params(
      absl::StrCat("SELECT ", DeviceColumns(),
                   " FROM devices d WHERE d.id = $1::uuid AND d.org_id = $2::uuid",
                   lock ? " FOR UPDATE" : ""),
      device_id, org_id);
  if (r.empty()) return std::nullopt;
  return DeviceFromRow(r[0]);
}

Page<v1::Device> ListDevices(pqxx::transaction_base& tx, const std::string& org_id,
                             const DeviceFilter& filter, const std::optional<PageCursor>& after,
                             int limit) {
  pqxx::result rows = tx.exec_params(
      absl::StrCat("SELECT ", DeviceColumns(), " FROM devices d WHERE d.org_id = $1::uuid AND ",
                   CreationListingCondition("d"),
                   " AND ($2 = '' OR d.site_id = nullif($2, '')::uuid) "
                   "AND ($3 = '' OR d.vendor = $3) AND ($4 = '' OR d.model = $4) "
                   "AND ($5 = '' OR d.hardware_profile = $5) "
                   "AND ($6 = '' OR d.process_state = $6) "
                   "AND ($7::boolean OR d.decommissioned_at IS NULL) AND ",
                   AfterCursor("d", 8), " ORDER BY d.created_at, d.id LIMIT $10"),
      org_id, filter.site_id, filter.vendor, filter.model, filter.hardware_profile,
      filter.process_state, filter.include_decommissioned, after ? after->key : int64_t{0},
      after ? after->id : std::string(), limit);
  Page<v1::Device> page;
  for (const pqxx::row& row : rows) {
    page.rows.push_back(DeviceFromRow(row).proto);
    page.cursors.push_back({row[kDeviceCursorColumn].as<int64_t>(), row[0].as<std::string>()});
  }
  return page;
}

absl::StatusOr<v1::Device> UpdateDevice(pqxx::transaction_base& tx, const std::string& org_id,
                                        const std::string& device_id,
                                        const DeviceFields& device) {
  GuardedResult result = GuardedExec(
      tx,
      "UPDATE devices SET vendor = $1[3], model = $1[4], hardware_profile = $1[5], "
      "serial = nullif($1[6], ''), height_units = $1[7]::integer, depth_class = $1[8], "
      "power_draw_watts = $1[9]::integer, weight_kg = $1[10]::integer, "
      "power_port_count = $1[11]::integer, airflow = nullif($1[12], ''), "
      "network_ports = nullif($1[13], '')::jsonb "
      "WHERE id = $1[2]::uuid AND org_id = $1[1]::uuid RETURNING id::text",
      {org_id, device_id, device.vendor, device.model, device.hardware_profile, device.serial,
       std::to_string(device.height_units), device.depth_class,
       OptionalInt(device.power_draw_watts), OptionalInt(device.weight_kg),
       OptionalInt(device.power_port_count), device.airflow, PortsJson(device.network_ports)});
  if (result.violated()) return DeviceViolation(tx, org_id, device_id, device, result);
  if (result.affected == 0) return NotFound("device", device_id);
  return Reread(tx, org_id, device_id);
}

absl::StatusOr<v1::Device> SetProcessState(pqxx::transaction_base& tx, const std::string& org_id,
                                           const std::string& device_id,
                                           const std::string& process_state) {
  pqxx::result r = tx.exec_params(
      "UPDATE devices SET process_state = $3 WHERE id = $1::uuid AND org_id = $2::uuid", device_id,
      org_id, process_state);
  if (r.affected_rows() == 0) return NotFound("device", device_id);
  return Reread(tx, org_id, device_id);
}

absl::StatusOr<v1::Device> MarkDecommissioned(pqxx::transaction_base& tx,
                                              const std::string& org_id,
                                              const std::string& device_id,
                                              const std::string& actor,
                                              const std::string& reason) {
  pqxx::result r = tx.exec_params(
      "UPDATE devices SET decommissioned_at = now(), decommissioned_by = $3, "
      "decommission_reason = $4 WHERE id = $1::uuid AND org_id = $2::uuid "
      "AND decommissioned_at IS NULL",
      device_id, org_id, actor, reason);
  if (r.affected_rows() == 0) return NotFound("device", device_id);
  return Reread(tx, org_id, device_id);
}

DeviceUse ReadDeviceUse(pqxx::transaction_base& tx, const std::string& device_id) {
  pqxx::row r = tx.exec_params1(
      "SELECT "
      "(SELECT id::text FROM reservations WHERE device_id = $1::uuid AND state = 'held' LIMIT 1), "
      "(SELECT service_id::text FROM service_bindings WHERE device_id = $1::uuid "
      "   AND ended_at IS NULL LIMIT 1), "
      "(SELECT b.id::text FROM bookings b WHERE b.device_id = $1::uuid "
      "   AND b.kind = 'placement' AND b.released_at IS NULL LIMIT 1), "
      "(SELECT r.name FROM bookings b JOIN racks r ON r.id = b.rack_id WHERE b.device_id = "
      "   $1::uuid AND b.kind = 'placement' AND b.released_at IS NULL LIMIT 1), "
      "(SELECT b.id::text FROM bookings b WHERE b.device_id = $1::uuid "
      "   AND b.kind = 'move_hold' AND b.released_at IS NULL LIMIT 1), "
      "(SELECT id::text FROM moves WHERE device_id = $1::uuid AND " +
          devices::OpenMoveCondition() + " LIMIT 1)",
      device_id);
  DeviceUse use;
  use.held_by_reservation = Text(r[0]);
  use.bound_to_service = Text(r[1]);
  use.placed_by_booking = Text(r[2]);
  use.placed_in_rack = Text(r[3]);
  use.held_for_move = Text(r[4]);
  use.open_move = Text(r[5]);
  return use;
}

}  // namespace dcl::inventory
