#include "services/occupancy/delivery_plan.h"

#include <algorithm>
#include <limits>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace dcl::occupancy {
namespace {

constexpr int64_t kUnlimited = std::numeric_limits<int64_t>::max();

// What an item's reservation adds: its figure, or 0 when it has none (units only).
int64_t ItemPower(const DeliveryItem& item) { return item.power_watts.value_or(0); }
int64_t ItemWeight(const DeliveryItem& item) { return item.weight_kg.value_or(0); }

int64_t KnownSum(const std::vector<LoadFigure>& figures) {
  int64_t sum = 0;
  for (const LoadFigure& f : figures) sum += f.value.value_or(0);
  return sum;
}

// Which sides an item claims, and the side it hangs on.
struct SideMode {
  v1::Side hangs_on = v1::SIDE_FRONT;
  bool front = false;
  bool rear = false;
};

// The side modes an item may take in a rack, in preference order (front before rear). Empty:
// the side does not exist (an open frame has no rear).
std::vector<SideMode> SideModes(const Geometry& g, const DeliveryItem& item, v1::Side wanted) {
  std::vector<SideMode> modes;
  if (wanted == v1::SIDE_REAR && !g.has_rear) return modes;
  if (item.depth == v1::DEPTH_HALF) {
    for (v1::Side side : {v1::SIDE_FRONT, v1::SIDE_REAR}) {
      if (wanted != v1::SIDE_UNSPECIFIED && wanted != side) continue;
      if (side == v1::SIDE_REAR && !g.has_rear) continue;
      modes.push_back({side, side == v1::SIDE_FRONT, side == v1::SIDE_REAR});
    }
    return modes;
  }
  // Full or unknown depth: front and rear at the same units; the front only on an open frame.
  const v1::Side hangs_on = wanted == v1::SIDE_UNSPECIFIED ? v1::SIDE_FRONT : wanted;
  modes.push_back({hangs_on, true, g.has_rear});
  return modes;
}

// One rack while a plan is built: which units are taken (index = unit - first_unit), what each
// budget counts, and how many items of this delivery it holds.
struct RackState {
  const DeliveryRack* rack = nullptr;
  std::vector<char> front;
  std::vector<char> rear;
  int64_t power_used = 0;
  int64_t weight_used = 0;
  int items = 0;
};

RackState InitialState(const DeliveryRack& rack) {
  RackState s;
  s.rack = &rack;
  const int n = rack.geometry.unit_count;
  s.front.assign(n, 0);
  s.rear.assign(n, rack.geometry.has_rear ? 0 : 1);
  for (const SlotRef& slot : rack.occupied) {
    const int64_t i = int64_t{slot.unit} - rack.geometry.first_unit;
    if (i < 0 || i >= n) continue;  // outside the rack: cannot collide with anything planned
    (slot.side == v1::SIDE_REAR ? s.rear : s.front)[i] = 1;
  }
  s.power_used = KnownSum(rack.power);
  s.weight_used = KnownSum(rack.weight);
  return s;
}

// A place for one item in one rack: the lowest index of its units, and the free run it sits at
// the bottom of (slack = run length - height).
struct Spot {
  bool found = false;
  SideMode mode;
  int low = 0;
  int slack = 0;
};

enum class Fit { kFirst, kTightestGap, kTightestPower };

// The spot in `s` for `item`: the lowest index for kFirst, the smallest slack (then lowest
// index) otherwise; front before rear at equal rank.
Spot FindSpot(const RackState& s, const DeliveryItem& item, v1::Side wanted, Fit fit) {
  Spot best;
  const int n = s.rack->geometry.unit_count;
  for (const SideMode& mode : SideModes(s.rack->geometry, item, wanted)) {
    int run_start = -1;
    for (int i = 0; i <= n; ++i) {
      const bool free = i < n && !(mode.front && s.front[i]) && !(mode.rear && s.rear[i]);
      if (free) {
        if (run_start < 0) run_start = i;
        continue;
      }
      if (run_start >= 0) {
        const int length = i - run_start;
        if (length >= item.height) {
          Spot spot{true, mode, run_start, length - item.height};
          const bool better =
              !best.found || (fit == Fit::kFirst
                                  ? spot.low < best.low
                                  : (spot.slack != best.slack ? spot.slack < best.slack
                                                              : spot.low < best.low));
          if (better) best = spot;
          if (fit == Fit::kFirst) break;  // the first run that fits is this mode's lowest
        }
        run_start = -1;
      }
    }
  }
  return best;
}

bool PowerTakes(const RackState& s, const DeliveryItem& item, const DeliveryConstraints& c) {
  const DeliveryRack& r = *s.rack;
  return BudgetTakes(r.power_budget_watts, r.power_allowance_watts, r.power_load_unknown,
                     s.power_used, ItemPower(item), c.power_headroom_watts);
}

bool WeightTakes(const RackState& s, const DeliveryItem& item, const DeliveryConstraints& c) {
  const DeliveryRack& r = *s.rack;
  return BudgetTakes(r.weight_budget_kg, r.weight_allowance_kg, r.weight_load_unknown,
                     s.weight_used, ItemWeight(item), c.weight_headroom_kg);
}

// Heat is the power figures' sum judged by the cooling budget (no headroom is asked of it).
bool CoolingTakes(const RackState& s, const DeliveryItem& item) {
  const DeliveryRack& r = *s.rack;
  return BudgetTakes(r.cooling_budget_watts, r.cooling_allowance_watts, false, s.power_used,
                     ItemPower(item), 0);
}

// Why a registered device's airflow keeps it out of the rack (0038's bookings_airflow_known,
// bookings_airflow_matches); "" when it does not. A spec's item is judged at promotion.
std::string AirflowRefusal(const DeliveryRack& r, const DeliveryItem& item) {
  if (r.airflow.empty() || item.device_id.empty()) return "";
  if (item.airflow.empty() || item.airflow == "mixed") {
    return absl::StrCat("airflow ", r.airflow, ", the device's is not known (",
                        item.airflow.empty() ? "unset" : item.airflow, ")");
  }
  const bool opposes = (r.airflow == "front-to-rear" &&
                        (item.airflow == "rear-to-front" || item.airflow == "rear-to-side")) ||
                       (r.airflow == "rear-to-front" &&
                        (item.airflow == "front-to-rear" || item.airflow == "side-to-rear"));
  if (!opposes) return "";
  return absl::StrCat("airflow ", r.airflow, ", the device blows ", item.airflow);
}

bool BudgetsAllow(const RackState& s, const DeliveryItem& item, const DeliveryConstraints& c) {
  return PowerTakes(s, item, c) && WeightTakes(s, item, c) && CoolingTakes(s, item) &&
         AirflowRefusal(*s.rack, item).empty();
}

bool CapAllows(const RackState& s, const DeliveryConstraints& c) {
  return c.max_per_rack <= 0 || s.items < c.max_per_rack;
}

PlannedItem Commit(RackState& s, const DeliveryItem& item, int index, const Spot& spot) {
  const Geometry& g = s.rack->geometry;
  PlannedItem p;
  p.item = index;
  p.rack_id = s.rack->id;
  p.side = spot.mode.hangs_on;
  // The anchor is the device's lowest rack unit: the bottom of its units physically, which is
  // the highest number in a descending rack (rack_plan.h).
  p.anchor_unit = g.descending ? g.first_unit + spot.low + item.height - 1 : g.first_unit + spot.low;
  for (int i = spot.low; i < spot.low + item.height; ++i) {
    if (spot.mode.front) {
      s.front[i] = 1;
      p.slots.push_back({v1::SIDE_FRONT, g.first_unit + i});
    }
    if (spot.mode.rear) {
      s.rear[i] = 1;
      p.slots.push_back({v1::SIDE_REAR, g.first_unit + i});
    }
  }
  std::sort(p.slots.begin(), p.slots.end());
  s.power_used += ItemPower(item);
  s.weight_used += ItemWeight(item);
  ++s.items;
  return p;
}

struct Strategy {
  const char* name;
  bool order_by_power;  // else by height
  Fit fit;
};

constexpr Strategy kStrategies[] = {
    {"first-fit decreasing by height", false, Fit::kFirst},
    {"best fit (tightest gap) decreasing by height", false, Fit::kTightestGap},
    {"best fit (tightest power budget) decreasing by power", true, Fit::kTightestPower},
    {"best fit (tightest gap) decreasing by power", true, Fit::kTightestGap},
};

std::vector<int> ItemOrder(const std::vector<DeliveryItem>& items, bool by_power) {
  std::vector<int> order(items.size());
  for (size_t i = 0; i < items.size(); ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const DeliveryItem& x = items[a];
    const DeliveryItem& y = items[b];
    if (by_power && ItemPower(x) != ItemPower(y)) return ItemPower(x) > ItemPower(y);
    return x.height > y.height;
  });
  return order;
}

