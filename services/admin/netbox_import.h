// `dclctl import netbox`, the pure part: reads what NetBox's REST API returns for
// /api/dcim/{sites,racks,device-types,devices,rack-reservations}/ (list responses saved as
// JSON files, `{"count", "next", "previous", "results": [...]}`, NetBox's own field names) and
// maps it onto dcl's inventory: which sites, racks (with their geometry), devices and
// placements to create, which NetBox objects cannot be represented (and why), and which
// placements NetBox itself records in overlapping units. No I/O beyond the strings it is
// given, no gRPC: commands.cc runs the plan against the servers.
//
// Mapping decisions (README "Importing from NetBox"):
//  - racks: u_height → unit_count, starting_unit → first_unit, desc_units → numbering;
//    form_factor (NetBox ≥ 4.1; `type` before) 2-post-frame, 4-post-frame, wall-frame and
//    wall-frame-vertical are open frames: dcl records them front only (has_rear false).
//  - devices: position → PlaceDevice's unit (the physically lowest unit: in a descending
//    rack position + height - 1); the device type's u_height must be a whole number 1..20 (0U and half-U devices
//    take no rack units dcl can book), position a whole unit; children in a chassis
//    (parent_device) live inside their parent's units; devices without a rack or position
//    stand nowhere. Those are skipped, each with its reason. is_full_depth → full or half.
//    NetBox status active → normal; every other status → staging (not for sale).
//  - rack reservations have no end in NetBox, while a dcl reservation of units expires
//    (ReserveUnits' TTL is bounded), so they become blockings: units kept out of service until
//    an operator releases them, never silently freed by the sweeper.
//  - request ids are derived from NetBox ids (DerivedRequestId), so a re-run replays; the
//    runner also matches what exists by natural keys (site name, rack name in its site,
//    device serial, a placement's or blocking's exact slots), which outlives the servers'
//    7-day request ledger.
#ifndef DCL_SERVICES_ADMIN_NETBOX_IMPORT_H_
#define DCL_SERVICES_ADMIN_NETBOX_IMPORT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "dcl/v1/inventory.pb.h"
#include "dcl/v1/occupancy.pb.h"

namespace dcl::admin::netbox {

// The five files `--dir` holds, in the order they are read.
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
  std::string face;  // "front", "rear" or ""
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

// `files`: file name (kFiles) → its text. INVALID_ARGUMENT naming the file and the object when
// a file is missing, is not a NetBox list response, or an object lacks a field dcl needs.
absl::StatusOr<Export> ParseExport(const std::map<std::string, std::string>& files);

// "fra1=FRA1,ams-2=AMS2": NetBox site (slug or name) → the dcl site name to use.
absl::StatusOr<std::map<std::string, std::string>> ParseSiteMap(const std::string& text);

// What to create, in order. Requests carry their request ids; NetBox ids → dcl ids are filled
// in by the runner (site_id and rack_id are left empty here).
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
  v1::BlockUnitsRequest request;  // one contiguous run of the reservation's units
};
// A NetBox object left out, and why ("0U device: takes no rack unit").
struct Skipped {
  std::string what;  // "device 14 (pdu-a)"
  std::string reason;
};

struct Plan {
  std::vector<SitePlan> sites;
  std::vector<RackPlan> racks;
  std::vector<DevicePlan> devices;
  std::vector<BlockPlan> blocks;
  std::vector<Skipped> skipped;
};

absl::StatusOr<Plan> MakePlan(const Export& in, const std::map<std::string, std::string>& site_map);

// A request id (a UUID in text) derived from `key` by SHA-256: the same key gives the same id,
// so a re-run of an import, or a retried command with the same --request_id, replays.
std::string DerivedRequestId(const std::string& key);

// The slots a device of `height` units and `depth` from unit number `lowest_number` up to
// lowest_number + height - 1 on `side` claims in a rack with
// `has_rear` (a full or unknown depth device claims both sides).
std::vector<v1::Slot> ClaimedSlots(int lowest_number, int height, v1::Side side, v1::DepthClass depth,
                                   bool has_rear);

// Placements NetBox records in units another device of the plan already takes (first come,
// first placed, in NetBox id order): device netbox id → the colliding slots. What the slot
// index will refuse, known before any write (for --dry-run).
std::map<int64_t, std::vector<v1::Slot>> OverlappingPlacements(const Plan& plan);

}  // namespace dcl::admin::netbox

#endif  // DCL_SERVICES_ADMIN_NETBOX_IMPORT_H_
