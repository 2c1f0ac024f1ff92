// `dclctl import netbox`, the mapping: what NetBox's REST API returns for
// /api/dcim/{sites,racks,device-types,devices,rack-reservations}/ (list responses,
// `{"count", "next", "previous", "results": [...]}`, one or several pages per list, NetBox's own
// field names) → what dcl should hold: sites, racks with their geometry, devices, placements and
// blockings; what is skipped because it takes no rack unit, and what is refused because it
// should take units and cannot (each with its reason). Pure: no I/O beyond the strings it is
// given, no gRPC. netbox_client.h fetches the pages, netbox_applier.h writes the plan.
//
// Mapping decisions (docs/netbox.md has the full table):
//  - racks: u_height → unit_count (1..100 whole units, else refused), starting_unit →
//    first_unit, desc_units → numbering. form_factor (NetBox ≥ 4.1; `type` before, same values)
//    decides the rear, value by value (RackHasRear): only 2-post frames and wall-mounted frames
//    have one mounting plane; null means NetBox does not know, read as the expensive case (a
//    rear); a value not in NetBox's choices refuses the rack.
//  - devices: position → PlaceDevice's unit (the physically lowest unit: in a descending rack
//    position + height - 1); the device type's u_height a whole number 1..20. Skipped (they
//    take no rack unit dcl can book): 0U, half-U device types, children in a chassis, devices
//    without rack or position. Refused: a device that should take units and cannot (its rack
//    refused, a fractional position, a height above 20, an unknown type, a half-depth device
//    on a rack with a rear whose face NetBox does not record — its side is never guessed).
//    is_full_depth → full or half. NetBox status active → normal; every other → staging.
//  - rack reservations have no end in NetBox, while a dcl reservation of units expires, so
//    they become blockings of the units that are free; units a device of the plan already
//    takes are reported as held, with what holds them (NetBox reservations never block
//    devices).
//  - request ids are derived from NetBox ids (DerivedRequestId), so a re-run replays.
#ifndef DCL_DCLCTL_NETBOX_NETBOX_MAPPING_H_
#define DCL_DCLCTL_NETBOX_NETBOX_MAPPING_H_

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

namespace dcl::admin::netbox {

// The five lists, in the order they are read: the path under /api/dcim/ and, with ".json",
// the saved file's name in `--dir`.
inline constexpr const char* kLists[] = {"sites", "racks", "device-types", "devices",
                                         "rack-reservations"};
// The saved files of `--dir`, in the same order.
inline constexpr const char* kFiles[] = {"sites.json", "racks.json", "device-types.json",
                                         "devices.json", "rack-reservations.json"};

struct Site {
  int64_t id = 0;
  std::string name, slug;
};

struct Rack {
  int64_t id = 0;
  int64_t site_id = 0;
  std::string name;
  double u_height = 42;
  int starting_unit = 1;
  bool desc_units = false;
  std::string form_factor;  // "" when NetBox recorded none
};

struct DeviceType {
  int64_t id = 0;
  std::string manufacturer, model;
  double u_height = 1;
  bool is_full_depth = true;
  std::string subdevice_role;  // "", "parent", "child"
};

struct Device {
  int64_t id = 0;
  std::string name;
  int64_t site_id = 0;
  int64_t device_type_id = 0;
  std::optional<int64_t> rack_id;
  std::optional<double> position;
  std::string face;  // "front", "rear", or "" when null
  std::optional<int64_t> parent_device_id;
  std::string serial;
  std::string status;  // "active", "planned", "staged" …
};

struct RackReservation {
  int64_t id = 0;
  int64_t rack_id = 0;
  std::vector<int> units;
  std::string description, user;
};

struct Export {
  std::vector<Site> sites;
  std::vector<Rack> racks;
  std::vector<DeviceType> device_types;
  std::vector<Device> devices;
  std::vector<RackReservation> reservations;
};

// The pages of every list: list name (kLists) → the text of each page, in the order read.
using Pages = std::map<std::string, std::vector<std::string>>;

// One saved file → its pages: one JSON document, or several written one after another (as
// `curl … >> devices.json` for each page leaves them), or a JSON array of page documents.
// INVALID_ARGUMENT when the text is none of these.
absl::StatusOr<std::vector<std::string>> SplitPages(const std::string& text);

// Reads the pages of every list. A list is complete when every page but the last has `next`
// set, the last has none, no object repeats (a list that changed while it was paged shifts its
// offsets) and the rows add up to `count`. INVALID_ARGUMENT naming the list, the page and the
// object when a list is missing or incomplete, a page is not a NetBox list response, or an
// object lacks a field dcl needs.
absl::StatusOr<Export> ParseExport(const Pages& pages);
// The same over saved files: file name (kFiles) → its text (SplitPages).
absl::StatusOr<Export> ParseExport(const std::map<std::string, std::string>& files);

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
  std::vector<RackPlan> racks;
  std::vector<DevicePlan> devices;
  std::vector<BlockPlan> blocks;
  std::vector<Skipped> skipped;  // takes no rack unit: nothing is lost
  std::vector<Skipped> refused;  // should take units and cannot: the import exits 4
  std::vector<Skipped> held;     // reserved units a device already takes, and by whom
};

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

#endif  // DCL_DCLCTL_NETBOX_NETBOX_MAPPING_H_
