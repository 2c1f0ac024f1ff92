// Reads for the delivery planner: every rack of a site with its active slots and the figures of
// what stands in it, and the registered devices a delivery names. Read-only, inside the caller's
// transaction, scoped by organization (another organization's site, rack or device is NOT_FOUND
// with the same words as an unknown id). Bookings are written only by booking_store.h.
#ifndef DCL_SERVICES_OCCUPANCY_DELIVERY_STORE_H_
#define DCL_SERVICES_OCCUPANCY_DELIVERY_STORE_H_

#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "services/occupancy/delivery_plan.h"

namespace dcl::occupancy {

// Every rack of the site, ordered by name: geometry, budgets, every active slot (a lapsed
// reservation the sweeper has not released yet counts as taken), per active booking one figure
// per dimension as the database counts it (CountedFigures in rack_store.h: a device booking its
// own, a reservation its own or none, "units only"; a blocking not at all), and the budget
// rows' allowance and unknown load. On a rack without budget rows a device is counted once, and
// a budget with a device whose figure is unknown reads as load unknown (unknown is never free).
// Unknown site → NOT_FOUND.
absl::StatusOr<std::vector<DeliveryRack>> LoadDeliveryRacks(pqxx::transaction_base& tx,
                                                            const std::string& org_id,
                                                            const std::string& site_id);

// The registered devices as planner items, in the order given. Refused: unknown or another
// organization's (NOT_FOUND), at another site (WRONG_STATE), decommissioned
// (DEVICE_DECOMMISSIONED), already placed (DEVICE_ALREADY_PLACED), named twice (INVALID_INPUT).
absl::StatusOr<std::vector<DeliveryItem>> LoadDeliveryDevices(
    pqxx::transaction_base& tx, const std::string& org_id, const std::string& site_id,
    const std::vector<std::string>& device_ids);

}  // namespace dcl::occupancy

#endif  // DCL_SERVICES_OCCUPANCY_DELIVERY_STORE_H_
