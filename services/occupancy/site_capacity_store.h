// Reads of a site's capacity figures (site_capacity.h computes from them): its racks with their
// slots and budget rows, the forecast window's bookings per rack, and its typical device. One
// function, inside the caller's transaction, so that every figure comes from one snapshot.
// Read-only; bookings are written only by booking_store.h.
#ifndef DCL_SERVICES_OCCUPANCY_SITE_CAPACITY_STORE_H_
#define DCL_SERVICES_OCCUPANCY_SITE_CAPACITY_STORE_H_

#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "services/occupancy/site_capacity.h"

namespace dcl::occupancy {

struct SiteFigures {
  std::vector<RackFigures> racks;  // by name
  // The lower median (site_capacity.h, LowerMedian) of the devices with an active placement at
  // the site that have the figure; 0 when none has it.
  TypicalDevice median_device;
};

// The site's figures. `org_id` empty: any organization's site (the sweeper's gauges); otherwise
// another organization's site is NOT_FOUND with the same words as an unknown one. The window
// ends at the database's now().
absl::StatusOr<SiteFigures> LoadSiteFigures(pqxx::transaction_base& tx, const std::string& org_id,
                                            const std::string& site_id, int window_days);

// Every site's id, by id, at most `limit` of them (the sweeper's gauges).
std::vector<std::string> ListSiteIds(pqxx::transaction_base& tx, int limit);

}  // namespace dcl::occupancy

#endif  // DCL_SERVICES_OCCUPANCY_SITE_CAPACITY_STORE_H_
