// A site's capacity per dimension, computed from its racks' figures: used, free, stranded (free
// in one dimension but unusable because another dimension of the same rack cannot take one
// typical device) and not known, and when free runs out at the recent net booking rate. Pure
// arithmetic over plain structs; the figures are read by site_capacity_store.h and the rules
// are stated once, in proto/dcl/v1/occupancy.proto (SiteCapacityDimension) and
// docs/capacity.md.
#ifndef DCL_SERVICES_OCCUPANCY_SITE_CAPACITY_H_
#define DCL_SERVICES_OCCUPANCY_SITE_CAPACITY_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dcl::occupancy {

// The dimensions a site's capacity is read in, in the order of the answer.
enum class SiteDimension { kUnits = 0, kPower = 1, kCooling = 2, kWeight = 3 };
inline constexpr int kSiteDimensionCount = 4;
// "units", "power", "cooling", "weight".
const char* SiteDimensionName(SiteDimension d);

// One budget row of a rack (rack_budgets): its capacity, what is used, and how many device
// bookings it counts without the figure (unknown > 0: the free amount is not known).
struct BudgetFigures {
  int64_t capacity = 0;
  int64_t used = 0;
  int64_t unknown = 0;
};

// What a dimension's bookings added and gave back in the forecast's window on one rack.
struct WindowFlow {
  int64_t booked = 0;
  int64_t released = 0;
};

struct RackFigures {
  std::string rack_id;
  int64_t slots = 0;        // unit_count, twice with a rear
  int64_t taken_slots = 0;  // active booking_slots
  std::optional<BudgetFigures> power;  // none: the rack has no such budget
  std::optional<BudgetFigures> cooling;
  std::optional<BudgetFigures> weight;
  std::array<WindowFlow, kSiteDimensionCount> flow;  // by SiteDimension
};

// What one typical device needs; stranding judges a rack's other dimensions by it.
struct TypicalDevice {
  int64_t power_watts = 0;  // power and cooling
  int64_t weight_kg = 0;
};

struct DimensionCapacity {
  SiteDimension dimension = SiteDimension::kUnits;
  int racks = 0;
  int64_t total = 0;
  int64_t used = 0;
  int64_t free = 0;
  int64_t stranded = 0;
  int unknown_racks = 0;
  int64_t unknown_free = 0;
  int64_t booked_in_window = 0;
  int64_t released_in_window = 0;
  double net_per_day = 0;
  std::optional<double> days_to_exhaustion;  // none: the net rate is 0 or negative
};

// Every dimension, in SiteDimension order. window_days > 0.
std::array<DimensionCapacity, kSiteDimensionCount> ComputeSiteCapacity(
    const std::vector<RackFigures>& racks, const TypicalDevice& typical, int window_days);

// free / net_per_day when the rate is positive (0 when nothing is free), none otherwise.
std::optional<double> DaysToExhaustion(int64_t free, double net_per_day);

// The lower median of `values` (the middle one of an odd count, the lower middle of an even
// one), 0 for none: the typical figure when the caller names none.
int64_t LowerMedian(std::vector<int64_t> values);

}  // namespace dcl::occupancy

#endif  // DCL_SERVICES_OCCUPANCY_SITE_CAPACITY_H_
