#include "dclctl/netbox/netbox_plan.h"

#include <openssl/sha.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "dclctl/format/rack_elevation.h"

namespace dcl::admin::netbox {
namespace {

bool Whole(double d) { return std::floor(d) == d; }

std::string DeviceWhat(const Device& d) {
  return absl::StrCat("device ", d.id, d.name.empty() ? "" : " (" + d.name + ")");
}

// The figures of one device as NetBox records them, into its registration; what is not
// recorded is named in `unknown`. INVALID_ARGUMENT for a corrupt figure.
absl::Status SetFigures(const Device& d, const DeviceType& t,
                        const std::vector<const PowerPort*>& ports,
                        v1::RegisterDeviceRequest& r, std::vector<std::string>& unknown) {
  const std::string airflow = d.airflow.empty() ? t.airflow : d.airflow;
  const std::optional<v1::Airflow> flow = AirflowOf(airflow);
  if (!flow) {
    return absl::InvalidArgumentError(
        absl::StrCat("airflow \"", airflow, "\" is not one NetBox defines"));
  }
  if (*flow == v1::AIRFLOW_UNSPECIFIED) unknown.push_back("airflow (none recorded)");
  r.set_airflow(*flow);
  if (t.weight) {
    absl::StatusOr<int> kg = Kilograms(*t.weight, t.weight_unit, /*round_up=*/true);
    if (!kg.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("its device type's weight: ", kg.status().message()));
    }
    r.set_weight_kg(*kg);
  } else {
    unknown.push_back("weight (its device type records none)");
  }
  absl::StatusOr<DevicePower> power = PowerOf(ports);
  if (!power.ok()) return power.status();
  if (power->ports == 0) {
    unknown.push_back("power and power ports (no power port recorded)");
    return absl::OkStatus();
  }
  r.set_power_port_count(power->ports);
  if (power->allocated_watts) {
    r.set_power_draw_watts(*power->allocated_watts);
  } else {
    unknown.push_back("power (" + power->unknown_why + ")");
  }
  return absl::OkStatus();
}

// Per rack (NetBox id): its active feeds as dcl's, or why its power cannot be read.
struct RackFeeds {
  std::map<int64_t, std::vector<v1::PowerFeed>> feeds;
  std::map<int64_t, std::string> refused;
};

RackFeeds FeedsByRack(const Export& in, std::vector<Skipped>& skipped) {
  RackFeeds out;
  std::map<int64_t, const PowerPanel*> panels;
  for (const PowerPanel& p : in.power_panels) panels[p.id] = &p;
  std::map<int64_t, const Rack*> racks;
  for (const Rack& r : in.racks) racks[r.id] = &r;
  std::map<int64_t, std::vector<std::pair<const PowerFeed*, v1::PowerFeed>>> by_rack;
  for (const PowerFeed& f : in.power_feeds) {
    const std::string what = absl::StrCat("power feed ", f.id, " (", f.name, ")");
    if (!f.rack_id) {
      skipped.push_back({what, "feeds no rack: dcl keeps power feeds per rack"});
      continue;
    }
    auto rack = racks.find(*f.rack_id);
    if (rack == racks.end()) {
      skipped.push_back({what, absl::StrCat("its rack ", *f.rack_id,
                                            " is not among the racks read")});
      continue;
    }
    auto refuse = [&](const std::string& reason) {
      if (out.refused.count(*f.rack_id) == 0) out.refused[*f.rack_id] = what + ": " + reason;
    };
    auto panel = panels.find(f.power_panel_id);
    if (panel == panels.end()) {
      refuse(absl::StrCat("its power panel ", f.power_panel_id,
                          " is not among the panels read: its site is unknown"));
      continue;
    }
    if (panel->second->site_id != rack->second->site_id) {
      refuse(absl::StrCat("its power panel ", panel->second->id, " (", panel->second->name,
                          ") is at site ", panel->second->site_id, ", its rack at site ",
                          rack->second->site_id, ": another site's feed"));
      continue;
    }
    if (f.status != "active") {
      // A planned, offline or failed feed carries nothing now; counting it would promise power
      // the rack does not have.
      skipped.push_back({what, absl::StrCat("status \"", f.status,
                                            "\": only active feeds carry power")});
      continue;
    }
    absl::StatusOr<v1::PowerFeed> feed = FeedOf(f);
    if (!feed.ok()) {
      refuse(std::string(feed.status().message()));
      continue;
    }
    by_rack[*f.rack_id].push_back({&f, *feed});
  }
  for (auto& [rack, feeds] : by_rack) {
    if (out.refused.count(rack) > 0) continue;
    if (feeds.size() > 32) {
      out.refused[rack] = absl::StrCat(feeds.size(), " active power feeds: dcl holds 32 a rack");
      continue;
    }
    // NetBox names a feed uniquely within its panel; a rack fed from two panels may see one
    // name twice, and those are told apart by their panel's name.
    std::map<std::string, int> names;
    for (const auto& [f, feed] : feeds) ++names[f->name];
    std::set<std::string> seen;
    for (auto& [f, feed] : feeds) {
      if (names[f->name] > 1) {
        feed.set_name(absl::StrCat(panels[f->power_panel_id]->name, "/", f->name));
      }
      if (feed.name().empty() || feed.name().size() > 200 || !seen.insert(feed.name()).second) {
        out.refused[rack] = absl::StrCat("power feed ", f->id, ": its name \"", feed.name(),
                                         "\" does not tell it apart from the rack's other feeds");
        break;
      }
      out.feeds[rack].push_back(feed);
    }
    if (out.refused.count(rack) > 0) out.feeds.erase(rack);
  }
  return out;
}

}  // namespace

