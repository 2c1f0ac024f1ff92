#include "services/devices/device_custody.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "services/common/db.h"
#include "services/move_workflow/move_state.h"

namespace dcl::devices {

const std::string& OpenMoveCondition() {
  static const std::string* condition = [] {
    std::vector<std::string> terminal;
    for (const moves::StateTransitions& row : moves::kTransitions) {
      if (moves::IsTerminal(row.state)) terminal.push_back(absl::StrCat("'", row.name, "'"));
    }
    return new std::string(absl::StrCat("state NOT IN (", absl::StrJoin(terminal, ", "), ")"));
  }();
  return *condition;
}

absl::StatusOr<std::optional<DeviceRow>> LockDevice(pqxx::transaction_base& tx,
                                                    const std::string& org_id,
                                                    const std::string& device_id) {
  pqxx::result r = ExecCached(tx,
                              "SELECT id::text, site_id::text, process_state FROM devices "
                              "WHERE id = $1::uuid AND org_id = $2::uuid FOR UPDATE",
                              device_id, org_id);
  if (r.empty()) return std::optional<DeviceRow>();
  return std::optional<DeviceRow>(
      DeviceRow{r[0][0].as<std::string>(), r[0][1].as<std::string>(), r[0][2].as<std::string>()});
}

std::optional<std::string> FindOpenMove(pqxx::transaction_base& tx, const std::string& device_id) {
  static const std::string* sql = new std::string(absl::StrCat(
      "SELECT id::text FROM moves WHERE device_id = $1::uuid AND ", OpenMoveCondition()));
  pqxx::result r = ExecCached(tx, *sql, device_id);
  if (r.empty()) return std::nullopt;
  return r[0][0].as<std::string>();
}

}  // namespace dcl::devices
