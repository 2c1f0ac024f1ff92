// Custody of a device between the services that change where it stands: the row lock that
// orders them, and whether a move has the device open. The occupancy service (releasing the
// placement a move starts from) and the move service (starting, advancing, ending a move) both
// ask here, so neither runs SQL against the other's tables.
//
// An open move is a move in a state the transition table
// (services/move_workflow/move_state.h) lets go on; OpenMoveCondition() derives that from the
// table's terminal states (the inventory's device-use read embeds it in its one statement). The partial unique index
// moves_one_open_per_device (schema/migrations/0004_moves.sql) states the same set and is the
// boundary; tests/devices/open_move_index_test.cc holds them together.
//
// Free functions inside the caller's transaction.
#ifndef DCL_SERVICES_DEVICES_DEVICE_CUSTODY_H_
#define DCL_SERVICES_DEVICES_DEVICE_CUSTODY_H_

#include <optional>
#include <pqxx/pqxx>
#include <string>

#include "absl/status/statusor.h"

namespace dcl::devices {

// The device, locked FOR UPDATE for the rest of the transaction: a StartMove, an Advance and a
// ReleaseBooking of one device queue here and see each other's committed work.
struct DeviceRow {
  std::string id;
  std::string site_id;
  std::string process_state;
};
// Empty when the organization has no such device.
absl::StatusOr<std::optional<DeviceRow>> LockDevice(pqxx::transaction_base& tx,
                                                    const std::string& org_id,
                                                    const std::string& device_id);

// The id of the device's open move, if any.
std::optional<std::string> FindOpenMove(pqxx::transaction_base& tx, const std::string& device_id);

// The SQL condition on a moves row's `state` column that holds for an open move:
// "state NOT IN (<the terminal states of the transition table>)".
const std::string& OpenMoveCondition();

}  // namespace dcl::devices

#endif  // DCL_SERVICES_DEVICES_DEVICE_CUSTODY_H_
