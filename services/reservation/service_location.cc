#include "services/reservation/service_location.h"

#include "services/common/status.h"
#include "services/common/validation.h"

namespace dcl::reservation {

absl::StatusOr<v1::ServiceLocation> FindServiceLocation(DbPool& pool, const Principal& principal,
                                                        const std::string& service_id) {
  if (absl::Status valid = CheckId("service_id", service_id); !valid.ok()) return valid;
  // A customer sees its own services only: compared always, so an empty subject (which token
  // creation refuses) matches nothing rather than everything.
  const bool as_customer = principal.role == Role::kCustomer;
  return pool.Transact([&](pqxx::work& tx) -> absl::StatusOr<v1::ServiceLocation> {
    pqxx::result service = tx.exec_params(
        "SELECT 1 FROM services WHERE id = $1 AND org_id = $2 AND (NOT $3 OR customer = $4)",
        service_id, principal.org_id, as_customer, principal.subject);
    if (service.empty()) return NotFound("service", service_id);
    pqxx::result rows = tx.exec_params(
        "SELECT d.id, b.site_id, b.rack_id, r.name, b.first_unit, b.last_unit, b.front, b.rear "
        "FROM service_bindings sb "
        "JOIN devices d ON d.id = sb.device_id "
        "JOIN bookings b ON b.device_id = d.id AND b.kind = 'placement' "
        "                AND b.released_at IS NULL "
        "JOIN racks r ON r.id = b.rack_id "
        "WHERE sb.service_id = $1 "
        // Only the binding in force: an ended one points at a machine that now serves
        // someone else. And only the caller's organization, on the binding and the device: no
        // constraint ties a binding's device to the binding's organization.
        "  AND sb.ended_at IS NULL AND sb.org_id = $2 AND d.org_id = $2",
        service_id, principal.org_id);
    if (rows.empty()) return NotFound("location of service", service_id);
    const pqxx::row row = rows[0];
    v1::ServiceLocation location;
    location.set_service_id(service_id);
    location.set_device_id(row[0].as<std::string>());
    location.set_site_id(row[1].as<std::string>());
    location.set_rack_id(row[2].as<std::string>());
    location.set_rack_name(row[3].as<std::string>());
    location.set_first_unit(row[4].as<int>());
    location.set_last_unit(row[5].as<int>());
    if (row[6].as<bool>()) location.add_sides(v1::SIDE_FRONT);
    if (row[7].as<bool>()) location.add_sides(v1::SIDE_REAR);
    return location;
  });
}

}  // namespace dcl::reservation