absl::StatusOr<int> Kilograms(double weight, const std::string& unit, bool round_up) {
  double per_unit = 0;  // kg
  if (unit == "kg") per_unit = 1;
  if (unit == "g") per_unit = 0.001;
  if (unit == "lb") per_unit = 0.45359237;
  if (unit == "oz") per_unit = 0.028349523125;
  if (per_unit == 0) {
    return absl::InvalidArgumentError(
        unit.empty() ? std::string("a weight without a weight_unit")
                     : absl::StrCat("weight_unit \"", unit,
                                    "\" is not one NetBox defines (kg, g, lb, oz)"));
  }
  if (!std::isfinite(weight) || weight < 0) {
    return absl::InvalidArgumentError(absl::StrCat("weight ", weight, " is not a weight"));
  }
  const double kg = weight * per_unit;
  if (kg > 1000000) {
    return absl::InvalidArgumentError(
        absl::StrCat("weight ", weight, " ", unit, " is above 1,000,000 kg"));
  }
  // Decimal weights are exact in NetBox; 1e-9 absorbs the binary fraction of a product such
  // as 2.2046226 lb, so that a weight of whole kilograms is not rounded past itself.
  return static_cast<int>(round_up ? std::ceil(kg - 1e-9) : std::floor(kg + 1e-9));
}

std::optional<v1::Airflow> AirflowOf(const std::string& value) {
  // Every value of NetBox's DeviceAirflowChoices (RackAirflowChoices: the first two).
  static const std::map<std::string, v1::Airflow> kAirflows = {
      {"", v1::AIRFLOW_UNSPECIFIED},
      {"front-to-rear", v1::AIRFLOW_FRONT_TO_REAR},
      {"rear-to-front", v1::AIRFLOW_REAR_TO_FRONT},
      {"left-to-right", v1::AIRFLOW_LEFT_TO_RIGHT},
      {"right-to-left", v1::AIRFLOW_RIGHT_TO_LEFT},
      {"side-to-rear", v1::AIRFLOW_SIDE_TO_REAR},
      {"rear-to-side", v1::AIRFLOW_REAR_TO_SIDE},
      {"bottom-to-top", v1::AIRFLOW_BOTTOM_TO_TOP},
      {"top-to-bottom", v1::AIRFLOW_TOP_TO_BOTTOM},
      {"passive", v1::AIRFLOW_PASSIVE},
      {"mixed", v1::AIRFLOW_MIXED},
  };
  auto it = kAirflows.find(value);
  if (it == kAirflows.end()) return std::nullopt;
  return it->second;
}

absl::StatusOr<v1::PowerFeed> FeedOf(const PowerFeed& f) {
  v1::PowerFeed out;
  out.set_name(f.name);
  if (f.supply != "" && f.supply != "ac" && f.supply != "dc") {
    return absl::InvalidArgumentError(
        absl::StrCat("supply \"", f.supply, "\" is not one NetBox defines (ac, dc)"));
  }
  // NetBox records a DC feed's voltage with its sign (-48 V); the power is its magnitude's.
  const double volts = f.supply == "dc" ? std::fabs(f.voltage) : f.voltage;
  if (!Whole(volts) || volts < 1 || volts > 1000) {
    return absl::InvalidArgumentError(
        absl::StrCat("voltage ", f.voltage, ": dcl holds 1 to 1000 whole volts"));
  }
  if (!Whole(f.amperage) || f.amperage < 1 || f.amperage > 1000) {
    return absl::InvalidArgumentError(
        absl::StrCat("amperage ", f.amperage, ": dcl holds 1 to 1000 whole amperes"));
  }
  if (f.phase == "single-phase") {
    out.set_phase(v1::POWER_PHASE_SINGLE);
  } else if (f.phase == "three-phase" && f.supply != "dc") {
    out.set_phase(v1::POWER_PHASE_THREE);
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "phase \"", f.phase, "\"", f.supply == "dc" ? " of a DC feed" : "",
        " is not single-phase or three-phase: its rating is unknown"));
  }
  const double utilization = f.max_utilization.value_or(80);
  if (!Whole(utilization) || utilization < 1 || utilization > 100) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_utilization ", utilization, ": 1 to 100 whole percent"));
  }
  out.set_voltage(static_cast<int>(volts));
  out.set_amperage(static_cast<int>(f.amperage));
  out.set_max_utilization(static_cast<int>(utilization));
  return out;
}

