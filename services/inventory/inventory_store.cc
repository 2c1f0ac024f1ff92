#include "services/inventory/inventory_store.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
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

// ---- Racks ----

const std::string& RackColumns() {
  static const std::string* columns = new std::string(
      absl::StrCat("r.id::text, r.site_id::text, r.name, r.first_unit, r.unit_count, r.numbering, "
                   "r.has_rear, r.power_budget_watts, r.weight_budget_kg, ",
                   SqlMicros("r.created_at")));
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
  return rack;
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
          std::to_string(rack.weight_budget_kg)};
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
  pqxx::result named = tx.exec_params("SELECT name FROM racks WHERE id = $1::uuid", rack_id);
  const std::string rack_name = named.empty() ? rack.name : Text(named[0][0]);
  if (name == "rack_power_within_budget" || name == "rack_weight_within_budget") {
    const bool power = name == "rack_power_within_budget";
    const std::string unit = power ? "W" : "kg";
    const int budget = power ? rack.power_budget_watts : rack.weight_budget_kg;
    // The rack's load as the rebuild counted it: a device booking's fixed figure, or its
    // device's where the rack had no budget when it was booked; a reservation's own.
    pqxx::result r = tx.exec_params(
        absl::StrCat("SELECT coalesce(sum(coalesce(b.", power ? "power_watts" : "weight_kg",
                     ", d.", power ? "power_draw_watts" : "weight_kg",
                     ")), 0) FROM bookings b LEFT JOIN devices d ON d.id = b.device_id "
                     "WHERE b.rack_id = $1::uuid AND b.released_at IS NULL AND "
                     "((b.kind IN ('placement', 'move_hold') AND b.device_id IS NOT NULL) "
                     "OR b.kind = 'reservation')"),
        rack_id);
    const std::string load = r.empty() ? "?" : Text(r[0][0]);
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
  pqxx::result r = tx.exec_params(
      absl::StrCat("SELECT d.id::text FROM bookings b JOIN devices d ON d.id = b.device_id "
                   "WHERE b.rack_id = $1::uuid AND b.released_at IS NULL "
                   "AND b.kind IN ('placement', 'move_hold') AND d.",
                   field, " IS NULL ORDER BY d.id LIMIT 1"),
      rack_id);
  const std::string device = r.empty() ? "" : Text(r[0][0]);
  return Error(absl::StatusCode::kFailedPrecondition,
               power ? v1::POWER_UNKNOWN : v1::WEIGHT_UNKNOWN,
               absl::StrCat("device ", device, " in rack ", rack_name, " has no ",
                            power ? "power" : "weight", " figure: set its ", field,
                            " before budgeting the rack"))
      .Meta("rack_name", rack_name)
      .Meta("device_id", device)
      .Meta("missing", field)
      .status();
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
      SqlMicros("d.decommissioned_at"), ", ", SqlMicros("d.created_at")));
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

absl::Status DeviceViolation(pqxx::transaction_base& tx, const std::string& org_id,
                             const DeviceFields& device, const GuardedResult& result) {
  if (result.violated_constraint == kSerialUnique) {
    pqxx::result r = tx.exec_params(
        "SELECT id::text FROM devices WHERE org_id = $1::uuid AND serial = $2", org_id,
        device.serial);
    return AlreadyExists("device", "serial", device.serial, r.empty() ? "" : Text(r[0][0]));
  }
  if (result.violated_constraint == kDeviceSiteFk) return NotFound("site", device.site_id);
  return UnexpectedViolation("device", result);
}

absl::StatusOr<v1::Device> Reread(pqxx::transaction_base& tx, const std::string& org_id,
                                  const std::string& device_id) {
  std::optional<DeviceRecord> d = FindDevice(tx, org_id, device_id, false);
  if (!d) return NotFound("device", device_id);
  return d->proto;
}

}  // namespace

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
  return RackFromRow(r[0]);
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
      "weight_budget_kg = nullif($1[9]::integer, 0) "
      "WHERE id = $1[10]::uuid AND org_id = $1[1]::uuid RETURNING id::text",
      args);
  if (result.violated()) {
    if (std::optional<absl::Status> refusal = BudgetBelowLoad(tx, rack_id, rack, result)) {
      return *refusal;
    }
    return RackViolation(tx, org_id, rack, result);
  }
  std::optional<v1::RackRecord> stored = FindRack(tx, org_id, rack_id, false);
  if (!stored || result.affected == 0) return NotFound("rack", rack_id);
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
      "height_units, depth_class, process_state, power_draw_watts, weight_kg) VALUES "
      "($1[1]::uuid, $1[2]::uuid, $1[3], $1[4], $1[5], nullif($1[6], ''), $1[7]::integer, $1[8], "
      "$1[9], $1[10]::integer, $1[11]::integer) RETURNING id::text",
      {org_id, device.site_id, device.vendor, device.model, device.hardware_profile,
       device.serial, std::to_string(device.height_units), device.depth_class,
       device.process_state, OptionalInt(device.power_draw_watts),
       OptionalInt(device.weight_kg)});
  if (result.violated()) return DeviceViolation(tx, org_id, device, result);
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
      "power_draw_watts = $1[9]::integer, weight_kg = $1[10]::integer "
      "WHERE id = $1[2]::uuid AND org_id = $1[1]::uuid RETURNING id::text",
      {org_id, device_id, device.vendor, device.model, device.hardware_profile, device.serial,
       std::to_string(device.height_units), device.depth_class,
       OptionalInt(device.power_draw_watts), OptionalInt(device.weight_kg)});
  if (result.violated()) return DeviceViolation(tx, org_id, device, result);
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
