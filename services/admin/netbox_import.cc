#include "services/admin/netbox_import.h"

#include <openssl/sha.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace dcl::admin::netbox {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

absl::Status Bad(const std::string& where, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(where, ": ", what));
}

// One object of a list response, with the file and index for messages.
class Obj {
 public:
  Obj(const Struct& s, std::string where) : s_(s), where_(std::move(where)) {}
  const std::string& where() const { return where_; }

  const Value* Get(const std::string& key) const {
    auto it = s_.fields().find(key);
    if (it == s_.fields().end() || it->second.has_null_value()) return nullptr;
    return &it->second;
  }
  absl::StatusOr<double> Number(const std::string& key) const {
    const Value* v = Get(key);
    if (v == nullptr) return Bad(where_, "no \"" + key + "\"");
    // NetBox serializes decimals (u_height, position) as numbers; older versions as strings.
    if (v->has_number_value()) return v->number_value();
    double d = 0;
    if (v->has_string_value() && std::sscanf(v->string_value().c_str(), "%lf", &d) == 1) return d;
    return Bad(where_, "\"" + key + "\" is not a number");
  }
  std::optional<double> OptionalNumber(const std::string& key) const {
    absl::StatusOr<double> n = Number(key);
    if (!n.ok()) return std::nullopt;
    return *n;
  }
  std::string Text(const std::string& key) const {
    const Value* v = Get(key);
    return v != nullptr && v->has_string_value() ? v->string_value() : "";
  }
  bool Bool(const std::string& key, bool fallback) const {
    const Value* v = Get(key);
    return v != nullptr && v->has_bool_value() ? v->bool_value() : fallback;
  }
  // A nested object (`{"id": 3, "name": …}`) or null.
  std::optional<Obj> Nested(const std::string& key) const {
    const Value* v = Get(key);
    if (v == nullptr || !v->has_struct_value()) return std::nullopt;
    return Obj(v->struct_value(), where_ + "." + key);
  }
  // The id of a nested object; NetBox writes some references as a bare id.
  std::optional<int64_t> RefId(const std::string& key) const {
    const Value* v = Get(key);
    if (v == nullptr) return std::nullopt;
    if (v->has_number_value()) return static_cast<int64_t>(v->number_value());
    if (!v->has_struct_value()) return std::nullopt;
    auto id = v->struct_value().fields().find("id");
    if (id == v->struct_value().fields().end() || !id->second.has_number_value()) {
      return std::nullopt;
    }
    return static_cast<int64_t>(id->second.number_value());
  }
  // A choice field: {"value": "front", "label": "Front"}, or the bare value.
  std::string Choice(const std::string& key) const {
    const Value* v = Get(key);
    if (v == nullptr) return "";
    if (v->has_string_value()) return v->string_value();
    if (v->has_struct_value()) return Obj(v->struct_value(), where_).Text("value");
    return "";
  }
  absl::StatusOr<int64_t> Id() const {
    absl::StatusOr<double> id = Number("id");
    if (!id.ok()) return id.status();
    return static_cast<int64_t>(*id);
  }

 private:
  const Struct& s_;
  std::string where_;
};

// The "results" of one saved list response. NetBox pages its lists; a saved page whose "next"
// is set is only part of the list, which would import half a site silently.
absl::StatusOr<std::vector<Struct>> Results(const std::map<std::string, std::string>& files,
                                            const std::string& name) {
  auto it = files.find(name);
  if (it == files.end()) return Bad(name, "missing");
  Struct doc;
  const auto parsed = google::protobuf::util::JsonStringToMessage(it->second, &doc);
  if (!parsed.ok()) return Bad(name, "not JSON: " + std::string(parsed.message()));
  auto results = doc.fields().find("results");
  if (results == doc.fields().end() || !results->second.has_list_value()) {
    return Bad(name, "not a NetBox list response (no \"results\" list)");
  }
  auto next = doc.fields().find("next");
  if (next != doc.fields().end() && next->second.has_string_value() &&
      !next->second.string_value().empty()) {
    return Bad(name, "only one page of the list (\"next\" is set); save it with ?limit=0 "
                     "or a limit above \"count\"");
  }
  std::vector<Struct> out;
  for (const Value& v : results->second.list_value().values()) {
    if (!v.has_struct_value()) return Bad(name, "a result that is not an object");
    out.push_back(v.struct_value());
  }
  return out;
}

std::string Where(const std::string& file, size_t index) {
  return absl::StrCat(file, " results[", index, "]");
}

