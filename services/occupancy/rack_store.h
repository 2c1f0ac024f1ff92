// Reads of one rack for the occupancy service: its geometry and elevation (GetRack) and the
// figures its capacity is computed from (GetRackCapacity). Read-only, free functions inside the
// caller's transaction, scoped by organization: another organization's rack is NOT_FOUND with
// the same words as an unknown one. Bookings are written only by booking_store.h.
#ifndef DCL_SERVICES_OCCUPANCY_RACK_STORE_H_
#define DCL_SERVICES_OCCUPANCY_RACK_STORE_H_

#include <cstdint>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "dcl/v1/occupancy.pb.h"

namespace dcl::occupancy {

// The rack: geometry, budgets, and every active slot (unit order, front before rear) with the
// booking and kind occupying it.
absl::StatusOr<v1::Rack> LoadRack(pqxx::transaction_base& tx, const std::string& org_id,
                                  const std::string& rack_id);

// The figures one active booking counts in its rack's power and weight, as the database counts
// them (schema 0039, dcl_booking_contribution): a device booking (placement, move hold) its
// own, fixed from the device when it was booked; a rack reservation the figures its writer gave
// it (none: it holds units only); a blocking nothing. On a rack without budget rows the database
// fixes no device booking's figures, so there the device's current figures are read instead.
// An unset figure counts 0; for a device booking it is unknown.
struct HeldFigures {
  bool counted = false;  // false: a blocking, which holds no device and no figure
  std::optional<int64_t> power_watts;
  std::optional<int64_t> weight_kg;
};
HeldFigures CountedFigures(v1::BookingKind kind, const std::string& device_id,
                           bool rack_has_budget_rows, std::optional<int64_t> booking_power_watts,
                           std::optional<int64_t> booking_weight_kg,
                           std::optional<int64_t> device_power_watts,
                           std::optional<int64_t> device_weight_kg);

// An active booking of a rack with the figures it counts (CountedFigures).
struct HeldItem {
  std::string booking_id;
  v1::BookingKind kind = v1::BOOKING_KIND_UNSPECIFIED;
  std::string device_id;  // "" when the booking names no device
  std::optional<int64_t> power_watts;
  std::optional<int64_t> weight_kg;
};

// One dimension's budget row (rack_budgets, schema 0039): what the database judges an addition
// by besides the sum.
struct BudgetRow {
  int64_t allowance = 0;  // a rack over its budget when the row was built may stay this far over
  int64_t unknown = 0;    // device bookings counted without the figure: every addition refused
};

// One power feed with its rows (schema 0038): its load with every feed up, and with each other
// feed lost.
struct FeedLoad {
  std::string name;
  int64_t voltage = 0;
  int64_t amperage = 0;
  std::string phase;
  int max_utilization_percent = 0;
  int64_t available_watts = 0;
  int64_t used_watts = 0;
  std::vector<std::pair<std::string, int64_t>> carried_if_lost;  // lost feed's name, load
};

// Switch ports of one speed (schema 0040's 'ports' row): what the rack's switches offer and
// what its device bookings need.
struct PortLoad {
  std::string speed;
  int64_t offered = 0;
  int64_t used = 0;
};

// What a rack's capacity is computed from, read in one snapshot.
struct RackLoad {
  int unit_count = 0;
  bool has_rear = false;
  std::optional<int64_t> power_budget_watts;  // none: no budget recorded
  std::optional<int64_t> weight_budget_kg;
  std::optional<int64_t> cooling_budget_watts;
  std::string airflow;          // "" none recorded
  std::vector<FeedLoad> feeds;  // by name
  int taken_front_units = 0;    // active slots: a lapsed reservation not yet released counts
  int taken_rear_units = 0;
  bool has_budget_rows = false;  // any rack_budgets row (feeds, cooling, power, weight)
  std::optional<BudgetRow> power_row;
  std::optional<BudgetRow> weight_row;
  std::optional<BudgetRow> cooling_row;
  std::vector<PortLoad> ports;  // one per speed of the vocabulary; empty: no ports recorded
  // Every active booking, placements first, then by creation.
  std::vector<HeldItem> held;
};
absl::StatusOr<RackLoad> LoadRackLoad(pqxx::transaction_base& tx, const std::string& org_id,
                                      const std::string& rack_id);

}  // namespace dcl::occupancy

#endif  // DCL_SERVICES_OCCUPANCY_RACK_STORE_H_
