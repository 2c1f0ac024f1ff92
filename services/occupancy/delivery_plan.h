// The delivery planner: where a pallet of devices goes across the racks of a site, weighing
// units, power and weight each on its own. Pure and deterministic: plain structs in, a plan out,
// no database, no clock, no randomness; the same input gives the same plan.
//
// Rules (docs/deliveries.md tells them with examples):
//  * Units: an item takes `height` contiguous units on one side (half depth) or on both sides at
//    the same units (full or unknown depth: unknown is the costly case), exactly as the rack
//    planner (rack_plan.h) would claim them at that anchor; an open frame has only the front.
//    Every active slot of a rack is taken, a lapsed reservation not yet released included.
//  * Power and weight: what the database counts and how it judges an addition (schema 0039,
//    one budget row per rack and dimension): each active booking counts its own figure (a device
//    booking its device's, a reservation the figure its writer gave it), and an item fits iff
//    used + its figure <= budget + allowance - the requested headroom. An item without a figure
//    is reserved for units only and adds 0; a reservation without one counts 0 too; both are
//    listed by name. A device booked before the budget was decided, without the figure, leaves
//    the rack's load unknown: the database refuses every addition there, and so does the plan.
//    A rack without a budget for a dimension is not limited in it (the answer says so).
//  * Heat: the same power figures against the rack's cooling budget (0038's cooling row).
//  * Airflow: a registered device whose airflow opposes the rack's, or is not known (unset or
//    mixed), goes to no rack with an airflow: its promotion would be refused (AIRFLOW_MISMATCH,
//    AIRFLOW_UNKNOWN). An item of a spec has no airflow yet and is judged when it is promoted.
//    Feeds are not planned: a reservation hangs on no feed (its device's ports are not known
//    until it is promoted, which the feed rows then judge).
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

// One booking already standing in a rack (a placement's device, a reservation), for one
// dimension: the figure it counts, or none (counted 0) with the name it is listed under.
struct LoadFigure {
  std::string name;  // "device 3f2…", "reservation 9a1… (units only)"
  std::optional<int64_t> value;
};

struct DeliveryRack {
  std::string id;
  std::string name;
  Geometry geometry;
  std::vector<SlotRef> occupied;  // every active slot
  std::optional<int64_t> power_budget_watts;
  std::optional<int64_t> weight_budget_kg;
  std::vector<LoadFigure> power;  // what stands there already; used = the known values' sum
  std::vector<LoadFigure> weight;
  // The budget rows' allowance (a rack over its budget when the database began deciding it
  // stays at most this much over) and whether their load is unknown (every addition refused).
  int64_t power_allowance_watts = 0;
  int64_t weight_allowance_kg = 0;
  std::optional<int64_t> cooling_budget_watts;  // heat: counted with the power figures
  int64_t cooling_allowance_watts = 0;
  std::string airflow;  // "" none recorded: no airflow rule
  bool power_load_unknown = false;
  bool weight_load_unknown = false;
};

// One device to place (a registered device, or one copy of a spec).
struct DeliveryItem {
  std::string name;       // the device id, or "spec 2 #3"
  std::string device_id;  // empty for a spec
  int height = 1;
  v1::DepthClass depth = v1::DEPTH_UNKNOWN;
  std::optional<int64_t> power_watts;
  std::optional<int64_t> weight_kg;
  std::string airflow;  // a registered device's ("" unknown); a spec's item has none
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

// One dimension of one rack before and after the plan, as the database counts it.
struct DimensionView {
  std::optional<int64_t> budget;
  int64_t allowance = 0;
  bool load_unknown = false;
  int64_t known_before = 0;          // the known figures' sum
  int64_t used_after = 0;            // with the planned items' figures
  std::vector<std::string> unknown;  // names of what counts 0, before and planned
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
  DimensionView cooling;
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

// Whether one more booking adding `amount` (0: a figure it does not have) fits one dimension
// of a rack standing at `used`: the database's rule (rack_power_within_budget,
// rack_weight_within_budget, rack_*_load_unknown) with `headroom` kept free on top. No budget,
// or nothing added: always.
bool BudgetTakes(std::optional<int64_t> budget, int64_t allowance, bool load_unknown, int64_t used,
                 int64_t amount, int64_t headroom);

// Whether the rack's power, weight and cooling budgets take one more booking with these figures
// as the database judges it now (BudgetTakes per dimension, no headroom): a reservation, whose
// missing figure adds 0, or a device booking (`device`), which on a rack with a power or cooling
// budget needs the power figure and with a weight budget the weight (bookings_power_known,
// bookings_weight_known). Units, feeds and airflow are not looked at.
bool RackTakes(const DeliveryRack& rack, std::optional<int64_t> power_watts,
               std::optional<int64_t> weight_kg, bool device);

// Plans every item. Allowed rack ids not among `racks` are the caller's error and are ignored
// here (the service refuses them before planning).
DeliveryPlan PlanDelivery(const std::vector<DeliveryRack>& racks,
                          const std::vector<DeliveryItem>& items,
                          const DeliveryConstraints& constraints);

// "5,400": figures in answers read like the examples.
std::string Thousands(int64_t value);

}  // namespace dcl::occupancy

#endif  // DCL_SERVICES_OCCUPANCY_DELIVERY_PLAN_H_
