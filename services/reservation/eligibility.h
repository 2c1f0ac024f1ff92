// Whether a device may be reserved for a request, and if not, why: a pure function over plain
// facts, the one authority on candidate eligibility. The store's SQL only narrows the rows it
// fetches (an optimisation); every fetched device is classified here, both in pass 1 (the
// candidate list and the exclusion counts of a NO_CAPACITY answer) and again under the row lock
// in pass 2.
#ifndef DCL_SERVICES_RESERVATION_ELIGIBILITY_H_
#define DCL_SERVICES_RESERVATION_ELIGIBILITY_H_

#include <array>
#include <cstddef>
#include <string>

namespace dcl::reservation {

// What the request asks for; an empty vendor/model/profile means "any".
struct Criteria {
  std::string site_id;
  std::string vendor;
  std::string model;
  std::string hardware_profile;

  bool operator==(const Criteria& other) const {
    return site_id == other.site_id && vendor == other.vendor && model == other.model &&
           hardware_profile == other.hardware_profile;
  }
  bool operator!=(const Criteria& other) const { return !(*this == other); }
};

// A device's facts at one instant (one statement's snapshot).
struct DeviceFacts {
  std::string id;
  std::string site_id;
  std::string vendor;
  std::string model;
  std::string hardware_profile;
  std::string process_state;  // normal | staging | moving | in_transit
  bool bound = false;         // an active service binding exists
  bool held = false;          // a reservation in a holding state exists
  bool decommissioned = false;  // retired from inventory (devices.decommissioned_at set)
};

// Why a device dropped out; kEligible when it did not. The order of the enumerators is the
// order of the checks: a device reports the first reason that applies.
enum class Exclusion {
  kEligible,
  kWrongSite,
  kWrongVendor,
  kWrongModel,
  kWrongHardwareProfile,
  kDecommissioned,
  kStaging,
  kMoving,
  kInTransit,
  kUnknownProcessState,
  kBoundToService,
  kHeldByAnotherOrder,
};
inline constexpr size_t kExclusionCount = 12;

// The reason's name as clients see it ("wrong_site", "held_by_another_order", ...).
const char* ExclusionName(Exclusion exclusion);

Exclusion Classify(const Criteria& criteria, const DeviceFacts& device);

// Exclusion counts indexed by Exclusion.
using ExclusionCounts = std::array<int, kExclusionCount>;

}  // namespace dcl::reservation

#endif  // DCL_SERVICES_RESERVATION_ELIGIBILITY_H_
