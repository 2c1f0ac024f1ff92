// "Where is my server?": the physical location (site, rack, units) of one of the caller's
// services. Read-only: who may see which service is decided here, the reads themselves are the
// reservation store's (HasService, LocateBoundMachine), which reads the occupancy aggregate's
// placements without writing them.
#ifndef DCL_SERVICES_RESERVATION_SERVICE_LOCATION_H_
#define DCL_SERVICES_RESERVATION_SERVICE_LOCATION_H_

#include <string>

#include "absl/status/statusor.h"
#include "dcl/v1/reservation.pb.h"
#include "services/common/db.h"
#include "services/common/principal.h"

namespace dcl::reservation {

// The location of `service_id` for `principal`. A customer sees only services whose customer is
// the token's subject; any other role sees every service of its organization. NOT_FOUND when the
// service is not the caller's, or has no machine bound and placed right now.
absl::StatusOr<v1::ServiceLocation> FindServiceLocation(DbPool& pool, const Principal& principal,
                                                        const std::string& service_id);

}  // namespace dcl::reservation

#endif  // DCL_SERVICES_RESERVATION_SERVICE_LOCATION_H_
