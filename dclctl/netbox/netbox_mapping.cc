#include "dclctl/netbox/netbox_mapping.h"

#include <openssl/sha.h>

#include <algorithm>
#include <cctype>
#include <iterator>
#include <cmath>
#include <cstdio>
#include <set>

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "dclctl/format/rack_elevation.h"

namespace dcl::admin::netbox {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

absl::Status Bad(const std::string& where, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(where, ": ", what));
}

// A whole number an object id can be (JSON numbers are doubles: exact up to 2^53).
bool IdLike(double d) { return std::floor(d) == d && d >= 0 && d <= 9007199254740992.0; }
// A unit number or a starting unit: whole, and far inside int.
bool UnitLike(double d) { return std::floor(d) == d && d >= -1e6 && d <= 1e6; }

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
  // The id of a nested object (NetBox writes some references as a bare id); nullopt for null.
  // Anything else there is a corrupt export, never read as "none".
  absl::StatusOr<std::optional<int64_t>> Ref(const std::string& key) const {
    const Value* v = Get(key);
    if (v == nullptr) return std::optional<int64_t>();
    const Value* id = v;
    if (v->has_struct_value()) {
      auto it = v->struct_value().fields().find("id");
      id = it == v->struct_value().fields().end() ? nullptr : &it->second;
    }
    if (id == nullptr || !id->has_number_value() || !IdLike(id->number_value())) {
      return Bad(where_, "\"" + key + "\" is not a reference to an object id");
    }
    return std::optional<int64_t>(static_cast<int64_t>(id->number_value()));
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
    if (!IdLike(*id)) return Bad(where_, "\"id\" is not a whole number from 0 to 2^53");
    return static_cast<int64_t>(*id);
  }

 private:
  const Struct& s_;
  std::string where_;
};

// The objects of one list, read from all its pages. `label` names the list in messages
// ("devices.json" for a saved file, "devices" for the API).
absl::StatusOr<std::vector<Struct>> Results(const Pages& pages, const std::string& list,
                                            const std::string& label) {
  auto it = pages.find(list);
  if (it == pages.end() || it->second.empty()) return Bad(label, "missing");
  const std::vector<std::string>& texts = it->second;
  std::vector<Struct> out;
  std::set<int64_t> ids;
  std::optional<double> count;
  for (size_t p = 0; p < texts.size(); ++p) {
    const std::string page =
        texts.size() == 1 ? label : absl::StrCat(label, " page ", p + 1);
    Struct doc;
    const auto parsed = google::protobuf::util::JsonStringToMessage(texts[p], &doc);
    if (!parsed.ok()) return Bad(page, "not JSON: " + std::string(parsed.message()));
    auto results = doc.fields().find("results");
    if (results == doc.fields().end() || !results->second.has_list_value()) {
      return Bad(page, "not a NetBox list response (no \"results\" list)");
    }
    auto next = doc.fields().find("next");
    const bool has_next = next != doc.fields().end() && next->second.has_string_value() &&
                          !next->second.string_value().empty();
    // Every page but the last points to the next one; a last page that does is part of a
    // list whose rest is missing, which would import half a site silently.
    if (has_next && p + 1 == texts.size()) {
      return Bad(page, "an incomplete list: \"next\" is set and no page follows (save every "
                       "page, or use --url)");
    }
    if (!has_next && p + 1 < texts.size()) {
      return Bad(page, "\"next\" is null but more pages follow: pages of different lists?");
    }
    auto c = doc.fields().find("count");
    if (c != doc.fields().end() && c->second.has_number_value()) {
      if (count && *count != c->second.number_value()) {
        return Bad(page, "\"count\" differs from the first page's: the list changed while it "
                         "was read");
      }
      count = c->second.number_value();
    }
    for (const Value& v : results->second.list_value().values()) {
      if (!v.has_struct_value()) return Bad(page, "a result that is not an object");
      auto id = v.struct_value().fields().find("id");
      if (id != v.struct_value().fields().end() && id->second.has_number_value() &&
          IdLike(id->second.number_value()) &&
          !ids.insert(static_cast<int64_t>(id->second.number_value())).second) {
        return Bad(page, absl::StrCat("object ", id->second.number_value(),
                                      " a second time: the list changed while it was read"));
      }
      out.push_back(v.struct_value());
    }
  }
  if (count && static_cast<double>(out.size()) != *count) {
    return Bad(label, absl::StrCat("\"count\" is ", *count, " but the pages hold ", out.size(),
                                   " objects: the list changed while it was read"));
  }
  return out;
}

