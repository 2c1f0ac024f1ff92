// Racks as GetRack returns them, built by hand for the renderer tests: a geometry, then bookings
// given by kind, device and the slots they hold.
#ifndef DCL_TESTS_ADMIN_RACK_TEST_RACKS_H_
#define DCL_TESTS_ADMIN_RACK_TEST_RACKS_H_

#include <initializer_list>
#include <string>

#include "dcl/v1/occupancy.pb.h"

namespace dcl::testing {

inline v1::Rack MakeRack(const std::string& name, int first_unit, int unit_count,
                         v1::Numbering numbering, bool has_rear) {
  v1::Rack rack;
  rack.set_id("00000000-0000-4000-8000-000000000201");
  rack.set_site_id("00000000-0000-4000-8000-000000000101");
  rack.set_name(name);
  rack.mutable_geometry()->set_first_unit(first_unit);
  rack.mutable_geometry()->set_unit_count(unit_count);
  rack.mutable_geometry()->set_numbering(numbering);
  rack.mutable_geometry()->set_has_rear(has_rear);
  return rack;
}

// One slot per unit of `units` on `side` (SIDE_UNSPECIFIED: front and rear, as a full-depth
// device or a both-sides block holds them).
inline void Book(v1::Rack& rack, const std::string& booking_id, v1::BookingKind kind,
                 const std::string& device_id, v1::Side side, std::initializer_list<int> units) {
  for (v1::Side s : {v1::SIDE_FRONT, v1::SIDE_REAR}) {
    if (side != v1::SIDE_UNSPECIFIED && side != s) continue;
    for (int unit : units) {
      v1::ElevationSlot* slot = rack.add_occupied();
      slot->mutable_slot()->set_side(s);
      slot->mutable_slot()->set_unit(unit);
      slot->set_booking_id(booking_id);
      slot->set_kind(kind);
      slot->set_device_id(device_id);
    }
  }
}

}  // namespace dcl::testing

#endif  // DCL_TESTS_ADMIN_RACK_TEST_RACKS_H_