#define ASSIGN_OR_RETURN_NB(lhs, expr) \
  auto lhs##_or = (expr);              \
  if (!lhs##_or.ok()) return lhs##_or.status(); \
  auto lhs = *lhs##_or

bool Whole(double d) { return std::floor(d) == d; }

bool OpenFrame(const std::string& form_factor) {
  return form_factor == "2-post-frame" || form_factor == "4-post-frame" ||
         form_factor == "wall-frame" || form_factor == "wall-frame-vertical";
}

std::string DeviceWhat(const Device& d) {
  return absl::StrCat("device ", d.id, d.name.empty() ? "" : " (" + d.name + ")");
}

}  // namespace

absl::StatusOr<Export> ParseExport(const std::map<std::string, std::string>& files) {
  Export out;
  {
    ASSIGN_OR_RETURN_NB(rows, Results(files, "sites.json"));
    for (size_t i = 0; i < rows.size(); ++i) {
      Obj o(rows[i], Where("sites.json", i));
      ASSIGN_OR_RETURN_NB(id, o.Id());
      Site s{id, o.Text("name"), o.Text("slug")};
      if (s.name.empty()) return Bad(o.where(), "no \"name\"");
      out.sites.push_back(s);
    }
  }
  {
    ASSIGN_OR_RETURN_NB(rows, Results(files, "racks.json"));
    for (size_t i = 0; i < rows.size(); ++i) {
      Obj o(rows[i], Where("racks.json", i));
      Rack r;
      ASSIGN_OR_RETURN_NB(id, o.Id());
      r.id = id;
      r.name = o.Text("name");
      std::optional<int64_t> site = o.RefId("site");
      if (!site) return Bad(o.where(), "no \"site\"");
      r.site_id = *site;
      ASSIGN_OR_RETURN_NB(height, o.Number("u_height"));
      r.u_height = height;
      r.starting_unit = static_cast<int>(o.OptionalNumber("starting_unit").value_or(1));
      r.desc_units = o.Bool("desc_units", false);
      // NetBox 4.1 renamed the rack's `type` to `form_factor`.
      r.form_factor = o.Choice("form_factor");
      if (r.form_factor.empty()) r.form_factor = o.Choice("type");
      out.racks.push_back(r);
    }
  }
  {
    ASSIGN_OR_RETURN_NB(rows, Results(files, "device-types.json"));
    for (size_t i = 0; i < rows.size(); ++i) {
      Obj o(rows[i], Where("device-types.json", i));
      DeviceType t;
      ASSIGN_OR_RETURN_NB(id, o.Id());
      t.id = id;
      std::optional<Obj> manufacturer = o.Nested("manufacturer");
      if (manufacturer) t.manufacturer = manufacturer->Text("name");
      t.model = o.Text("model");
      ASSIGN_OR_RETURN_NB(height, o.Number("u_height"));
      t.u_height = height;
      t.is_full_depth = o.Bool("is_full_depth", true);
      t.subdevice_role = o.Choice("subdevice_role");
      out.device_types.push_back(t);
    }
  }
  {
    ASSIGN_OR_RETURN_NB(rows, Results(files, "devices.json"));
    for (size_t i = 0; i < rows.size(); ++i) {
      Obj o(rows[i], Where("devices.json", i));
      Device d;
      ASSIGN_OR_RETURN_NB(id, o.Id());
      d.id = id;
      d.name = o.Text("name");
      std::optional<int64_t> site = o.RefId("site");
      std::optional<int64_t> type = o.RefId("device_type");
      if (!site) return Bad(o.where(), "no \"site\"");
      if (!type) return Bad(o.where(), "no \"device_type\"");
      d.site_id = *site;
      d.device_type_id = *type;
      d.rack_id = o.RefId("rack");
      d.position = o.OptionalNumber("position");
      d.face = o.Choice("face");
      d.parent_device_id = o.RefId("parent_device");
      d.serial = o.Text("serial");
      d.status = o.Choice("status");
      out.devices.push_back(d);
    }
  }
  {
    ASSIGN_OR_RETURN_NB(rows, Results(files, "rack-reservations.json"));
    for (size_t i = 0; i < rows.size(); ++i) {
      Obj o(rows[i], Where("rack-reservations.json", i));
      RackReservation r;
      ASSIGN_OR_RETURN_NB(id, o.Id());
      r.id = id;
      std::optional<int64_t> rack = o.RefId("rack");
      if (!rack) return Bad(o.where(), "no \"rack\"");
      r.rack_id = *rack;
      const Value* units = o.Get("units");
      if (units == nullptr || !units->has_list_value()) return Bad(o.where(), "no \"units\"");
      for (const Value& u : units->list_value().values()) {
        if (!u.has_number_value() || !Whole(u.number_value())) {
          return Bad(o.where(), "a unit that is not a whole number");
        }
        r.units.push_back(static_cast<int>(u.number_value()));
      }
      r.description = o.Text("description");
      std::optional<Obj> user = o.Nested("user");
      if (user) r.user = user->Text("username");
      out.reservations.push_back(r);
    }
  }
  return out;
}

