#include "tests/support/site.h"

namespace dcl::testing {

Site::Site(const std::vector<RackSpec>& rack_specs) {
  org = CreateOrg(db, "acme");
  site = CreateSite(db, org, "FRA1");
  for (const RackSpec& spec : rack_specs) racks.push_back(CreateRack(db, org, site, spec));
  if (!racks.empty()) rack = racks.front();
  op = PrincipalFor(org, Role::kDcOperator);
}

std::string Site::Device(int height, const std::string& depth, int power) {
  DeviceSpec spec;
  spec.height_units = height;
  spec.depth_class = depth;
  spec.power_draw_watts = power;
  return CreateDevice(db, org, site, spec);
}

int64_t Site::Bookings() const { return db.Count("SELECT count(*) FROM bookings"); }

int64_t Site::ActiveSlots() const {
  return db.Count("SELECT count(*) FROM booking_slots WHERE released_at IS NULL");
}

}  // namespace dcl::testing
