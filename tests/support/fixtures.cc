#include "tests/support/fixtures.h"

#include <stdexcept>

#include "absl/strings/str_cat.h"

namespace dcl::testing {

namespace {

std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += '\'';
    out += c;
  }
  return out + "'";
}

std::string NullOr(int value, int null_marker) {
  return value == null_marker ? "NULL" : absl::StrCat(value);
}

}  // namespace

std::string CreateOrg(const TestDatabase& db, const std::string& name, bool module_enabled) {
  const std::string id = db.Scalar(
      absl::StrCat("INSERT INTO organizations (name) VALUES (", Quote(name), ") RETURNING id"));
  db.Exec("UPDATE feature_settings SET enabled = true WHERE feature = 'datacenter'");
  db.Exec(absl::StrCat(
      "INSERT INTO organization_feature_settings (org_id, feature, enabled) VALUES ('", id,
      "', 'datacenter', ", module_enabled ? "true" : "false", ")"));
  return id;
}

std::string CreateSite(const TestDatabase& db, const std::string& org_id,
                       const std::string& name) {
  return db.Scalar(absl::StrCat("INSERT INTO sites (org_id, name) VALUES ('", org_id, "', ",
                                Quote(name), ") RETURNING id"));
}

std::string CreateRack(const TestDatabase& db, const std::string& org_id,
                       const std::string& site_id, const RackSpec& spec) {
  return db.Scalar(absl::StrCat(
      "INSERT INTO racks (org_id, site_id, name, first_unit, unit_count, numbering, has_rear, "
      "power_budget_watts, weight_budget_kg) VALUES ('",
      org_id, "', '", site_id, "', ", Quote(spec.name), ", ", spec.first_unit, ", ",
      spec.unit_count, ", ", Quote(spec.numbering), ", ", spec.has_rear ? "true" : "false", ", ",
      NullOr(spec.power_budget_watts, 0), ", ", NullOr(spec.weight_budget_kg, 0),
      ") RETURNING id"));
}

std::string CreateDevice(const TestDatabase& db, const std::string& org_id,
                         const std::string& site_id, const DeviceSpec& spec) {
  return db.Scalar(absl::StrCat(
      "INSERT INTO devices (org_id, site_id, vendor, model, hardware_profile, height_units, "
      "depth_class, process_state, power_draw_watts, weight_kg) VALUES ('",
      org_id, "', '", site_id, "', ", Quote(spec.vendor), ", ", Quote(spec.model), ", ",
      Quote(spec.hardware_profile), ", ", spec.height_units, ", ", Quote(spec.depth_class), ", ",
      Quote(spec.process_state), ", ", NullOr(spec.power_draw_watts, -1), ", ",
      NullOr(spec.weight_kg, -1), ") RETURNING id"));
}

void BudgetRackBeforeTheRule(const TestDatabase& db, const std::string& rack_id,
                             int power_budget_watts, int weight_budget_kg) {
  db.Exec(absl::StrCat(
      "SET LOCAL session_replication_role = replica; UPDATE racks SET power_budget_watts = ",
      NullOr(power_budget_watts, 0), ", weight_budget_kg = ", NullOr(weight_budget_kg, 0),
      " WHERE id = '", rack_id,
      "'; SET LOCAL session_replication_role = origin; SELECT dcl_rack_budgets_adopt('", rack_id,
      "')"));
}

std::string CreateTokenFor(const TestDatabase& db, const std::string& org_id, Role role,
                           const std::string& subject) {
  auto pool = db.MakePool(1);
  auto issued = CreateToken(*pool, org_id, role, subject, "test");
  if (!issued.ok()) throw std::runtime_error(issued.status().ToString());
  return issued->token;
}

Principal PrincipalFor(const std::string& org_id, Role role, const std::string& subject) {
  Principal principal;
  principal.token_id = "00000000-0000-0000-0000-000000000000";
  principal.org_id = org_id;
  principal.role = role;
  principal.subject = subject;
  principal.module_enabled = true;
  return principal;
}

}  // namespace dcl::testing
