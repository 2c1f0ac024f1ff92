#include "services/reservation/service_location.h"

#include "services/common/status.h"
#include "services/common/validation.h"
#include "services/reservation/reservation_store.h"

namespace dcl::reservation {

absl::StatusOr<v1::ServiceLocation> FindServiceLocation(DbPool& pool, const Principal& principal,
                                                        const std::string& service_id) {
  if (absl::Status valid = CheckId("service_id", service_id); !valid.ok()) return valid;
  // A customer sees its own services only: compared always, so an empty subject (which token
  // creation refuses) matches nothing rather than everything.
  const bool as_customer = principal.role == Role::kCustomer;
  return pool.Transact([&](pqxx::work& tx) -> absl::StatusOr<v1::ServiceLocation> {
    if (!HasService(tx, principal.org_id, service_id, as_customer, principal.subject)) {
      return NotFound("service", service_id);
    }
    std::optional<v1::ServiceLocation> location =
        LocateBoundMachine(tx, principal.org_id, service_id);
    if (!location) return NotFound("location of service", service_id);
    return *std::move(location);
  });
}

}  // namespace dcl::reservation
