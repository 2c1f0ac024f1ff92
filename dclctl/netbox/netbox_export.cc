#include "dclctl/netbox/netbox_export.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <set>

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include "absl/strings/str_cat.h"

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
  // A number that may be null or absent (nullopt); anything else there but a number is a
  // corrupt export, never read as "not recorded".
  absl::StatusOr<std::optional<double>> NullableNumber(const std::string& key) const {
    if (Get(key) == nullptr) return std::optional<double>();
    absl::StatusOr<double> n = Number(key);
    if (!n.ok()) return n.status();
    if (!std::isfinite(*n)) return Bad(where_, "\"" + key + "\" is not a finite number");
    return std::optional<double>(*n);
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
      ASSIGN_OR_RETURN_NB(max_weight, o.NullableNumber("max_weight"));
      r.max_weight = max_weight;
      r.weight_unit = o.Choice("weight_unit");
      r.airflow = o.Choice("airflow");
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
      t.airflow = o.Choice("airflow");
      ASSIGN_OR_RETURN_NB(weight, o.NullableNumber("weight"));
      t.weight = weight;
      t.weight_unit = o.Choice("weight_unit");
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
      d.airflow = o.Choice("airflow");
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
  // The power lists: absent from a directory saved before they were read, they read as empty.
  auto rows_of = [&](const char* list) -> absl::StatusOr<std::vector<Struct>> {
    if (pages.count(list) == 0) return std::vector<Struct>();
    return Results(pages, list, label(list));
  };
  {
    ASSIGN_OR_RETURN_NB(rows, rows_of("power-panels"));
    for (size_t i = 0; i < rows.size(); ++i) {
      Obj o(rows[i], Where(label("power-panels"), i));
      PowerPanel p;
      ASSIGN_OR_RETURN_NB(id, o.Id());
      p.id = id;
      ASSIGN_OR_RETURN_NB(site, o.Ref("site"));
      if (!site) return Bad(o.where(), "no \"site\"");
      p.site_id = *site;
      p.name = o.Text("name");
      out.power_panels.push_back(p);
    }
  }
  {
    ASSIGN_OR_RETURN_NB(rows, rows_of("power-feeds"));
    for (size_t i = 0; i < rows.size(); ++i) {
      Obj o(rows[i], Where(label("power-feeds"), i));
      PowerFeed f;
      ASSIGN_OR_RETURN_NB(id, o.Id());
      f.id = id;
      ASSIGN_OR_RETURN_NB(panel, o.Ref("power_panel"));
      if (!panel) return Bad(o.where(), "no \"power_panel\"");
      f.power_panel_id = *panel;
      ASSIGN_OR_RETURN_NB(rack, o.Ref("rack"));
      f.rack_id = rack;
      f.name = o.Text("name");
      f.status = o.Choice("status");
      f.supply = o.Choice("supply");
      f.phase = o.Choice("phase");
      ASSIGN_OR_RETURN_NB(voltage, o.Number("voltage"));
      ASSIGN_OR_RETURN_NB(amperage, o.Number("amperage"));
      f.voltage = voltage;
      f.amperage = amperage;
      ASSIGN_OR_RETURN_NB(max_utilization, o.NullableNumber("max_utilization"));
      f.max_utilization = max_utilization;
      out.power_feeds.push_back(f);
    }
  }
  {
    ASSIGN_OR_RETURN_NB(rows, rows_of("power-ports"));
    for (size_t i = 0; i < rows.size(); ++i) {
      Obj o(rows[i], Where(label("power-ports"), i));
      PowerPort p;
      ASSIGN_OR_RETURN_NB(id, o.Id());
      p.id = id;
      ASSIGN_OR_RETURN_NB(device, o.Ref("device"));
      if (!device) return Bad(o.where(), "no \"device\"");
      p.device_id = *device;
      ASSIGN_OR_RETURN_NB(allocated, o.NullableNumber("allocated_draw"));
      ASSIGN_OR_RETURN_NB(maximum, o.NullableNumber("maximum_draw"));
      p.allocated_draw = allocated;
      p.maximum_draw = maximum;
      out.power_ports.push_back(p);
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
    if (it == files.end()) continue;  // ParseLists names it, or reads an absent power list as empty
    absl::StatusOr<std::vector<std::string>> split = SplitPages(it->second);
    if (!split.ok()) return Bad(kFiles[i], std::string(split.status().message()));
    pages[kLists[i]] = *std::move(split);
  }
  return ParseLists(pages, ".json");
}

}  // namespace dcl::admin::netbox