absl::StatusOr<std::map<std::string, std::string>> ParseSiteMap(const std::string& text) {
  std::map<std::string, std::string> out;
  for (absl::string_view pair : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    std::vector<std::string> parts = absl::StrSplit(pair, absl::MaxSplits('=', 1));
    if (parts.size() != 2 || parts[0].empty() || parts[1].empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--site_map: \"", pair, "\" is not NETBOX_SITE=DCL_SITE"));
    }
    out[std::string(absl::StripAsciiWhitespace(parts[0]))] =
        std::string(absl::StripAsciiWhitespace(parts[1]));
  }
  return out;
}

std::string DerivedRequestId(const std::string& key) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(key.data()), key.size(), digest);
  // Shaped as an RFC 4122 UUID of version 8 (custom), variant 10.
  digest[6] = static_cast<unsigned char>((digest[6] & 0x0f) | 0x80);
  digest[8] = static_cast<unsigned char>((digest[8] & 0x3f) | 0x80);
  std::string out;
  static const char* kHex = "0123456789abcdef";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out.push_back('-');
    out.push_back(kHex[digest[i] >> 4]);
    out.push_back(kHex[digest[i] & 0x0f]);
  }
  return out;
}

absl::StatusOr<Plan> MakePlan(const Export& in,
                              const std::map<std::string, std::string>& site_map) {
  Plan plan;
  std::map<int64_t, const Site*> sites;
  for (const Site& s : in.sites) {
    sites[s.id] = &s;
    SitePlan p;
    p.netbox_id = s.id;
    std::string name = s.name;
    if (auto it = site_map.find(s.slug); it != site_map.end()) name = it->second;
    if (auto it = site_map.find(s.name); it != site_map.end()) name = it->second;
    p.request.set_name(name);
    p.request.set_request_id(DerivedRequestId(absl::StrCat("netbox site ", s.id, " ", name)));
    plan.sites.push_back(p);
  }
  std::map<int64_t, const Rack*> racks;
  for (const Rack& r : in.racks) {
    const std::string what = absl::StrCat("rack ", r.id, " (", r.name, ")");
    if (sites.count(r.site_id) == 0) {
      plan.skipped.push_back({what, absl::StrCat("its site ", r.site_id, " is not in sites.json")});
      continue;
    }
    if (!Whole(r.u_height) || r.u_height < 1 || r.u_height > 100) {
      plan.skipped.push_back({what, absl::StrCat("u_height ", r.u_height,
                                                 ": dcl racks have 1 to 100 whole units")});
      continue;
    }
    racks[r.id] = &r;
    RackPlan p;
    p.netbox_id = r.id;
    p.site_netbox_id = r.site_id;
    p.request.set_name(r.name);
    v1::RackGeometry& g = *p.request.mutable_geometry();
    g.set_first_unit(r.starting_unit);
    g.set_unit_count(static_cast<int>(r.u_height));
    g.set_numbering(r.desc_units ? v1::NUMBERING_DESCENDING : v1::NUMBERING_ASCENDING);
    g.set_has_rear(!OpenFrame(r.form_factor));
    p.request.set_request_id(DerivedRequestId(absl::StrCat("netbox rack ", r.id)));
    plan.racks.push_back(p);
  }
  std::map<int64_t, const DeviceType*> types;
  for (const DeviceType& t : in.device_types) types[t.id] = &t;

  std::vector<Device> devices = in.devices;
  std::sort(devices.begin(), devices.end(),
            [](const Device& a, const Device& b) { return a.id < b.id; });
  for (const Device& d : devices) {
    auto skip = [&](const std::string& reason) { plan.skipped.push_back({DeviceWhat(d), reason}); };
    auto type_it = types.find(d.device_type_id);
    if (type_it == types.end()) {
      skip(absl::StrCat("its device type ", d.device_type_id, " is not in device-types.json"));
      continue;
    }
    const DeviceType& t = *type_it->second;
    if (d.parent_device_id) {
      skip(absl::StrCat("child device in a chassis (parent device ", *d.parent_device_id,
                        "): it takes no rack units of its own"));
      continue;
    }
    if (t.u_height == 0) {
      skip("0U device: mounted outside the rack units (side rails, PDU channel)");
      continue;
    }
    if (!Whole(t.u_height)) {
      skip(absl::StrCat("half-U device (u_height ", t.u_height,
                        "): dcl books whole rack units only"));
      continue;
    }
    if (t.u_height > 20) {
      skip(absl::StrCat("u_height ", t.u_height, ": dcl devices are 1 to 20 units high"));
      continue;
    }
    if (!d.rack_id) {
      skip("non-racked device: NetBox records no rack");
      continue;
    }
    if (!d.position) {
      skip("non-racked device: in a rack without a position");
      continue;
    }
    if (racks.count(*d.rack_id) == 0) {
      skip(absl::StrCat("its rack ", *d.rack_id, " was not imported"));
      continue;
    }
    if (!Whole(*d.position)) {
      skip(absl::StrCat("position ", *d.position, ": dcl books whole rack units only"));
      continue;
    }
    const Rack& rack = *racks[*d.rack_id];
    DevicePlan p;
    p.netbox_id = d.id;
    p.netbox_name = d.name;
    p.site_netbox_id = d.site_id;
    v1::RegisterDeviceRequest& r = p.request;
    r.set_vendor(t.manufacturer);
    r.set_model(t.model);
    r.set_serial(d.serial);
    r.set_height_units(static_cast<int>(t.u_height));
    r.set_depth_class(t.is_full_depth ? v1::DEPTH_FULL : v1::DEPTH_HALF);
    r.set_initial_state(d.status == "active" ? v1::PROCESS_NORMAL : v1::PROCESS_STAGING);
    r.set_request_id(DerivedRequestId(absl::StrCat("netbox device ", d.id)));
    p.rack_netbox_id = rack.id;
    // An open frame has one face in dcl; NetBox may still say rear.
    p.side = d.face == "rear" && !OpenFrame(rack.form_factor) ? v1::SIDE_REAR : v1::SIDE_FRONT;
    p.lowest_number = static_cast<int>(*d.position);
    p.unit = rack.desc_units ? p.lowest_number + static_cast<int>(t.u_height) - 1 : p.lowest_number;
    plan.devices.push_back(p);
  }

  for (const RackReservation& res : in.reservations) {
    const std::string what = absl::StrCat("rack reservation ", res.id);
    auto rack_it = racks.find(res.rack_id);
    if (rack_it == racks.end()) {
      plan.skipped.push_back({what, absl::StrCat("its rack ", res.rack_id, " was not imported")});
      continue;
    }
    std::set<int> units(res.units.begin(), res.units.end());
    if (units.empty()) {
      plan.skipped.push_back({what, "no units"});
      continue;
    }
    const bool has_rear = !OpenFrame(rack_it->second->form_factor);
    std::string reason = absl::StrCat("NetBox rack reservation ", res.id);
    if (!res.user.empty()) absl::StrAppend(&reason, " for ", res.user);
    if (!res.description.empty()) absl::StrAppend(&reason, ": ", res.description);
    // One blocking per contiguous run of units.
    auto it = units.begin();
    while (it != units.end()) {
      const int first = *it;
      int last = first;
      for (++it; it != units.end() && *it == last + 1; ++it) last = *it;
      BlockPlan b;
      b.netbox_id = res.id;
      b.rack_netbox_id = res.rack_id;
      b.request.set_first_unit(first);
      b.request.set_last_unit(last);
      b.request.set_both_sides(has_rear);
      b.request.set_side(has_rear ? v1::SIDE_UNSPECIFIED : v1::SIDE_FRONT);
      b.request.set_reason(reason);
      plan.blocks.push_back(b);
    }
  }
  return plan;
}

