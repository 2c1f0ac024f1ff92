#include "dclctl/format/delivery_format.h"

#include <algorithm>
#include <map>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "dclctl/format/cli_format.h"
#include "dclctl/format/rack_elevation.h"
#include "dclctl/format/text_table.h"

namespace dcl::admin {
namespace {

// "front U5..U6, rear U5..U6": a planned item's slots, one range per side.
std::string UnitsText(const google::protobuf::RepeatedPtrField<v1::Slot>& slots) {
  std::map<int, std::vector<int>> by_side;
  for (const v1::Slot& s : slots) by_side[s.side()].push_back(s.unit());
  std::vector<std::string> parts;
  for (auto& [side, units] : by_side) {
    std::sort(units.begin(), units.end());
    const std::string name = SideName(static_cast<v1::Side>(side));
    parts.push_back(units.front() == units.back()
                        ? absl::StrCat(name, " U", units.front())
                        : absl::StrCat(name, " U", units.front(), "..U", units.back()));
  }
  return absl::StrJoin(parts, ", ");
}

std::string Figure(int64_t value) {
  std::string digits = std::to_string(value);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// "5,400 → 6,200 of 6,000" (as the database counts it), "300 → 1,100 (no budget)", with what
// has no figure (counted 0), a rack held over its budget, or one whose load is unknown.
std::string DimensionText(const v1::DeliveryDimension& d) {
  std::string out = absl::StrCat(Figure(d.known_before()), " → ", Figure(d.used_after()));
  absl::StrAppend(&out, d.budget_known() ? absl::StrCat(" of ", Figure(d.budget()))
                                         : std::string(" (no budget)"));
  if (d.allowance() > 0) absl::StrAppend(&out, " (over by ", Figure(d.allowance()), ")");
  if (d.load_unknown()) absl::StrAppend(&out, ", load unknown: no addition");
  if (d.unknown_size() > 0) absl::StrAppend(&out, ", ", d.unknown_size(), " unknown");
  return out;
}

std::vector<std::string> PlanLines(const v1::DeliveryPlan& plan,
                                   const v1::DeliveryReservation* reservation) {
  std::vector<std::string> lines;
  lines.push_back(absl::StrCat(plan.planned_size(), " of ",
                               plan.planned_size() + plan.unplaced_size(), " items planned (",
                               plan.strategy(), ")"));
  if (plan.planned_size() > 0) {
    std::vector<std::string> header = {"ITEM", "RACK", "SIDE", "UNIT", "SLOTS"};
    if (reservation != nullptr) header.push_back("RESERVATION");
    std::vector<std::vector<std::string>> rows;
    for (int i = 0; i < plan.planned_size(); ++i) {
      const v1::PlannedDeliveryItem& p = plan.planned(i);
      std::vector<std::string> row = {p.name(), p.rack_name(), SideName(p.side()),
                                      absl::StrCat("U", p.unit()), UnitsText(p.slots())};
      if (reservation != nullptr) {
        row.push_back(i < reservation->reservations_size() ? reservation->reservations(i).id()
                                                           : "");
      }
      rows.push_back(std::move(row));
    }
    lines.push_back("");
    for (std::string& l : FormatTable(header, rows)) lines.push_back(std::move(l));
  }
  if (plan.racks_size() > 0) {
    std::vector<std::vector<std::string>> rows;
    for (const v1::DeliveryRack& r : plan.racks()) {
      rows.push_back({r.rack_name(), std::to_string(r.items_planned()),
                      absl::StrCat(r.free_front_before(), " → ", r.free_front_after()),
                      absl::StrCat(r.free_rear_before(), " → ", r.free_rear_after()),
                      DimensionText(r.power_watts()), DimensionText(r.weight_kg())});
    }
    lines.push_back("");
    for (std::string& l : FormatTable(
             {"RACK", "ITEMS", "FREE FRONT", "FREE REAR", "POWER W", "WEIGHT KG"}, rows, {1})) {
      lines.push_back(std::move(l));
    }
    // What has no figure, by name: a device booked without one (the load is unknown), or a
    // reservation or planned item holding units only.
    for (const v1::DeliveryRack& r : plan.racks()) {
      if (r.power_watts().unknown_size() > 0) {
        lines.push_back(absl::StrCat("  ", r.rack_name(), " power unknown: ",
                                     absl::StrJoin(r.power_watts().unknown(), ", ")));
      }
      if (r.weight_kg().unknown_size() > 0) {
        lines.push_back(absl::StrCat("  ", r.rack_name(), " weight unknown: ",
                                     absl::StrJoin(r.weight_kg().unknown(), ", ")));
      }
    }
  }
  for (const v1::UnplacedDeliveryItem& u : plan.unplaced()) {
    lines.push_back("");
    lines.push_back(absl::StrCat(u.name(), " fits nowhere:"));
    for (const std::string& reason : u.reasons()) lines.push_back("  " + reason);
  }
  return lines;
}

}  // namespace

absl::StatusOr<v1::DeliveryItem> ParseDeliveryItem(const std::string& text) {
  v1::DeliveryItem item;
  if (text.find('/') == std::string::npos) {
    if (text.size() != 36) {
      return absl::InvalidArgumentError(absl::StrCat(
          "item \"", text, "\" is neither a device id nor a spec like 2U/full/800W/25kg/x4"));
    }
    item.set_device_id(text);
    return item;
  }
  std::vector<std::string> parts = absl::StrSplit(text, '/');
  v1::DeliverySpec* spec = item.mutable_spec();
  auto bad = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat("item \"", text, "\": ", why));
  };
  int height = 0;
  if (parts.size() < 2 || !absl::EndsWithIgnoreCase(parts[0], "U") ||
      !absl::SimpleAtoi(parts[0].substr(0, parts[0].size() - 1), &height) || height < 1) {
    return bad("start with the height and the depth, e.g. 2U/full");
  }
  spec->set_height_units(height);
  v1::DepthClass depth;
  if (!ParseDepthClass(parts[1], &depth)) return bad("the depth is full, half or unknown");
  spec->set_depth_class(depth);
  for (size_t i = 2; i < parts.size(); ++i) {
    const std::string& p = parts[i];
    int value = 0;
    if (absl::EndsWithIgnoreCase(p, "kg") &&
        absl::SimpleAtoi(p.substr(0, p.size() - 2), &value)) {
      if (spec->has_weight_kg()) return bad("two weights");
      spec->set_weight_kg(value);
    } else if (absl::EndsWithIgnoreCase(p, "W") &&
               absl::SimpleAtoi(p.substr(0, p.size() - 1), &value)) {
      if (spec->has_power_draw_watts()) return bad("two power figures");
      spec->set_power_draw_watts(value);
    } else if (!p.empty() && (p[0] == 'x' || p[0] == 'X') &&
               absl::SimpleAtoi(p.substr(1), &value)) {
      if (value < 1) return bad("a count is at least 1");
      spec->set_count(value);
    } else if (spec->label().empty() && !p.empty()) {
      spec->set_label(p);
    } else {
      return bad(absl::StrCat("\"", p, "\" is not a figure (800W, 25kg, x4) or a label"));
    }
  }
  return item;
}

