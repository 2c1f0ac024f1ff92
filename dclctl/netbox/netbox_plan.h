// `dclctl import netbox`, the planning half of the mapping: from a parsed export
// (netbox_export.h) to what dcl should hold, in the order to create it (sites, racks, devices,
// placements, blockings), with what is skipped and what is refused and why; the request ids
// derived from NetBox ids; the slot arithmetic the applier shares. The decisions are listed in
// netbox_mapping.h. Pure: no I/O, no gRPC calls.
#ifndef DCL_DCLCTL_NETBOX_NETBOX_PLAN_H_
#define DCL_DCLCTL_NETBOX_NETBOX_PLAN_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "dcl/v1/inventory.pb.h"
#include "dcl/v1/occupancy.pb.h"
#include "dclctl/netbox/netbox_export.h"

namespace dcl::admin::netbox {

// "fra1=FRA1,ams-2=AMS2": NetBox site (slug or name) → the dcl site name to use.
absl::StatusOr<std::map<std::string, std::string>> ParseSiteMap(const std::string& text);

// Whether a rack of NetBox form factor (RackFormFactorChoices, RackTypeChoices before 4.1)
// has a rear in dcl; nullopt for a value NetBox does not define.
std::optional<bool> RackHasRear(const std::string& form_factor);

// What to create, in order. Requests carry their request ids; NetBox ids → dcl ids are filled
// in by the applier (site_id and rack_id are left empty here).
struct SitePlan {
  int64_t netbox_id = 0;
  v1::CreateSiteRequest request;
};
struct RackPlan {
  int64_t netbox_id = 0;
  int64_t site_netbox_id = 0;
  v1::CreateRackRequest request;
  // Capacity NetBox records for the rack: its active power feeds (empty: none recorded, dcl's
  // are left as they are), max_weight in kg (rounded down: a budget is never read larger than
  // NetBox's), its airflow (unspecified: none recorded).
  std::vector<v1::PowerFeed> feeds;
  std::optional<int> weight_budget_kg;
  v1::Airflow airflow = v1::AIRFLOW_UNSPECIFIED;
};
struct DevicePlan {
  int64_t netbox_id = 0;
  std::string netbox_name;
  int64_t site_netbox_id = 0;
  v1::RegisterDeviceRequest request;
  // Where NetBox says it stands.
  int64_t rack_netbox_id = 0;
  v1::Side side = v1::SIDE_FRONT;
  // NetBox's position is the lowest-numbered unit whatever the numbering (desc_units only
  // turns the picture); dcl's PlaceDevice unit is the physically lowest unit, which in a
  // descending rack is the highest number the device takes.
  int lowest_number = 0;
  int unit = 0;  // for PlaceDevice
};
struct BlockPlan {
  int64_t netbox_id = 0;
  int64_t rack_netbox_id = 0;
  v1::BlockUnitsRequest request;  // one contiguous run of free units, one side or both
};
// A NetBox object left out or refused, and why ("0U device: takes no rack unit").
struct Skipped {
  std::string what;  // "device 14 (pdu-a)"
  std::string reason;
};

struct Plan {
  std::vector<SitePlan> sites;
  // Figures NetBox does not record for a device it racks (power, power ports, weight, airflow):
  // left unknown in dcl, never guessed; a rack with a budget refuses such a device (…_UNKNOWN).
  std::vector<Skipped> unknown;
  std::vector<RackPlan> racks;
  std::vector<DevicePlan> devices;
  std::vector<BlockPlan> blocks;
  std::vector<Skipped> skipped;  // takes no rack unit: nothing is lost
  std::vector<Skipped> refused;  // should take units and cannot: the import exits 4
  std::vector<Skipped> held;     // reserved units a device already takes, and by whom
};

// A NetBox weight in `unit` (WeightUnitChoices: kg, g, lb, oz) in whole kilograms, rounded up
// (a device's weight: never read lighter than NetBox's) or down (a rack's max_weight: never read
// larger). INVALID_ARGUMENT for another unit, a negative or not finite weight, or one above
// 1,000,000 kg.
absl::StatusOr<int> Kilograms(double weight, const std::string& unit, bool round_up);

// NetBox's DeviceAirflowChoices value → dcl's; nullopt for a value NetBox does not define.
// "" → AIRFLOW_UNSPECIFIED (none recorded).
std::optional<v1::Airflow> AirflowOf(const std::string& value);

// A NetBox power feed → dcl's, or INVALID_ARGUMENT naming what is wrong: voltage (DC may be
// negative: its magnitude counts) and amperage whole, 1 to 1000; phase single-phase or
// three-phase (three-phase AC only); max_utilization whole, 1 to 100 (null: NetBox's 80).
absl::StatusOr<v1::PowerFeed> FeedOf(const PowerFeed& feed);

// What NetBox's power ports of a device say: the number of ports, and the sum of their
// allocated_draw when every port records one (nullopt otherwise, `unknown_why` naming the
// port). INVALID_ARGUMENT for a draw that is negative, fractional or above 1,000,000 W, or more
// than 16 ports.
struct DevicePower {
  int ports = 0;
  std::optional<int> allocated_watts;
  std::string unknown_why;
};
absl::StatusOr<DevicePower> PowerOf(const std::vector<const PowerPort*>& ports);

absl::StatusOr<Plan> MakePlan(const Export& in, const std::map<std::string, std::string>& site_map);

// A request id (a UUID in text) derived from `key` by SHA-256: the same key gives the same id,
// so a re-run of an import, or a retried command with the same --request_id, replays.
std::string DerivedRequestId(const std::string& key);

// The slots a device of `height` units and `depth` from unit number `lowest_number` up to
// lowest_number + height - 1 on `side` claims in a rack with `has_rear` (a full or unknown
// depth device claims both sides).
std::vector<v1::Slot> ClaimedSlots(int lowest_number, int height, v1::Side side,
                                   v1::DepthClass depth, bool has_rear);

// The slots a blocking request claims.
std::vector<v1::Slot> BlockedSlots(const v1::BlockUnitsRequest& block);

// Placements NetBox records in units another device of the plan already takes (first come,
// first placed, in NetBox id order): device netbox id → the colliding slots. What the slot
// index will refuse, known before any write (for --dry-run).
std::map<int64_t, std::vector<v1::Slot>> OverlappingPlacements(const Plan& plan);

// (side, unit) → what holds that slot ("device 3 (web-1)", "booking 5f0c…").
using Holders = std::map<std::pair<int, int>, std::string>;

// `block` without the slots `holders` names: the blockings of the free slots (runs of units
// with the same free sides), and one line per holder for the slots it holds
// ("front+rear U38 held by device 1 (d1)"). Request ids are left to the caller.
struct SplitBlock {
  std::vector<v1::BlockUnitsRequest> free;
  std::vector<std::string> held;
};
SplitBlock SplitByHolders(const v1::BlockUnitsRequest& block, bool has_rear,
                          const Holders& holders);

}  // namespace dcl::admin::netbox

#endif  // DCL_DCLCTL_NETBOX_NETBOX_PLAN_H_