std::vector<v1::Slot> ClaimedSlots(int lowest_number, int height, v1::Side side, v1::DepthClass depth,
                                   bool has_rear) {
  std::vector<v1::Slot> out;
  const bool both = has_rear && depth != v1::DEPTH_HALF;
  for (int u = lowest_number; u < lowest_number + height; ++u) {
    for (v1::Side s : {v1::SIDE_FRONT, v1::SIDE_REAR}) {
      if (s != side && !both) continue;
      if (s == v1::SIDE_REAR && !has_rear) continue;
      v1::Slot slot;
      slot.set_side(s);
      slot.set_unit(u);
      out.push_back(slot);
    }
  }
  return out;
}

std::map<int64_t, std::vector<v1::Slot>> OverlappingPlacements(const Plan& plan) {
  std::map<int64_t, bool> has_rear;
  for (const RackPlan& r : plan.racks) has_rear[r.netbox_id] = r.request.geometry().has_rear();
  std::set<std::tuple<int64_t, int, int>> taken;  // rack, side, unit
  std::map<int64_t, std::vector<v1::Slot>> out;
  for (const DevicePlan& d : plan.devices) {
    const std::vector<v1::Slot> slots =
        ClaimedSlots(d.lowest_number, d.request.height_units(), d.side, d.request.depth_class(),
                     has_rear[d.rack_netbox_id]);
    std::vector<v1::Slot> colliding;
    for (const v1::Slot& s : slots) {
      if (taken.count({d.rack_netbox_id, s.side(), s.unit()}) > 0) colliding.push_back(s);
    }
    if (!colliding.empty()) {
      out[d.netbox_id] = colliding;
      continue;  // refused: it takes nothing
    }
    for (const v1::Slot& s : slots) taken.insert({d.rack_netbox_id, s.side(), s.unit()});
  }
  return out;
}

}  // namespace dcl::admin::netbox