absl::StatusOr<DevicePower> PowerOf(const std::vector<const PowerPort*>& ports) {
  DevicePower out;
  if (ports.size() > 16) {
    return absl::InvalidArgumentError(
        absl::StrCat(ports.size(), " power ports: dcl holds 0 to 16 a device"));
  }
  out.ports = static_cast<int>(ports.size());
  int64_t sum = 0;
  for (const PowerPort* p : ports) {
    for (const auto& [field, draw] : {std::pair{"allocated_draw", p->allocated_draw},
                                      std::pair{"maximum_draw", p->maximum_draw}}) {
      if (draw && (!Whole(*draw) || *draw < 0 || *draw > 1000000)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "power port ", p->id, ": ", field, " ", *draw, " is not 0 to 1,000,000 whole watts"));
      }
    }
    if (!p->allocated_draw) {
      if (out.unknown_why.empty()) {
        out.unknown_why = absl::StrCat("power port ", p->id, " records no allocated_draw");
      }
      continue;
    }
    sum += static_cast<int64_t>(*p->allocated_draw);
  }
  if (out.unknown_why.empty()) {
    if (sum > 1000000) {
      return absl::InvalidArgumentError(
          absl::StrCat("its power ports' allocated_draw add up to ", sum, " W, above 1,000,000"));
    }
    out.allocated_watts = static_cast<int>(sum);
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
  const RackFeeds feeds = FeedsByRack(in, plan.skipped);
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
    // A rack whose power, weight or airflow NetBox records and dcl cannot read is refused
    // whole: imported without them, its devices would be booked against no budget at all.
    if (auto why = feeds.refused.find(r.id); why != feeds.refused.end()) {
      refuse(why->second);
      continue;
    }
    std::optional<int> weight_budget;
    if (r.max_weight) {
      absl::StatusOr<int> kg = Kilograms(*r.max_weight, r.weight_unit, /*round_up=*/false);
      if (!kg.ok()) {
        refuse(absl::StrCat("max_weight: ", kg.status().message()));
        continue;
      }
      if (*kg < 1) {
        refuse(absl::StrCat("max_weight ", *r.max_weight, " ", r.weight_unit,
                            " is below 1 kg: not a rack's load"));
        continue;
      }
      weight_budget = *kg;
    }
    const std::optional<v1::Airflow> rack_airflow = AirflowOf(r.airflow);
    if (!rack_airflow || (*rack_airflow != v1::AIRFLOW_UNSPECIFIED &&
                          *rack_airflow != v1::AIRFLOW_FRONT_TO_REAR &&
                          *rack_airflow != v1::AIRFLOW_REAR_TO_FRONT)) {
      refuse(absl::StrCat("airflow \"", r.airflow,
                          "\" is not a rack's (front-to-rear, rear-to-front)"));
      continue;
    }
    racks[r.id] = &r;
    has_rear[r.id] = *rear;
    RackPlan p;
    if (auto f = feeds.feeds.find(r.id); f != feeds.feeds.end()) p.feeds = f->second;
    p.weight_budget_kg = weight_budget;
    p.airflow = *rack_airflow;
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
  std::map<int64_t, std::vector<const PowerPort*>> ports;  // device netbox id → its ports
  for (const PowerPort& p : in.power_ports) ports[p.device_id].push_back(&p);

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
    std::vector<std::string> unknown;
    if (absl::Status figures = SetFigures(d, *t, ports[d.id], r, unknown); !figures.ok()) {
      refuse(std::string(figures.message()));
      continue;
    }
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
    if (!unknown.empty()) {
      plan.unknown.push_back({DeviceWhat(d), absl::StrCat(absl::StrJoin(unknown, ", "),
                                                          ": left unknown in dcl")});
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
