#include "services/occupancy/site_capacity.h"

#include <algorithm>

namespace dcl::occupancy {
namespace {

// One dimension of one rack as stranding sees it.
struct RackDimension {
  bool present = false;  // units always; the others when the rack has the budget
  bool known = true;     // false: the row counts a device without the figure
  int64_t free = 0;      // max(0, capacity - used)
  int64_t need = 1;      // what one typical device needs of it (at least 1)
};

RackDimension OfBudget(const std::optional<BudgetFigures>& row, int64_t typical) {
  RackDimension d;
  if (!row) return d;
  d.present = true;
  d.known = row->unknown == 0;
  d.free = std::max<int64_t>(0, row->capacity - row->used);
  d.need = std::max<int64_t>(1, typical);
  return d;
}

}  // namespace

const char* SiteDimensionName(SiteDimension d) {
  switch (d) {
    case SiteDimension::kUnits:
      return "units";
    case SiteDimension::kPower:
      return "power";
    case SiteDimension::kCooling:
      return "cooling";
    case SiteDimension::kWeight:
      return "weight";
  }
  return "units";
}

std::optional<double> DaysToExhaustion(int64_t free, double net_per_day) {
  if (!(net_per_day > 0)) return std::nullopt;
  return static_cast<double>(free) / net_per_day;
}

int64_t LowerMedian(std::vector<int64_t> values) {
  if (values.empty()) return 0;
  const size_t middle = (values.size() - 1) / 2;
  std::nth_element(values.begin(), values.begin() + middle, values.end());
  return values[middle];
}

std::array<DimensionCapacity, kSiteDimensionCount> ComputeSiteCapacity(
    const std::vector<RackFigures>& racks, const TypicalDevice& typical, int window_days) {
  std::array<DimensionCapacity, kSiteDimensionCount> out;
  for (int i = 0; i < kSiteDimensionCount; ++i) out[i].dimension = static_cast<SiteDimension>(i);
  for (const RackFigures& rack : racks) {
    std::array<RackDimension, kSiteDimensionCount> dims;
    dims[0].present = true;
    dims[0].free = std::max<int64_t>(0, rack.slots - rack.taken_slots);
    dims[1] = OfBudget(rack.power, typical.power_watts);
    dims[2] = OfBudget(rack.cooling, typical.power_watts);  // heat is the allocated draw
    dims[3] = OfBudget(rack.weight, typical.weight_kg);
    const std::array<const std::optional<BudgetFigures>*, kSiteDimensionCount> rows = {
        nullptr, &rack.power, &rack.cooling, &rack.weight};
    for (int i = 0; i < kSiteDimensionCount; ++i) {
      if (!dims[i].present) continue;
      DimensionCapacity& d = out[i];
      ++d.racks;
      if (rows[i] == nullptr) {
        d.total += rack.slots;
        d.used += rack.taken_slots;
      } else {
        d.total += (*rows[i])->capacity;
        d.used += (*rows[i])->used;
      }
      d.booked_in_window += rack.flow[i].booked;
      d.released_in_window += rack.flow[i].released;
      if (!dims[i].known) {
        ++d.unknown_racks;
        d.unknown_free += dims[i].free;
        continue;
      }
      d.free += dims[i].free;
      bool blocked = false;
      for (int j = 0; j < kSiteDimensionCount; ++j) {
        if (j == i || !dims[j].present) continue;
        if (!dims[j].known || dims[j].free < dims[j].need) blocked = true;
      }
      if (blocked) d.stranded += dims[i].free;
    }
  }
  for (DimensionCapacity& d : out) {
    d.net_per_day =
        static_cast<double>(d.booked_in_window - d.released_in_window) / window_days;
    d.days_to_exhaustion = DaysToExhaustion(d.free, d.net_per_day);
  }
  return out;
}

}  // namespace dcl::occupancy