struct Attempt {
  std::vector<RackState> states;
  std::vector<PlannedItem> planned;
};

// One strategy over the given racks (indices into `racks`, in order).
Attempt RunStrategy(const std::vector<DeliveryRack>& racks, const std::vector<int>& rack_order,
                    const std::vector<DeliveryItem>& items, const DeliveryConstraints& c,
                    const Strategy& strategy) {
  Attempt a;
  a.states.reserve(rack_order.size());
  for (int r : rack_order) a.states.push_back(InitialState(racks[r]));
  for (int index : ItemOrder(items, strategy.order_by_power)) {
    const DeliveryItem& item = items[index];
    int chosen = -1;
    Spot chosen_spot;
    int64_t chosen_power_left = kUnlimited;
    for (size_t k = 0; k < a.states.size(); ++k) {
      RackState& s = a.states[k];
      if (!CapAllows(s, c) || !BudgetsAllow(s, item, c)) continue;
      const Spot spot = FindSpot(s, item, c.side, strategy.fit);
      if (!spot.found) continue;
      if (strategy.fit == Fit::kFirst) {
        chosen = static_cast<int>(k);
        chosen_spot = spot;
        break;
      }
      const int64_t power_left = s.rack->power_budget_watts
                                     ? *s.rack->power_budget_watts + s.rack->power_allowance_watts -
                                           c.power_headroom_watts - s.power_used - ItemPower(item)
                                     : kUnlimited;
      bool better = chosen < 0;
      if (!better && strategy.fit == Fit::kTightestPower && power_left != chosen_power_left) {
        better = power_left < chosen_power_left;
      } else if (!better) {
        better = spot.slack < chosen_spot.slack;
      }
      if (better) {
        chosen = static_cast<int>(k);
        chosen_spot = spot;
        chosen_power_left = power_left;
      }
    }
    if (chosen >= 0) a.planned.push_back(Commit(a.states[chosen], item, index, chosen_spot));
  }
  std::sort(a.planned.begin(), a.planned.end(),
            [](const PlannedItem& x, const PlannedItem& y) { return x.item < y.item; });
  return a;
}