std::vector<std::string> DeliveryPlanText(const v1::DeliveryPlan& plan) {
  return PlanLines(plan, nullptr);
}

std::vector<std::string> DeliveryReservationText(const v1::DeliveryReservation& reservation) {
  std::vector<std::string> lines = PlanLines(reservation.plan(), &reservation);
  lines.push_back("");
  lines.push_back(absl::StrCat(reservation.reservations_size(),
                               " unit reservations; place each item with: dclctl delivery place "
                               "RESERVATION_ID --rack R --device D --side S --unit U"));
  return lines;
}

std::string DeliverySvg(const std::vector<v1::Rack>& racks,
                        const google::protobuf::RepeatedPtrField<v1::PlannedDeliveryItem>& planned) {
  constexpr int kGap = 24;
  std::string body;
  int x = 0;
  int height = 0;
  for (const v1::Rack& original : racks) {
    v1::Rack rack = original;
    DeviceLabels labels;
    for (const v1::PlannedDeliveryItem& p : planned) {
      if (p.rack_id() != rack.id()) continue;
      // A planned item is drawn as the reservation it becomes, labelled with its name.
      const std::string key = p.device_id().empty() ? "planned " + p.name() : p.device_id();
      labels[key] = "planned: " + p.name();
      for (const v1::Slot& s : p.slots()) {
        v1::ElevationSlot* e = rack.add_occupied();
        *e->mutable_slot() = s;
        e->set_booking_id("planned " + p.name());
        e->set_kind(v1::BOOKING_RESERVATION);
        e->set_device_id(key);
      }
    }
    std::string svg = RackElevationSvg(rack, labels);
    // Nested as an <svg> at its offset: drop the XML declaration, read the root's size.
    const size_t root = svg.find("<svg ");
    if (root == std::string::npos) continue;
    svg = svg.substr(root);
    int width = 0;
    int h = 0;
    const size_t w_at = svg.find("width=\"");
    const size_t h_at = svg.find("height=\"");
    if (w_at == std::string::npos || h_at == std::string::npos ||
        !absl::SimpleAtoi(svg.substr(w_at + 7, svg.find('"', w_at + 7) - w_at - 7), &width) ||
        !absl::SimpleAtoi(svg.substr(h_at + 8, svg.find('"', h_at + 8) - h_at - 8), &h)) {
      continue;
    }
    svg.replace(0, 4, absl::StrCat("<svg x=\"", x, "\" y=\"0\""));
    absl::StrAppend(&body, svg, "\n");
    x += width + kGap;
    height = std::max(height, h);
  }
  const int width = x > 0 ? x - kGap : 0;
  return absl::StrCat("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n",
                      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"", width, "\" height=\"",
                      height, "\" viewBox=\"0 0 ", width, " ", height, "\">\n", body, "</svg>\n");
}

}  // namespace dcl::admin
