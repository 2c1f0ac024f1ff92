// The delivery planner: where a pallet of devices goes across the racks of a site, weighing
// units, power and weight each on its own. Pure and deterministic: plain structs in, a plan out,
// no database, no clock, no randomness; the same input gives the same plan.
//
// Rules (docs/deliveries.md tells them with examples):
//  * Units: an item takes `height` contiguous units on one side (half depth) or on both sides at
//    the same units (full or unknown depth: unknown is the costly case), exactly as the rack
//    planner (rack_plan.h) would claim them at that anchor; an open frame has only the front.
//    Every active slot of a rack is taken, a lapsed reservation not yet released included.
//  * Power and weight: a rack with a budget stays within budget minus the requested headroom,
//    counting every unknown figure (a device without a figure, a reservation for no named
//    device, an item without a figure) at the worst case: the largest figure the schema allows
//    for one device (kMaxDevicePowerWatts, kMaxDeviceWeightKg). Unknowns are listed by name,
//    never added in as zero. A rack without a budget for a dimension is not limited in it (the
//    answer says so); its unknowns are still listed.
//  * Constraints: the allowed racks (in the order given; all racks otherwise), keep together
//    (every item in one rack) or at most N items per rack, a side for half-depth items.
//  * Order and choice: several deterministic strategies run — first-fit decreasing by height,
//    and best-fit (tightest gap, then tightest power budget) by height and by power — and the
//    plan that places the most items wins (ties: the earlier strategy). So the planner never
//    places fewer items than first-fit decreasing.
//  * An item that fits nowhere gets a reason per rack and dimension, e.g.
//    "R101: units free, power 5,400 of 6,000 W + 800 W over budget".
//
// Not the occupancy boundary: a plan is a read; ReserveDelivery writes it through the booking
// write path, where the slot index decides.
#ifndef DCL_SERVICES_OCCUPANCY_DELIVERY_PLAN_H_
#define DCL_SERVICES_OCCUPANCY_DELIVERY_PLAN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dcl/v1/common.pb.h"
#include "dcl/v1/occupancy.pb.h"
#include "services/occupancy/rack_plan.h"

namespace dcl::occupancy {

// One figure already standing in a rack (a placement's device, a reservation), for one
// dimension: a known value, or unknown with the name it is listed under.
struct LoadFigure {
  std::string name;  // "device 3f2…", "reservation 9a1… (no device named)"
  std::optional<int64_t> value;
};

struct DeliveryRack {
  std::string id;
  std::string name;
  Geometry geometry;
  std::vector<SlotRef> occupied;  // every active slot
  std::optional<int64_t> power_budget_watts;
  std::optional<int64_t> weight_budget_kg;
  std::vector<LoadFigure> power;   // what stands there already
  std::vector<LoadFigure> weight;
};

// One device to place (a registered device, or one copy of a spec).
struct DeliveryItem {
  std::string name;       // the device id, or "spec 2 #3"
  std::string device_id;  // empty for a spec
  int height = 1;
  v1::DepthClass depth = v1::DEPTH_UNKNOWN;
  std::optional<int64_t> power_watts;
  std::optional<int64_t> weight_kg;
};

struct DeliveryConstraints {
  std::vector<std::string> allowed_rack_ids;  // empty: every rack given
  bool keep_together = false;                 // every item in one rack
  int max_per_rack = 0;                       // > 0: at most this many items per rack
  v1::Side side = v1::SIDE_UNSPECIFIED;       // half-depth items: this side only
  int64_t power_headroom_watts = 0;
  int64_t weight_headroom_kg = 0;
};

struct PlannedItem {
  int item = 0;  // index into the items
  std::string rack_id;
  v1::Side side = v1::SIDE_UNSPECIFIED;  // the side it hangs on
  int anchor_unit = 0;                   // its lowest rack unit (PlaceDevice's `unit`)
  std::vector<SlotRef> slots;            // sorted
};

// One dimension of one rack before and after the plan, unknowns at their worst case.
struct DimensionView {
  std::optional<int64_t> budget;
  int64_t known_before = 0;
  int64_t worst_before = 0;  // known + every unknown at its worst case
  int64_t worst_after = 0;
  std::vector<std::string> unknown;  // names of the unknown figures, before and planned
};

struct RackView {
  std::string rack_id;
  std::string name;
  int free_front_before = 0;
  int free_rear_before = 0;
  int free_front_after = 0;
  int free_rear_after = 0;
  int items_planned = 0;
  DimensionView power;
  DimensionView weight;
};

struct UnplacedItem {
  int item = 0;
  std::vector<std::string> reasons;  // one per allowed rack: "R101: ..."
};

struct DeliveryPlan {
  std::vector<PlannedItem> planned;   // in item order
  std::vector<RackView> racks;        // the allowed racks, in order
  std::vector<UnplacedItem> unplaced; // in item order
  std::string strategy;               // which strategy's plan this is
};

// The worst case of one unknown figure.
inline constexpr int64_t kWorstCasePowerWatts = 100000;  // kMaxDevicePowerWatts
inline constexpr int64_t kWorstCaseWeightKg = 10000;     // kMaxDeviceWeightKg

// Plans every item. Allowed rack ids not among `racks` are the caller's error and are ignored
// here (the service refuses them before planning).
DeliveryPlan PlanDelivery(const std::vector<DeliveryRack>& racks,
                          const std::vector<DeliveryItem>& items,
                          const DeliveryConstraints& constraints);

// "5,400": figures in answers read like the examples.
std::string Thousands(int64_t value);

}  // namespace dcl::occupancy

#endif  // DCL_SERVICES_OCCUPANCY_DELIVERY_PLAN_H_