std::string SidesText(const std::vector<SideMode>& modes) {
  if (modes.size() == 2) return "front or rear";
  if (modes[0].front && modes[0].rear) return "both sides";
  return modes[0].front ? "the front" : "the rear";
}

// Why one dimension refuses an item: "power 5,400 of 6,000 W + 800 W over budget", or "power
// load unknown (a device without a figure): no addition" when the database would refuse any.
std::string OverBudget(const char* dimension, const char* unit, int64_t used, int64_t budget,
                       int64_t allowance, bool load_unknown, int64_t headroom, int64_t item) {
  if (load_unknown && item > 0) {
    return absl::StrCat(dimension, " load unknown (a device without a ", dimension,
                        " figure): no addition");
  }
  std::string out = absl::StrCat(dimension, " ", Thousands(used), " of ", Thousands(budget), " ",
                                 unit, " + ", Thousands(item), " ", unit, " over budget");
  if (allowance > 0) {
    absl::StrAppend(&out, " (the rack stands over its budget: it takes releases only)");
  }
  if (headroom > 0) absl::StrAppend(&out, " with ", Thousands(headroom), " ", unit, " headroom");
  return out;
}

// Why `item` fits nowhere in `s`, one rack's part of the answer: "R101: units free, power ...".
std::string RackReason(const RackState& s, const DeliveryItem& item,
                       const DeliveryConstraints& c, const std::string& together_in) {
  const DeliveryRack& r = *s.rack;
  std::string label = r.name.empty() ? r.id : r.name;
  if (!together_in.empty() && together_in != r.id) {
    return absl::StrCat(label, ": keep together: the delivery goes to another rack");
  }
  std::vector<std::string> parts;
  if (!CapAllows(s, c)) {
    parts.push_back(absl::StrCat("holds ", s.items, " items of this delivery (at most ",
                                 c.max_per_rack, " per rack)"));
  }
  const std::vector<SideMode> modes = SideModes(r.geometry, item, c.side);
  if (modes.empty()) {
    parts.push_back("no rear side (open frame)");
  } else if (!FindSpot(s, item, c.side, Fit::kFirst).found) {
    parts.push_back(absl::StrCat("no ", item.height, " contiguous units free on ",
                                 SidesText(modes)));
  } else {
    parts.push_back("units free");
  }
  if (!PowerTakes(s, item, c)) {
    parts.push_back(OverBudget("power", "W", s.power_used, *r.power_budget_watts,
                               r.power_allowance_watts, r.power_load_unknown,
                               c.power_headroom_watts, ItemPower(item)));
  }
  if (!WeightTakes(s, item, c)) {
    parts.push_back(OverBudget("weight", "kg", s.weight_used, *r.weight_budget_kg,
                               r.weight_allowance_kg, r.weight_load_unknown, c.weight_headroom_kg,
                               ItemWeight(item)));
  }
  if (!CoolingTakes(s, item)) {
    parts.push_back(OverBudget("cooling", "W", s.power_used, *r.cooling_budget_watts,
                               r.cooling_allowance_watts, false, 0, ItemPower(item)));
  }
  if (std::string airflow = AirflowRefusal(r, item); !airflow.empty()) {
    parts.push_back(std::move(airflow));
  }
  return absl::StrCat(label, ": ", absl::StrJoin(parts, ", "));
}