std::string Where(const std::string& label, size_t index) {
  return absl::StrCat(label, " results[", index, "]");
}

#define ASSIGN_OR_RETURN_NB(lhs, expr) \
  auto lhs##_or = (expr);              \
  if (!lhs##_or.ok()) return lhs##_or.status(); \
  auto lhs = *lhs##_or

bool Whole(double d) { return std::floor(d) == d; }

std::string DeviceWhat(const Device& d) {
  return absl::StrCat("device ", d.id, d.name.empty() ? "" : " (" + d.name + ")");
}

}  // namespace

namespace {

absl::StatusOr<Export> ParseLists(const Pages& pages, const std::string& suffix) {
  auto label = [&](const char* list) { return std::string(list) + suffix; };
  Export out;
  {
    ASSIGN_OR_RETURN_NB(rows, Results(pages, "sites", label("sites")));
    for (size_t i = 0; i < rows.size(); ++i) {
      Obj o(rows[i], Where(label("sites"), i));
      ASSIGN_OR_RETURN_NB(id, o.Id());
      Site s{id, o.Text("name"), o.Text("slug")};
      if (s.name.empty()) return Bad(o.where(), "no \"name\"");
      out.sites.push_back(s);
    }
  }
  {
    ASSIGN_OR_RETURN_NB(rows, Results(pages, "racks", label("racks")));
    for (size_t i = 0; i < rows.size(); ++i) {
      Obj o(rows[i], Where(label("racks"), i));
      Rack r;
      ASSIGN_OR_RETURN_NB(id, o.Id());
      r.id = id;
      r.name = o.Text("name");
      ASSIGN_OR_RETURN_NB(site, o.Ref("site"));
      if (!site) return Bad(o.where(), "no \"site\"");
      r.site_id = *site;
      ASSIGN_OR_RETURN_NB(height, o.Number("u_height"));
      r.u_height = height;
      const double starting_unit = o.OptionalNumber("starting_unit").value_or(1);
      if (!UnitLike(starting_unit)) return Bad(o.where(), "\"starting_unit\" is not a unit number");
      r.starting_unit = static_cast<int>(starting_unit);
      r.desc_units = o.Bool("desc_units", false);
      // NetBox 4.1 renamed the rack's `type` to `form_factor`.
      r.form_factor = o.Choice("form_factor");
      if (r.form_factor.empty()) r.form_factor = o.Choice("type");
      out.racks.push_back(r);
    }
  }
  {
    ASSIGN_OR_RETURN_NB(rows, Results(pages, "device-types", label("device-types")));
    for (size_t i = 0; i < rows.size(); ++i) {
      Obj o(rows[i], Where(label("device-types"), i));
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
    ASSIGN_OR_RETURN_NB(rows, Results(pages, "devices", label("devices")));
    for (size_t i = 0; i < rows.size(); ++i) {
      Obj o(rows[i], Where(label("devices"), i));
      Device d;
      ASSIGN_OR_RETURN_NB(id, o.Id());
      d.id = id;
      d.name = o.Text("name");
      ASSIGN_OR_RETURN_NB(site, o.Ref("site"));
      ASSIGN_OR_RETURN_NB(type, o.Ref("device_type"));
      if (!site) return Bad(o.where(), "no \"site\"");
      if (!type) return Bad(o.where(), "no \"device_type\"");
      d.site_id = *site;
      d.device_type_id = *type;
      ASSIGN_OR_RETURN_NB(rack, o.Ref("rack"));
      d.rack_id = rack;
      d.position = o.OptionalNumber("position");
      d.face = o.Choice("face");
      ASSIGN_OR_RETURN_NB(parent, o.Ref("parent_device"));
      d.parent_device_id = parent;
      d.serial = o.Text("serial");
      d.status = o.Choice("status");
      out.devices.push_back(d);
    }
  }
  {
    ASSIGN_OR_RETURN_NB(rows, Results(pages, "rack-reservations", label("rack-reservations")));
    for (size_t i = 0; i < rows.size(); ++i) {
      Obj o(rows[i], Where(label("rack-reservations"), i));
      RackReservation r;
      ASSIGN_OR_RETURN_NB(id, o.Id());
      r.id = id;
      ASSIGN_OR_RETURN_NB(rack, o.Ref("rack"));
      if (!rack) return Bad(o.where(), "no \"rack\"");
      r.rack_id = *rack;
      const Value* units = o.Get("units");
      if (units == nullptr || !units->has_list_value()) return Bad(o.where(), "no \"units\"");
      for (const Value& u : units->list_value().values()) {
        if (!u.has_number_value() || !UnitLike(u.number_value())) {
          return Bad(o.where(), "a unit that is not a unit number");
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

}  // namespace

absl::StatusOr<std::vector<std::string>> SplitPages(const std::string& text) {
  std::vector<std::string> out;
  size_t i = 0;
  auto skip_space = [&] {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  };
  skip_space();
  // A JSON array of pages: the documents are its elements, separated by commas.
  const bool array = i < text.size() && text[i] == '[';
  if (array) ++i;
  while (true) {
    skip_space();
    if (array && i < text.size() && text[i] == ']') {
      ++i;
      skip_space();
      if (i != text.size()) return absl::InvalidArgumentError("text after the array of pages");
      break;
    }
    if (i == text.size()) {
      if (array) return absl::InvalidArgumentError("an array of pages without its \"]\"");
      break;
    }
    if (text[i] != '{') {
      return absl::InvalidArgumentError(absl::StrCat("a page must be a JSON object; found '", text.substr(i, 1),
                                          "' at byte ", i));
    }
    // One object: braces counted outside strings (JSON escapes only inside strings).
    const size_t start = i;
    int depth = 0;
    bool in_string = false;
    for (; i < text.size(); ++i) {
      const char c = text[i];
      if (in_string) {
        if (c == '\\') {
          ++i;
        } else if (c == '"') {
          in_string = false;
        }
      } else if (c == '"') {
        in_string = true;
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ']') {
        if (--depth == 0) break;
      }
    }
    if (i >= text.size()) return absl::InvalidArgumentError("a page that is cut off");
    ++i;
    out.push_back(text.substr(start, i - start));
    skip_space();
    if (array && i < text.size() && text[i] == ',') ++i;
  }
  if (out.empty()) return absl::InvalidArgumentError("empty");
  return out;
}

absl::StatusOr<Export> ParseExport(const Pages& pages) { return ParseLists(pages, ""); }

absl::StatusOr<Export> ParseExport(const std::map<std::string, std::string>& files) {
  Pages pages;
  for (size_t i = 0; i < std::size(kLists); ++i) {
    auto it = files.find(kFiles[i]);
    if (it == files.end()) continue;  // ParseLists names it
    absl::StatusOr<std::vector<std::string>> split = SplitPages(it->second);
    if (!split.ok()) return Bad(kFiles[i], std::string(split.status().message()));
    pages[kLists[i]] = *std::move(split);
  }
  return ParseLists(pages, ".json");
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

std::optional<bool> RackHasRear(const std::string& form_factor) {
  // Every value of NetBox's RackFormFactorChoices (RackTypeChoices before 4.1: the same
  // values), each decided here; NetBox models a front and a rear face on every rack, and only
  // the frames with one mounting plane have no rear dcl can sell.
  if (form_factor == "2-post-frame") return false;
  if (form_factor == "4-post-frame") return true;  // rear rails: a rear to mount on
  if (form_factor == "4-post-cabinet") return true;
  if (form_factor == "wall-frame") return false;
  if (form_factor == "wall-frame-vertical") return false;
  if (form_factor == "wall-cabinet") return true;
  if (form_factor == "wall-cabinet-vertical") return true;
  // NetBox records no form factor: unknown reads as the expensive case (a full-depth device
  // claims both sides), never as a rack with units nobody can see.
  if (form_factor.empty()) return true;
  return std::nullopt;
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
  // Racks that take units and cannot be imported: their devices and reservations are refused
  // with them (what each would have held is named in the report).
  std::map<int64_t, std::string> refused_racks;  // netbox id → why
  std::map<int64_t, const Rack*> racks;
  std::map<int64_t, bool> has_rear;
  for (const Rack& r : in.racks) {
    const std::string what = absl::StrCat("rack ", r.id, " (", r.name, ")");
    auto refuse = [&](const std::string& reason) {
      plan.refused.push_back({what, reason});
      refused_racks[r.id] = reason;
    };
    if (sites.count(r.site_id) == 0) {
      refuse(absl::StrCat("its site ", r.site_id, " is not among the sites read"));
      continue;
    }
    if (!Whole(r.u_height) || r.u_height < 1 || r.u_height > 100) {
      refuse(absl::StrCat("u_height ", r.u_height, ": dcl racks have 1 to 100 whole units"));
      continue;
    }
    const std::optional<bool> rear = RackHasRear(r.form_factor);
    if (!rear) {
      refuse(absl::StrCat("form factor \"", r.form_factor,
                          "\" is not one NetBox defines: its faces are unknown"));
      continue;
    }
    racks[r.id] = &r;
    has_rear[r.id] = *rear;
    RackPlan p;
    p.netbox_id = r.id;
    p.site_netbox_id = r.site_id;
    p.request.set_name(r.name);
    v1::RackGeometry& g = *p.request.mutable_geometry();
    g.set_first_unit(r.starting_unit);
    g.set_unit_count(static_cast<int>(r.u_height));
    g.set_numbering(r.desc_units ? v1::NUMBERING_DESCENDING : v1::NUMBERING_ASCENDING);
    g.set_has_rear(*rear);
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
    auto refuse = [&](const std::string& reason) {
      plan.refused.push_back({DeviceWhat(d), reason});
    };
    // What takes no rack unit first: those are skipped whatever else is wrong with them.
    if (d.parent_device_id) {
      skip(absl::StrCat("child device in a chassis (parent device ", *d.parent_device_id,
                        "): it takes no rack units of its own"));
      continue;
    }
    auto type_it = types.find(d.device_type_id);
    const DeviceType* t = type_it == types.end() ? nullptr : type_it->second;
    if (t != nullptr && t->u_height == 0) {
      skip("0U device: mounted outside the rack units (side rails, PDU channel)");
      continue;
    }
    if (t != nullptr && !Whole(t->u_height)) {
      skip(absl::StrCat("half-U device (u_height ", t->u_height,
                        "): dcl books whole rack units only"));
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
    if (t == nullptr) {
      refuse(absl::StrCat("its device type ", d.device_type_id,
                          " is not among the device types read: its height is unknown"));
      continue;
    }
    if (t->u_height < 0 || t->u_height > 20) {
      refuse(absl::StrCat("u_height ", t->u_height, ": dcl devices are 1 to 20 units high"));
      continue;
    }
    if (auto refused = refused_racks.find(*d.rack_id); refused != refused_racks.end()) {
      refuse(absl::StrCat("its rack ", *d.rack_id, " is refused (", refused->second, ")"));
      continue;
    }
    if (racks.count(*d.rack_id) == 0) {
      refuse(absl::StrCat("its rack ", *d.rack_id, " is not among the racks read"));
      continue;
    }
    if (!Whole(*d.position) || *d.position < -1e6 || *d.position > 1e6) {
      refuse(absl::StrCat("position ", *d.position, ": dcl books whole rack units only"));
      continue;
    }
    const Rack& rack = *racks[*d.rack_id];
    const bool rear = has_rear[rack.id];
    const bool half = !t->is_full_depth;
    if (d.face != "" && d.face != "front" && d.face != "rear") {
      refuse(absl::StrCat("face \"", d.face, "\" is not one NetBox defines (front, rear)"));
      continue;
    }
    // A half-depth device hangs on one face; NetBox itself refuses a position without a face.
    // Which face it is decides which units stay free, so it is never guessed. A full-depth
    // device takes both faces (and a rack without a rear has one), so no unit depends on it.
    if (d.face.empty() && half && rear) {
      refuse(absl::StrCat("half-depth device at position ", *d.position,
                          " without a face: NetBox does not say whether it hangs at the front "
                          "or the rear"));
      continue;
    }
    DevicePlan p;
    p.netbox_id = d.id;
    p.netbox_name = d.name;
    p.site_netbox_id = d.site_id;
    v1::RegisterDeviceRequest& r = p.request;
    r.set_vendor(t->manufacturer);
    r.set_model(t->model);
    r.set_serial(d.serial);
    r.set_height_units(static_cast<int>(t->u_height));
    r.set_depth_class(half ? v1::DEPTH_HALF : v1::DEPTH_FULL);
    r.set_initial_state(d.status == "active" ? v1::PROCESS_NORMAL : v1::PROCESS_STAGING);
    r.set_request_id(DerivedRequestId(absl::StrCat("netbox device ", d.id)));
    p.rack_netbox_id = rack.id;
    // A rack with one mounting plane has only a front in dcl; NetBox may still say rear.
    p.side = d.face == "rear" && rear ? v1::SIDE_REAR : v1::SIDE_FRONT;
    p.lowest_number = static_cast<int>(*d.position);
    p.unit = rack.desc_units ? p.lowest_number + static_cast<int>(t->u_height) - 1 : p.lowest_number;
    const int first = rack.starting_unit, last = rack.starting_unit + static_cast<int>(rack.u_height) - 1;
    if (p.lowest_number < first || p.lowest_number + r.height_units() - 1 > last) {
      refuse(absl::StrCat("position ", p.lowest_number, " with ", r.height_units(),
                          " units is outside its rack's units ", first, "-", last));
      continue;
    }
    plan.devices.push_back(p);
  }

  // The slots the plan's placements take (the overlapping ones take nothing), for the
  // reservations below.
  const std::map<int64_t, std::vector<v1::Slot>> overlaps = OverlappingPlacements(plan);
  std::map<int64_t, Holders> placed;  // rack netbox id → its slots' holders
  for (const DevicePlan& d : plan.devices) {
    if (overlaps.count(d.netbox_id) > 0) continue;
    for (const v1::Slot& s :
         ClaimedSlots(d.lowest_number, d.request.height_units(), d.side, d.request.depth_class(),
                      has_rear[d.rack_netbox_id])) {
      placed[d.rack_netbox_id][{s.side(), s.unit()}] =
          absl::StrCat("device ", d.netbox_id, d.netbox_name.empty() ? "" : " (" + d.netbox_name + ")");
    }
  }

  for (const RackReservation& res : in.reservations) {
    const std::string what = absl::StrCat("rack reservation ", res.id);
    if (auto refused = refused_racks.find(res.rack_id); refused != refused_racks.end()) {
      plan.refused.push_back(
          {what, absl::StrCat("its rack ", res.rack_id, " is refused (", refused->second, ")")});
      continue;
    }
    auto rack_it = racks.find(res.rack_id);
    if (rack_it == racks.end()) {
      plan.refused.push_back({what, absl::StrCat("its rack ", res.rack_id,
                                                 " is not among the racks read")});
      continue;
    }
    std::set<int> units(res.units.begin(), res.units.end());
    if (units.empty()) {
      plan.skipped.push_back({what, "no units"});
      continue;
    }
    const Rack& rack = *rack_it->second;
    const int first_unit = rack.starting_unit;
    const int last_unit = rack.starting_unit + static_cast<int>(rack.u_height) - 1;
    if (*units.begin() < first_unit || *units.rbegin() > last_unit) {
      plan.refused.push_back({what, absl::StrCat("units outside its rack's units ", first_unit,
                                                 "-", last_unit)});
      continue;
    }
    const bool rear = has_rear[res.rack_id];
    std::string reason = absl::StrCat("NetBox rack reservation ", res.id);
    if (!res.user.empty()) absl::StrAppend(&reason, " for ", res.user);
    if (!res.description.empty()) absl::StrAppend(&reason, ": ", res.description);
    // One blocking per contiguous run of units, without the slots a device takes.
    auto it = units.begin();
    while (it != units.end()) {
      const int first = *it;
      int last = first;
      for (++it; it != units.end() && *it == last + 1; ++it) last = *it;
      v1::BlockUnitsRequest run;
      run.set_first_unit(first);
      run.set_last_unit(last);
      run.set_both_sides(rear);
      run.set_side(rear ? v1::SIDE_UNSPECIFIED : v1::SIDE_FRONT);
      run.set_reason(reason);
      SplitBlock split = SplitByHolders(run, rear, placed[res.rack_id]);
      for (v1::BlockUnitsRequest& free : split.free) {
        BlockPlan b;
        b.netbox_id = res.id;
        b.rack_netbox_id = res.rack_id;
        b.request = std::move(free);
        plan.blocks.push_back(std::move(b));
      }
      for (const std::string& line : split.held) plan.held.push_back({what, line});
    }
  }
  return plan;
}

std::vector<v1::Slot> BlockedSlots(const v1::BlockUnitsRequest& block) {
  std::vector<v1::Slot> out;
  for (int u = block.first_unit(); u <= block.last_unit(); ++u) {
    for (v1::Side side : {v1::SIDE_FRONT, v1::SIDE_REAR}) {
      if (!block.both_sides() && side != block.side()) continue;
      v1::Slot s;
      s.set_side(side);
      s.set_unit(u);
      out.push_back(s);
    }
  }
  return out;
}

SplitBlock SplitByHolders(const v1::BlockUnitsRequest& block, bool has_rear,
                          const Holders& holders) {
  SplitBlock out;
  // Per unit, the sides the blocking wants that nobody holds; runs of units with the same free
  // sides become one blocking each.
  std::map<std::string, std::vector<v1::Slot>> held_by;
  auto flush = [&](int first, int last, bool front, bool rear) {
    if (!front && !rear) return;
    v1::BlockUnitsRequest r = block;
    r.set_first_unit(first);
    r.set_last_unit(last);
    r.set_both_sides(front && rear);
    r.set_side(front && rear ? v1::SIDE_UNSPECIFIED : front ? v1::SIDE_FRONT : v1::SIDE_REAR);
    out.free.push_back(std::move(r));
  };
  int run_first = 0;
  bool run_front = false, run_rear = false, in_run = false;
  for (int u = block.first_unit(); u <= block.last_unit() + 1; ++u) {
    bool front = false, rear = false;
    if (u <= block.last_unit()) {
      for (v1::Side side : {v1::SIDE_FRONT, v1::SIDE_REAR}) {
        const bool wanted = block.both_sides() ? (side == v1::SIDE_FRONT || has_rear)
                                               : side == block.side();
        if (!wanted) continue;
        auto h = holders.find({side, u});
        if (h != holders.end()) {
          v1::Slot s;
          s.set_side(side);
          s.set_unit(u);
          held_by[h->second].push_back(s);
          continue;
        }
        (side == v1::SIDE_FRONT ? front : rear) = true;
      }
    }
    if (in_run && (u > block.last_unit() || front != run_front || rear != run_rear)) {
      flush(run_first, u - 1, run_front, run_rear);
      in_run = false;
    }
    if (!in_run && (front || rear)) {
      in_run = true;
      run_first = u;
      run_front = front;
      run_rear = rear;
    }
  }
  for (const auto& [holder, slots] : held_by) {
    out.held.push_back(absl::StrCat(DescribeSlotRanges(slots), " held by ", holder));
  }
  return out;
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
