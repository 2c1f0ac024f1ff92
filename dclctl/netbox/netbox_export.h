// `dclctl import netbox`, the parsing half of the mapping: NetBox's list responses for
// /api/dcim/{sites,racks,device-types,devices,rack-reservations,power-panels,power-feeds,
// power-ports}/ (`{"count", "next",
// "previous", "results": [...]}`, one or several pages per list, NetBox's own field names), read
// into plain structs with every field dcl needs checked. No decision about what dcl should hold
// is made here: that is netbox_plan.h. Pure: no I/O beyond the strings it is given.
#ifndef DCL_DCLCTL_NETBOX_NETBOX_EXPORT_H_
#define DCL_DCLCTL_NETBOX_NETBOX_EXPORT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace dcl::admin::netbox {

// The eight lists, in the order they are read: the path under /api/dcim/ and, with ".json",
// the saved file's name in `--dir`.
inline constexpr const char* kLists[] = {"sites",        "racks",       "device-types",
                                         "devices",      "rack-reservations", "power-panels",
                                         "power-feeds",  "power-ports"};
// The saved files of `--dir`, in the same order. The three power lists may be absent from a
// directory saved before they were read: absent reads as empty (no feed is set, every device's
// power is unknown), never as a figure.
inline constexpr const char* kFiles[] = {"sites.json",        "racks.json",
                                         "device-types.json", "devices.json",
                                         "rack-reservations.json", "power-panels.json",
                                         "power-feeds.json",  "power-ports.json"};
inline constexpr const char* kOptionalFiles[] = {"power-panels.json", "power-feeds.json",
                                                 "power-ports.json"};

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
  std::optional<double> max_weight;  // in weight_unit; the load the rack takes
  std::string weight_unit;           // "kg", "g", "lb", "oz", or "" when null
  std::string airflow;               // "front-to-rear", "rear-to-front", or "" when null
};

struct DeviceType {
  int64_t id = 0;
  std::string manufacturer, model;
  double u_height = 1;
  bool is_full_depth = true;
  std::string subdevice_role;  // "", "parent", "child"
  std::string airflow;         // NetBox's DeviceAirflowChoices value, or "" when null
  std::optional<double> weight;  // in weight_unit
  std::string weight_unit;       // "kg", "g", "lb", "oz", or "" when null
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
  std::string airflow;  // overrides the device type's; "" when null
};

struct RackReservation {
  int64_t id = 0;
  int64_t rack_id = 0;
  std::vector<int> units;
  std::string description, user;
};

// A power panel: where feeds come from. dcl keeps no panel of its own; the panel's site is
// checked against its feeds' racks, and its name tells two feeds of one name apart.
struct PowerPanel {
  int64_t id = 0;
  int64_t site_id = 0;
  std::string name;
};

struct PowerFeed {
  int64_t id = 0;
  int64_t power_panel_id = 0;
  std::optional<int64_t> rack_id;
  std::string name;
  std::string status;  // "active", "planned", "offline", "failed"
  std::string supply;  // "ac", "dc", or "" when null
  std::string phase;   // "single-phase", "three-phase", or "" when null
  double voltage = 0, amperage = 0;
  std::optional<double> max_utilization;  // % (NetBox's default 80 when null)
};

// A device's power port (an inlet, a PSU): what it draws.
struct PowerPort {
  int64_t id = 0;
  int64_t device_id = 0;
  std::optional<double> allocated_draw;  // W; null: not recorded
  std::optional<double> maximum_draw;    // W; dcl has no field for it
};

struct Export {
  std::vector<Site> sites;
  std::vector<Rack> racks;
  std::vector<DeviceType> device_types;
  std::vector<Device> devices;
  std::vector<RackReservation> reservations;
  std::vector<PowerPanel> power_panels;
  std::vector<PowerFeed> power_feeds;
  std::vector<PowerPort> power_ports;
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

}  // namespace dcl::admin::netbox

#endif  // DCL_DCLCTL_NETBOX_NETBOX_EXPORT_H_
