// "Where is my server?" must never tell a former customer where the next customer's machine is,
// nor show a machine of another organization.
#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"
#include "services/common/status.h"
#include "services/reservation/service_location.h"
#include "tests/support/fixtures.h"
#include "tests/support/test_db.h"

namespace dcl::reservation {
namespace {

using testing::PrincipalFor;

struct World {
  testing::TestDatabase db;
  std::unique_ptr<DbPool> pool = db.MakePool(2);
  std::string org = testing::CreateOrg(db, "hoster");
  std::string site = testing::CreateSite(db, org, "FRA1");
  std::string rack = testing::CreateRack(db, org, site);

  std::string Service(const std::string& customer) {
    return db.Scalar(absl::StrCat("INSERT INTO services (org_id, kind, customer) VALUES ('", org,
                                  "', 'dedicated', '", customer, "') RETURNING id"));
  }
  // A placement of `device` at front+rear `unit` of `rack_id`, written as the booking path would.
  void Place(const std::string& owner_org, const std::string& owner_site,
             const std::string& rack_id, const std::string& device, int unit) {
    const std::string booking = db.Scalar(absl::StrCat(
        "INSERT INTO bookings (org_id, site_id, rack_id, kind, device_id, front, rear, "
        "first_unit, last_unit, created_by) VALUES ('",
        owner_org, "', '", owner_site, "', '", rack_id, "', 'placement', '", device,
        "', true, true, ", unit, ", ", unit, ", 'test') RETURNING id"));
    db.Exec(absl::StrCat("INSERT INTO booking_slots (booking_id, rack_id, side, unit) VALUES ('",
                         booking, "', '", rack_id, "', 'front', ", unit, "), ('", booking, "', '",
                         rack_id, "', 'rear', ", unit, ")"));
  }
  void Bind(const std::string& binding_org, const std::string& service, const std::string& device,
            bool ended) {
    db.Exec(absl::StrCat(
        "INSERT INTO service_bindings (org_id, service_id, device_id, started_at, ended_at) "
        "VALUES ('", binding_org, "', '", service, "', '", device, "', now() - interval '1 day', ",
        ended ? "now() - interval '1 hour'" : "NULL", ")"));
  }
};

TEST_CASE("a former customer does not learn where the next customer's machine is") {
  World w;
  const std::string device = testing::CreateDevice(w.db, w.org, w.site);
  w.Place(w.org, w.site, w.rack, device, 9);
  const std::string alice_service = w.Service("alice");
  const std::string bob_service = w.Service("bob");
  w.Bind(w.org, alice_service, device, /*ended=*/true);   // alice cancelled last month
  w.Bind(w.org, bob_service, device, /*ended=*/false);    // the machine now serves bob

  auto bob = FindServiceLocation(*w.pool, PrincipalFor(w.org, Role::kCustomer, "bob"),
                                 bob_service);
  REQUIRE(bob.ok());
  CHECK(bob->rack_id() == w.rack);
  CHECK(bob->first_unit() == 9);

  auto alice = FindServiceLocation(*w.pool, PrincipalFor(w.org, Role::kCustomer, "alice"),
                                   alice_service);
  CHECK(alice.status().code() == absl::StatusCode::kNotFound);

  // Nor may alice ask for bob's service directly, nor a customer token without a subject.
  CHECK(FindServiceLocation(*w.pool, PrincipalFor(w.org, Role::kCustomer, "alice"), bob_service)
            .status()
            .code() == absl::StatusCode::kNotFound);
  CHECK(FindServiceLocation(*w.pool, PrincipalFor(w.org, Role::kCustomer, ""), bob_service)
            .status()
            .code() == absl::StatusCode::kNotFound);
  CHECK(CreateToken(*w.pool, w.org, Role::kCustomer, "", "no subject").status().code() ==
        absl::StatusCode::kInvalidArgument);
}

TEST_CASE("a binding that points at another organization's device reveals nothing of it") {
  World w;
  const std::string other_org = testing::CreateOrg(w.db, "neighbour");
  const std::string other_site = testing::CreateSite(w.db, other_org, "AMS1");
  const std::string other_rack = testing::CreateRack(w.db, other_org, other_site);
  const std::string foreign_device = testing::CreateDevice(w.db, other_org, other_site);
  w.Place(other_org, other_site, other_rack, foreign_device, 20);
  const std::string service = w.Service("carol");
  // No constraint ties a binding's device to the binding's organization; only the read does.
  w.Bind(w.org, service, foreign_device, /*ended=*/false);

  auto carol = FindServiceLocation(*w.pool, PrincipalFor(w.org, Role::kCustomer, "carol"),
                                   service);
  CHECK(carol.status().code() == absl::StatusCode::kNotFound);
}

TEST_CASE("commerce sees any service of its organization; other organizations see none") {
  World w;
  const std::string device = testing::CreateDevice(w.db, w.org, w.site);
  w.Place(w.org, w.site, w.rack, device, 3);
  const std::string service = w.Service("dave");
  w.Bind(w.org, service, device, /*ended=*/false);
  auto commerce = FindServiceLocation(*w.pool, PrincipalFor(w.org, Role::kCommerce), service);
  REQUIRE(commerce.ok());
  CHECK(commerce->sides_size() == 2);
  const std::string stranger = testing::CreateOrg(w.db, "stranger");
  CHECK(FindServiceLocation(*w.pool, PrincipalFor(stranger, Role::kCommerce), service)
            .status()
            .code() == absl::StatusCode::kNotFound);
  CHECK(FindServiceLocation(*w.pool, PrincipalFor(w.org, Role::kCommerce), "nope").status().code() ==
        absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace dcl::reservation
