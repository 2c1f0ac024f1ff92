// `dclctl import netbox`, the parsing half of the mapping: NetBox's list responses for
// /api/dcim/{sites,racks,device-types,devices,rack-reservations}/ (`{"count", "next",
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

}  // namespace dcl::admin::netbox

#endif  // DCL_DCLCTL_NETBOX_NETBOX_EXPORT_H_
