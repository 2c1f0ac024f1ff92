#include "services/reservation/eligibility.h"

namespace dcl::reservation {

const char* ExclusionName(Exclusion exclusion) {
  switch (exclusion) {
    case Exclusion::kEligible:
      return "eligible";
    case Exclusion::kWrongSite:
      return "wrong_site";
    case Exclusion::kWrongVendor:
      return "wrong_vendor";
    case Exclusion::kWrongModel:
      return "wrong_model";
    case Exclusion::kWrongHardwareProfile:
      return "wrong_hardware_profile";
    case Exclusion::kDecommissioned:
      return "decommissioned";
    case Exclusion::kStaging:
      return "not_ready_staging";
    case Exclusion::kMoving:
      return "moving";
    case Exclusion::kInTransit:
      return "in_transit";
    case Exclusion::kUnknownProcessState:
      return "unknown_process_state";
    case Exclusion::kBoundToService:
      return "bound_to_service";
    case Exclusion::kHeldByAnotherOrder:
      return "held_by_another_order";
  }
  return "unknown";
}

Exclusion Classify(const Criteria& criteria, const DeviceFacts& device) {
  if (device.site_id != criteria.site_id) return Exclusion::kWrongSite;
  if (!criteria.vendor.empty() && device.vendor != criteria.vendor) return Exclusion::kWrongVendor;
  if (!criteria.model.empty() && device.model != criteria.model) return Exclusion::kWrongModel;
  if (!criteria.hardware_profile.empty() && device.hardware_profile != criteria.hardware_profile) {
    return Exclusion::kWrongHardwareProfile;
  }
  // A retired machine is nobody's stock, whatever state it was left in.
  if (device.decommissioned) return Exclusion::kDecommissioned;
  if (device.process_state == "staging") return Exclusion::kStaging;
  if (device.process_state == "moving") return Exclusion::kMoving;
  if (device.process_state == "in_transit") return Exclusion::kInTransit;
  // Only a known "ready" state is sellable: a state added to the schema later is refused until
  // someone decides what it means here.
  if (device.process_state != "normal") return Exclusion::kUnknownProcessState;
  if (device.bound) return Exclusion::kBoundToService;
  if (device.held) return Exclusion::kHeldByAnotherOrder;
  return Exclusion::kEligible;
}

}  // namespace dcl::reservation