int FreeUnits(const std::vector<char>& side) {
  return static_cast<int>(std::count(side.begin(), side.end(), 0));
}

DimensionView View(std::optional<int64_t> budget, int64_t allowance, bool load_unknown,
                   const std::vector<LoadFigure>& before, int64_t used_after) {
  DimensionView v;
  v.budget = budget;
  v.allowance = allowance;
  v.load_unknown = load_unknown;
  for (const LoadFigure& f : before) {
    if (f.value) {
      v.known_before += *f.value;
    } else {
      v.unknown.push_back(f.name);
    }
  }
  v.used_after = used_after;
  return v;
}

}  // namespace

bool BudgetTakes(std::optional<int64_t> budget, int64_t allowance, bool load_unknown, int64_t used,
                 int64_t amount, int64_t headroom) {
  // A booking that adds nothing changes no row, so no rule judges it (and it takes nothing
  // from the headroom); the database refuses one that adds to a row whose load is unknown.
  if (!budget || amount == 0) return true;
  if (load_unknown) return false;
  return used + amount <= *budget + allowance - headroom;
}

bool RackTakes(const DeliveryRack& rack, std::optional<int64_t> power_watts,
               std::optional<int64_t> weight_kg, bool device) {
  if (device && (((rack.power_budget_watts || rack.cooling_budget_watts) && !power_watts) ||
                 (rack.weight_budget_kg && !weight_kg))) {
    return false;
  }
  return BudgetTakes(rack.power_budget_watts, rack.power_allowance_watts, rack.power_load_unknown,
                     KnownSum(rack.power), power_watts.value_or(0), 0) &&
         BudgetTakes(rack.weight_budget_kg, rack.weight_allowance_kg, rack.weight_load_unknown,
                     KnownSum(rack.weight), weight_kg.value_or(0), 0) &&
         BudgetTakes(rack.cooling_budget_watts, rack.cooling_allowance_watts, false,
                     KnownSum(rack.power), power_watts.value_or(0), 0);
}

std::string Thousands(int64_t value) {
  std::string digits = std::to_string(value < 0 ? -value : value);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return value < 0 ? "-" + out : out;
}

