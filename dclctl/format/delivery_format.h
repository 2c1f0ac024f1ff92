// dclctl's delivery printers and item parser (docs/deliveries.md): pure, no flags, no gRPC
// calls, so that they are tested on their own. The commands are in delivery_commands.h.
#ifndef DCL_DCLCTL_FORMAT_DELIVERY_FORMAT_H_
#define DCL_DCLCTL_FORMAT_DELIVERY_FORMAT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dcl/v1/occupancy.pb.h"

namespace dcl::admin {

// One item of the command line: a device id, or a spec
//   HEIGHT U / DEPTH [/ POWER W] [/ WEIGHT kg] [/ xCOUNT] [/ LABEL]    e.g. 2U/full/800W/25kg/x4/R650
// DEPTH is full, half or unknown (never guessed); a figure left out is unknown.
absl::StatusOr<v1::DeliveryItem> ParseDeliveryItem(const std::string& text);

// The plan as tables: the planned items (item, rack, side, unit, slots), the racks (free units,
// power and weight before → after as the database counts them, budget, what has no figure), and
// every unplaced item with its reason per rack.
std::vector<std::string> DeliveryPlanText(const v1::DeliveryPlan& plan);
// The same, each planned item with the reservation PlaceDevice names.
std::vector<std::string> DeliveryReservationText(const v1::DeliveryReservation& reservation);

// One picture of the racks involved, side by side: each rack's elevation (what GetRack returned)
// with the planned items drawn in as reservations labelled with the items' names.
std::string DeliverySvg(const std::vector<v1::Rack>& racks,
                        const google::protobuf::RepeatedPtrField<v1::PlannedDeliveryItem>& planned);

}  // namespace dcl::admin

#endif  // DCL_DCLCTL_FORMAT_DELIVERY_FORMAT_H_
