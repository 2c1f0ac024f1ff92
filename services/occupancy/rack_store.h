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
#include <vector>

#include "absl/status/statusor.h"
#include "dcl/v1/occupancy.pb.h"

namespace dcl::occupancy {

// The rack: geometry, budgets, and every active slot (unit order, front before rear) with the
// booking and kind occupying it.
absl::StatusOr<v1::Rack> LoadRack(pqxx::transaction_base& tx, const std::string& org_id,
                                  const std::string& rack_id);

// An active booking of a rack with the figures of the device it holds, if any.
struct HeldItem {
  std::string booking_id;
  v1::BookingKind kind = v1::BOOKING_KIND_UNSPECIFIED;
  std::string device_id;  // "" when the booking names no device
  std::optional<int64_t> power_watts;
  std::optional<int64_t> weight_kg;
};

// What a rack's capacity is computed from, read in one snapshot.
struct RackLoad {
  int unit_count = 0;
  bool has_rear = false;
  std::optional<int64_t> power_budget_watts;  // none: no budget recorded
  std::optional<int64_t> weight_budget_kg;
  int taken_front_units = 0;  // active slots: a lapsed reservation not yet released counts
  int taken_rear_units = 0;
  // Every active booking, placements first, then by creation.
  std::vector<HeldItem> held;
};
absl::StatusOr<RackLoad> LoadRackLoad(pqxx::transaction_base& tx, const std::string& org_id,
                                      const std::string& rack_id);

}  // namespace dcl::occupancy

#endif  // DCL_SERVICES_OCCUPANCY_RACK_STORE_H_