DeliveryPlan PlanDelivery(const std::vector<DeliveryRack>& racks,
                          const std::vector<DeliveryItem>& items,
                          const DeliveryConstraints& constraints) {
  std::vector<int> allowed;
  if (constraints.allowed_rack_ids.empty()) {
    for (size_t r = 0; r < racks.size(); ++r) allowed.push_back(static_cast<int>(r));
  } else {
    std::map<std::string, int> by_id;
    for (size_t r = 0; r < racks.size(); ++r) by_id.emplace(racks[r].id, static_cast<int>(r));
    for (const std::string& id : constraints.allowed_rack_ids) {
      auto it = by_id.find(id);
      if (it != by_id.end() &&
          std::find(allowed.begin(), allowed.end(), it->second) == allowed.end()) {
        allowed.push_back(it->second);
      }
    }
  }

  // Keep together: each allowed rack alone, the one that takes the most items wins. Otherwise
  // every allowed rack at once. Within either, the strategy that places the most wins.
  std::vector<std::vector<int>> candidates;
  if (constraints.keep_together) {
    for (int r : allowed) candidates.push_back({r});
  } else {
    candidates.push_back(allowed);
  }
  std::optional<Attempt> best;
  const char* best_name = "";
  std::string together_in;
  for (const std::vector<int>& rack_order : candidates) {
    for (const Strategy& strategy : kStrategies) {
      Attempt a = RunStrategy(racks, rack_order, items, constraints, strategy);
      if (!best || a.planned.size() > best->planned.size()) {
        best = std::move(a);
        best_name = strategy.name;
        together_in = constraints.keep_together ? racks[rack_order[0]].id : "";
      }
    }
  }

  if (best && best->planned.empty()) together_in.clear();  // nothing went anywhere
  DeliveryPlan plan;
  plan.strategy = best_name;
  // Every allowed rack's state after the plan (with keep together, only one was planned into).
  std::vector<RackState> after;
  for (int r : allowed) {
    RackState s = InitialState(racks[r]);
    if (best) {
      for (const RackState& planned : best->states) {
        if (planned.rack == &racks[r]) s = planned;
      }
    }
    after.push_back(std::move(s));
  }
  if (best) plan.planned = best->planned;

  std::vector<bool> placed(items.size(), false);
  for (const PlannedItem& p : plan.planned) placed[p.item] = true;
  for (size_t k = 0; k < allowed.size(); ++k) {
    const DeliveryRack& r = racks[allowed[k]];
    const RackState before = InitialState(r);
    const RackState& s = after[k];
    RackView v;
    v.rack_id = r.id;
    v.name = r.name;
    v.free_front_before = FreeUnits(before.front);
    v.free_rear_before = r.geometry.has_rear ? FreeUnits(before.rear) : 0;
    v.free_front_after = FreeUnits(s.front);
    v.free_rear_after = r.geometry.has_rear ? FreeUnits(s.rear) : 0;
    v.items_planned = s.items;
    v.power = View(r.power_budget_watts, r.power_allowance_watts, r.power_load_unknown, r.power,
                   s.power_used);
    v.weight = View(r.weight_budget_kg, r.weight_allowance_kg, r.weight_load_unknown, r.weight,
                    s.weight_used);
    v.cooling =
        View(r.cooling_budget_watts, r.cooling_allowance_watts, false, r.power, s.power_used);
    for (const PlannedItem& p : plan.planned) {
      if (p.rack_id != r.id) continue;
      const DeliveryItem& item = items[p.item];
      if (!item.power_watts) {
        v.power.unknown.push_back(absl::StrCat("item ", item.name, " (units only)"));
        v.cooling.unknown.push_back(absl::StrCat("item ", item.name, " (units only)"));
      }
      if (!item.weight_kg) {
        v.weight.unknown.push_back(absl::StrCat("item ", item.name, " (units only)"));
      }
    }
    plan.racks.push_back(std::move(v));
  }
  for (size_t i = 0; i < items.size(); ++i) {
    if (placed[i]) continue;
    UnplacedItem u;
    u.item = static_cast<int>(i);
    for (const RackState& s : after) {
      u.reasons.push_back(RackReason(s, items[i], constraints, together_in));
    }
    if (after.empty()) u.reasons.push_back("no rack allowed");
    plan.unplaced.push_back(std::move(u));
  }
  return plan;
}

}  // namespace dcl::occupancy
