// Seed data for sweeper tests and the sweeper benchmark, written with plain SQL (not through the
// code under test): an organization with a site and a dedicated service, and reservations in
// any state with any expiry, each on its own fresh device.
#ifndef DCL_TESTS_SWEEPER_HOLDS_SEED_H_
#define DCL_TESTS_SWEEPER_HOLDS_SEED_H_

#include <cstdint>
#include <optional>
#include <string>

#include <pqxx/pqxx>

namespace dcl::testing {

struct HoldsOrg {
  std::string org_id;
  std::string site_id;
  std::string service_id;  // a dedicated service, for converted rows
};

HoldsOrg SeedHoldsOrg(pqxx::connection& conn, const std::string& name);

// Inserts `count` reservations in `state` ('held', 'converted', 'cancelled', 'expired'), keys
// `key_prefix` + 1..count, created two hours ago and expiring `expires_in_seconds` from the
// database's now (negative: already past; > -7200). Ended states carry a consistent end.
void InsertReservations(pqxx::connection& conn, const HoldsOrg& org, int64_t count,
                        const std::string& state, int expires_in_seconds,
                        const std::string& key_prefix);

// Another site of the organization, with `devices` free machines; its id.
std::string InsertSiteWithDevices(pqxx::connection& conn, const HoldsOrg& org,
                                  const std::string& name, int devices);

// A 42-unit rack with a rear at the organization's site; its id.
std::string InsertRack(pqxx::connection& conn, const HoldsOrg& org, const std::string& name);
// A device at the organization's site; its id.
std::string InsertDevice(pqxx::connection& conn, const HoldsOrg& org);

// A booking header of `kind` on the front of units first..last, with one slot row per unit;
// expiring `expires_in_seconds` from the database's now, or never when nullopt. `device_id`
// may be empty except for placements. Its id.
std::string InsertBooking(pqxx::connection& conn, const HoldsOrg& org, const std::string& rack_id,
                          const std::string& kind, int first_unit, int last_unit,
                          std::optional<int> expires_in_seconds,
                          const std::string& device_id = "");

}  // namespace dcl::testing

#endif  // DCL_TESTS_SWEEPER_HOLDS_SEED_H_
