#include "dclctl/netbox/netbox_plan.h"

#include <openssl/sha.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "dclctl/format/rack_elevation.h"

namespace dcl::admin::netbox {
namespace {

bool Whole(double d) { return std::floor(d) == d; }

std::string DeviceWhat(const Device& d) {
  return absl::StrCat("device ", d.id, d.name.empty() ? "" : " (" + d.name + ")");
}

}  // namespace

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
