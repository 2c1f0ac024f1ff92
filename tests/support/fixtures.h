// Seed data for tests, written with plain SQL (not through the code under test): organizations
// with the module switched on or off, sites, racks of any geometry, devices, and tokens.
#ifndef DCL_TESTS_SUPPORT_FIXTURES_H_
#define DCL_TESTS_SUPPORT_FIXTURES_H_

#include <string>

#include "services/common/auth.h"
#include "tests/support/test_db.h"

namespace dcl::testing {

// Switches the datacenter module on globally and, per organization, as given.
std::string CreateOrg(const TestDatabase& db, const std::string& name, bool module_enabled = true);
std::string CreateSite(const TestDatabase& db, const std::string& org_id, const std::string& name);

struct RackSpec {
  std::string name = "R1";
  int first_unit = 1;
  int unit_count = 42;
  std::string numbering = "ascending";
  bool has_rear = true;
  int power_budget_watts = 0;  // 0 = NULL
  int weight_budget_kg = 0;    // 0 = NULL
};
std::string CreateRack(const TestDatabase& db, const std::string& org_id,
                       const std::string& site_id, const RackSpec& spec = {});

struct DeviceSpec {
  std::string vendor = "Dell";
  std::string model = "R650";
  std::string hardware_profile = "";
  int height_units = 1;
  std::string depth_class = "full";
  std::string process_state = "normal";
  int power_draw_watts = -1;  // -1 = NULL (unknown)
  int weight_kg = -1;         // -1 = NULL (unknown)
};
std::string CreateDevice(const TestDatabase& db, const std::string& org_id,
                         const std::string& site_id, const DeviceSpec& spec = {});

// Gives a rack a power and weight budget (0 = none) as racks had them before schema 0039 decided
// them: the columns set with the triggers off, then the rack adopted as the migration adopts
// it, so a rack over its budget or with devices of unknown figures stands as it would after an
// upgrade (rack_budgets' allowance and unknown).
void BudgetRackBeforeTheRule(const TestDatabase& db, const std::string& rack_id,
                             int power_budget_watts, int weight_budget_kg = 0);

// A token in clear text for (org, role), created through the real token path.
std::string CreateTokenFor(const TestDatabase& db, const std::string& org_id, Role role,
                           const std::string& subject = "");

// A Principal as the gate would produce it, for calling domain logic directly.
Principal PrincipalFor(const std::string& org_id, Role role, const std::string& subject = "");

}  // namespace dcl::testing

#endif  // DCL_TESTS_SUPPORT_FIXTURES_H_
