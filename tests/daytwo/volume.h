// A generated dcl database of a chosen size, for the day-two proofs (migration under load, point-
// in-time restore) at small volume in the tests and at production volume in their scripts: one
// organization and one site with `devices` machines, racks, four of every five machines placed
// (2U, full depth: four slot rows each), and released placements as history until the booking
// slot rows reach `booking_slots`. Written with set-based SQL as the owner (not through the
// services, which would take hours at production volume); every constraint of the schema holds.
#ifndef DCL_TESTS_DAYTWO_VOLUME_H_
#define DCL_TESTS_DAYTWO_VOLUME_H_

#include <cstdint>
#include <string>
#include <vector>

namespace dcl::daytwo {

struct VolumeSpec {
  int64_t devices = 2000;
  int64_t booking_slots = 10000;
  int free_racks = 20;  // racks left empty for PlaceDevice
};

struct Volume {
  std::string org_id;
  std::string site_id;
  std::string commerce_token;  // Reserve, Cancel
  std::string operator_token;  // PlaceDevice
  std::vector<std::string> free_racks;
  std::vector<std::string> unplaced_devices;  // not placed anywhere, up to 5,000
  int64_t devices = 0;
  int64_t booking_slots = 0;
  double seconds = 0;  // to generate
};

// Generates the volume into the migrated, empty database at `url` (as its owner); throws on
// any failure.
Volume GenerateVolume(const std::string& url, const VolumeSpec& spec);

}  // namespace dcl::daytwo

#endif  // DCL_TESTS_DAYTWO_VOLUME_H_
