// The delivery planner over 1,200 generated sites and deliveries (fixed seeds, so a failure
// replays): every planned item is a claim the rack planner accepts against the rack's bookings
// and every item planned before it (no shared slot, no collision, inside the rack, on a side it
// has); every known budget holds as the database judges it (each booking's own figure, an
// item without one adding 0, the allowance of a rack over its budget, no addition to a load
// that is unknown) with the headroom kept; keep
// together and spread hold; the plan is deterministic; and it places at least as many items as
// first-fit decreasing, written here independently on top of the rack planner.
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "services/occupancy/delivery_plan.h"
#include "services/occupancy/rack_plan.h"

namespace dcl::occupancy {
namespace {

constexpr int kCases = 1200;

struct Case {
  std::vector<DeliveryRack> racks;
  std::vector<DeliveryItem> items;
  DeliveryConstraints constraints;
};

int Uniform(std::mt19937& rng, int lo, int hi) {
  return std::uniform_int_distribution<int>(lo, hi)(rng);
}
bool Chance(std::mt19937& rng, int percent) { return Uniform(rng, 1, 100) <= percent; }

std::optional<int64_t> Figure(std::mt19937& rng, int lo, int hi, int unknown_percent) {
  if (Chance(rng, unknown_percent)) return std::nullopt;
  return Uniform(rng, lo, hi);
}

Case Generate(uint32_t seed) {
  std::mt19937 rng(seed);
  Case c;
  const int rack_count = Uniform(rng, 1, 8);
  for (int r = 0; r < rack_count; ++r) {
    DeliveryRack rack;
    rack.id = absl::StrCat("rack-", r);
    rack.name = absl::StrCat("R", 100 + r);
    rack.geometry.first_unit = Uniform(rng, 0, 3);
    rack.geometry.unit_count = Uniform(rng, 4, 48);
    rack.geometry.descending = Chance(rng, 30);
    rack.geometry.has_rear = !Chance(rng, 10);
    // Existing bookings: blocks of units on one or both sides.
    const int blocks = Uniform(rng, 0, 6);
    for (int b = 0; b < blocks; ++b) {
      const int height = Uniform(rng, 1, 6);
      const int start = rack.geometry.first_unit + Uniform(rng, 0, rack.geometry.unit_count - 1);
      const bool both = rack.geometry.has_rear && Chance(rng, 50);
      const v1::Side side =
          rack.geometry.has_rear && Chance(rng, 40) ? v1::SIDE_REAR : v1::SIDE_FRONT;
      for (int u = start; u < start + height && u <= rack.geometry.last_unit(); ++u) {
        for (v1::Side s : {v1::SIDE_FRONT, v1::SIDE_REAR}) {
          if ((both || s == side) &&
              std::find(rack.occupied.begin(), rack.occupied.end(), SlotRef{s, u}) ==
                  rack.occupied.end()) {
            rack.occupied.push_back({s, u});
          }
        }
      }
      rack.power.push_back({absl::StrCat("booking ", b), Figure(rng, 50, 900, 15)});
      rack.weight.push_back({absl::StrCat("booking ", b), Figure(rng, 5, 60, 15)});
    }
    if (Chance(rng, 70)) rack.power_budget_watts = Uniform(rng, 0, 12000);
    if (Chance(rng, 60)) rack.weight_budget_kg = Uniform(rng, 0, 900);
    // A booking without a figure on a budgeted rack: a device booked before the budget was
    // decided, so the load is unknown. Sometimes a rack over its budget, held there.
    for (const LoadFigure& f : rack.power) {
      rack.power_load_unknown |= rack.power_budget_watts && !f.value;
    }
    for (const LoadFigure& f : rack.weight) {
      rack.weight_load_unknown |= rack.weight_budget_kg && !f.value;
    }
    if (rack.power_budget_watts && Chance(rng, 10))
      rack.power_allowance_watts = Uniform(rng, 1, 900);
    if (rack.weight_budget_kg && Chance(rng, 10)) rack.weight_allowance_kg = Uniform(rng, 1, 60);
    // Sometimes a reservation without figures (units only: counts 0) or with them.
    if (Chance(rng, 10)) {
      rack.power.push_back({"reservation (units only)", std::nullopt});
      rack.weight.push_back({"reservation (units only)", std::nullopt});
    }
    if (Chance(rng, 10)) {
      rack.power.push_back({"reservation", Figure(rng, 0, 2000, 0)});
      rack.weight.push_back({"reservation", Figure(rng, 0, 100, 0)});
    }
    c.racks.push_back(std::move(rack));
  }
  const int item_count = Uniform(rng, 1, 25);
  for (int i = 0; i < item_count; ++i) {
    DeliveryItem item;
    item.name = absl::StrCat("item ", i);
    item.height = Uniform(rng, 1, 4);
    const int depth = Uniform(rng, 0, 9);
    item.depth = depth < 5 ? v1::DEPTH_HALF : depth < 9 ? v1::DEPTH_FULL : v1::DEPTH_UNKNOWN;
    item.power_watts = Figure(rng, 100, 1500, 5);
    item.weight_kg = Figure(rng, 5, 80, 5);
    c.items.push_back(item);
  }
  DeliveryConstraints& k = c.constraints;
  if (Chance(rng, 30)) {
    for (const DeliveryRack& r : c.racks) {
      if (Chance(rng, 60)) k.allowed_rack_ids.push_back(r.id);
    }
    std::shuffle(k.allowed_rack_ids.begin(), k.allowed_rack_ids.end(), rng);
  }
  k.keep_together = Chance(rng, 15);
  if (!k.keep_together && Chance(rng, 30)) k.max_per_rack = Uniform(rng, 1, 4);
  const int side = Uniform(rng, 0, 5);
  k.side = side == 0 ? v1::SIDE_FRONT : side == 1 ? v1::SIDE_REAR : v1::SIDE_UNSPECIFIED;
  if (Chance(rng, 30)) k.power_headroom_watts = Uniform(rng, 0, 2000);
  if (Chance(rng, 30)) k.weight_headroom_kg = Uniform(rng, 0, 100);
  return c;
}

std::vector<const DeliveryRack*> Allowed(const Case& c) {
  std::vector<const DeliveryRack*> out;
  if (c.constraints.allowed_rack_ids.empty()) {
    for (const DeliveryRack& r : c.racks) out.push_back(&r);
    return out;
  }
  for (const std::string& id : c.constraints.allowed_rack_ids) {
    for (const DeliveryRack& r : c.racks) {
      if (r.id == id) out.push_back(&r);
    }
  }
  return out;
}

int64_t Known(const std::vector<LoadFigure>& figures) {
  int64_t sum = 0;
  for (const LoadFigure& f : figures) sum += f.value ? *f.value : 0;
  return sum;
}

// The database's rule for one dimension, written out again: nothing added is never judged;
// otherwise a budget takes x when its load is known and used + x stays within budget +
// allowance (- headroom).
bool Takes(std::optional<int64_t> budget, int64_t allowance, bool load_unknown, int64_t used,
           int64_t x, int64_t headroom) {
  if (!budget || x == 0) return true;
  if (load_unknown) return false;
  return used + x <= *budget + allowance - headroom;
}

// First-fit decreasing, independently: items by height (tallest first, then input order); each
// into the first allowed rack with room under the cap and both budgets (Takes), at the lowest
// anchor the rack planner accepts, front before rear.
int FirstFitDecreasing(const Case& c, const std::vector<const DeliveryRack*>& racks) {
  const DeliveryConstraints& k = c.constraints;
  std::vector<int> order(c.items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return c.items[a].height > c.items[b].height; });
  struct State {
    std::vector<SlotRef> occupied;
    int64_t power = 0;
    int64_t weight = 0;
    int items = 0;
  };
  std::vector<State> states;
  for (const DeliveryRack* r : racks) {
    states.push_back({r->occupied, Known(r->power), Known(r->weight), 0});
  }
  int placed = 0;
  for (int index : order) {
    const DeliveryItem& item = c.items[index];
    const int64_t power = item.power_watts ? *item.power_watts : 0;  // units only
    const int64_t weight = item.weight_kg ? *item.weight_kg : 0;
    bool done = false;
    for (size_t r = 0; r < racks.size() && !done; ++r) {
      const DeliveryRack& rack = *racks[r];
      State& s = states[r];
      if (k.max_per_rack > 0 && s.items >= k.max_per_rack) continue;
      if (!Takes(rack.power_budget_watts, rack.power_allowance_watts, rack.power_load_unknown,
                 s.power, power, k.power_headroom_watts) ||
          !Takes(rack.weight_budget_kg, rack.weight_allowance_kg, rack.weight_load_unknown,
                 s.weight, weight, k.weight_headroom_kg)) {
        continue;
      }
      for (int anchor = rack.geometry.first_unit; anchor <= rack.geometry.last_unit() && !done;
           ++anchor) {
        std::vector<v1::Side> sides;
        if (k.side != v1::SIDE_UNSPECIFIED) {
          sides = {k.side};
        } else if (item.depth == v1::DEPTH_HALF) {
          sides = {v1::SIDE_FRONT, v1::SIDE_REAR};
        } else {
          sides = {v1::SIDE_FRONT};
        }
        for (v1::Side side : sides) {
          PlanRequest req;
          req.device_footprint = true;
          req.side = side;
          req.anchor_unit = anchor;
          req.height = item.height;
          req.depth = item.depth;
          absl::StatusOr<std::vector<SlotRef>> claim = Plan(rack.geometry, s.occupied, req);
          if (!claim.ok()) continue;
          s.occupied.insert(s.occupied.end(), claim->begin(), claim->end());
          s.power += power;
          s.weight += weight;
          ++s.items;
          ++placed;
          done = true;
          break;
        }
      }
    }
  }
  return placed;
}

int BestFirstFitDecreasing(const Case& c) {
  const std::vector<const DeliveryRack*> racks = Allowed(c);
  if (!c.constraints.keep_together) return FirstFitDecreasing(c, racks);
  int best = 0;
  for (const DeliveryRack* r : racks) best = std::max(best, FirstFitDecreasing(c, {r}));
  return best;
}

TEST_CASE("over 1,200 generated deliveries the plan is sound and beats first-fit decreasing") {
  int64_t total_items = 0;
  int64_t planner_placed = 0;
  int64_t ffd_placed = 0;
  int cases_better = 0;
  for (uint32_t seed = 1; seed <= kCases; ++seed) {
    const Case c = Generate(seed);
    INFO("seed " << seed);
    const DeliveryPlan plan = PlanDelivery(c.racks, c.items, c.constraints);
    const std::vector<const DeliveryRack*> allowed = Allowed(c);

    // Every item is either planned or unplaced with one reason per allowed rack.
    REQUIRE(plan.planned.size() + plan.unplaced.size() == c.items.size());
    for (const UnplacedItem& u : plan.unplaced) {
      CHECK(u.reasons.size() == std::max<size_t>(allowed.size(), 1));
    }
    REQUIRE(plan.racks.size() == allowed.size());

    // Replay the plan through the rack planner, rack by rack, in plan order.
    std::map<std::string, std::vector<SlotRef>> occupied;
    std::map<std::string, int64_t> power;
    std::map<std::string, int64_t> weight;
    std::map<std::string, int> count;
    std::map<std::string, const DeliveryRack*> by_id;
    for (const DeliveryRack* r : allowed) {
      by_id[r->id] = r;
      occupied[r->id] = r->occupied;
      power[r->id] = Known(r->power);
      weight[r->id] = Known(r->weight);
    }
    for (const PlannedItem& p : plan.planned) {
      REQUIRE(by_id.count(p.rack_id) == 1);  // an allowed rack
      const DeliveryRack& rack = *by_id[p.rack_id];
      const DeliveryItem& item = c.items[p.item];
      if (c.constraints.side != v1::SIDE_UNSPECIFIED) CHECK(p.side == c.constraints.side);
      PlanRequest req;
      req.device_footprint = true;
      req.side = p.side;
      req.anchor_unit = p.anchor_unit;
      req.height = item.height;
      req.depth = item.depth;
      absl::StatusOr<std::vector<SlotRef>> claim = Plan(rack.geometry, occupied[p.rack_id], req);
      INFO("item " << p.item << " in " << rack.name << " at U" << p.anchor_unit);
      REQUIRE(claim.ok());
      std::vector<SlotRef> sorted = *claim;
      std::sort(sorted.begin(), sorted.end());
      CHECK(sorted == p.slots);
      occupied[p.rack_id].insert(occupied[p.rack_id].end(), claim->begin(), claim->end());
      // Each item as the database will judge its reservation, one after the other.
      const int64_t item_power = item.power_watts ? *item.power_watts : 0;
      const int64_t item_weight = item.weight_kg ? *item.weight_kg : 0;
      CHECK(Takes(rack.power_budget_watts, rack.power_allowance_watts, rack.power_load_unknown,
                  power[p.rack_id], item_power, c.constraints.power_headroom_watts));
      CHECK(Takes(rack.weight_budget_kg, rack.weight_allowance_kg, rack.weight_load_unknown,
                  weight[p.rack_id], item_weight, c.constraints.weight_headroom_kg));
      power[p.rack_id] += item_power;
      weight[p.rack_id] += item_weight;
      ++count[p.rack_id];
    }
    for (const RackView& v : plan.racks) {
      const DeliveryRack& rack = *by_id[v.rack_id];
      // A rack the plan puts something into stays within every known budget and its
      // allowance (one it leaves alone may be over already: that is not the plan's doing).
      if (count[v.rack_id] > 0 && rack.power_budget_watts && power[v.rack_id] > Known(rack.power)) {
        CHECK(power[v.rack_id] <= *rack.power_budget_watts + rack.power_allowance_watts -
                                      c.constraints.power_headroom_watts);
      }
      if (count[v.rack_id] > 0 && rack.weight_budget_kg && weight[v.rack_id] > Known(rack.weight)) {
        CHECK(weight[v.rack_id] <=
              *rack.weight_budget_kg + rack.weight_allowance_kg - c.constraints.weight_headroom_kg);
      }
      CHECK(v.power.used_after == power[v.rack_id]);
      CHECK(v.weight.used_after == weight[v.rack_id]);
      CHECK(v.power.load_unknown == rack.power_load_unknown);
      CHECK(v.items_planned == count[v.rack_id]);
      if (c.constraints.max_per_rack > 0) CHECK(count[v.rack_id] <= c.constraints.max_per_rack);
    }
    if (c.constraints.keep_together) {
      int racks_used = 0;
      for (const auto& [id, n] : count) racks_used += n > 0 ? 1 : 0;
      CHECK(racks_used <= 1);
    }

    // Deterministic.
    const DeliveryPlan again = PlanDelivery(c.racks, c.items, c.constraints);
    REQUIRE(again.planned.size() == plan.planned.size());
    for (size_t i = 0; i < plan.planned.size(); ++i) {
      CHECK(again.planned[i].rack_id == plan.planned[i].rack_id);
      CHECK(again.planned[i].slots == plan.planned[i].slots);
    }

    const int ffd = BestFirstFitDecreasing(c);
    CHECK(static_cast<int>(plan.planned.size()) >= ffd);
    total_items += static_cast<int64_t>(c.items.size());
    planner_placed += static_cast<int64_t>(plan.planned.size());
    ffd_placed += ffd;
    if (static_cast<int>(plan.planned.size()) > ffd) ++cases_better;
  }
  WARN(kCases << " deliveries, " << total_items << " items: the planner placed " << planner_placed
              << ", first-fit decreasing " << ffd_placed << " (" << planner_placed - ffd_placed
              << " more, in " << cases_better << " cases)");
  CHECK(planner_placed >= ffd_placed);
}

}  // namespace
}  // namespace dcl::occupancy
