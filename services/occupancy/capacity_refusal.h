// The readable refusals of the capacity rules (schema/migrations/0038_capacity_feeds_cooling.sql,
// 0039_capacity_power_weight.sql), for the booking write path (booking_store.cc): a budget row
// over its capacity (a feed's rating, a feed carrying a lost one's load, the cooling budget, the
// rack's power or weight budget), a row whose load is partly unknown, or a device booking's
// figure the rack's rules cannot decide (unknown, an opposing airflow, feeds not named). The schema decides; this
// only names what it decided, by the violated constraint's name, re-reading the rack's rows in
// the caller's transaction (still usable: the violation rolled back the insert's subtransaction).
#ifndef DCL_SERVICES_OCCUPANCY_CAPACITY_REFUSAL_H_
#define DCL_SERVICES_OCCUPANCY_CAPACITY_REFUSAL_H_

#include <cstdint>
#include <optional>
#include <pqxx/pqxx>
#include <string>

#include "absl/status/status.h"

namespace dcl::occupancy {

// What the refused booking would have counted: a device booking its device's figures (and the
// feeds it names), a rack reservation its own power and weight (BookingSpec).
struct RefusedFigures {
  std::string rack_id;
  std::string device_id;  // empty for a booking without a device
  std::optional<int64_t> power_watts;
  std::optional<int64_t> weight_kg;
  std::optional<std::string> feed_names;  // text[] literal, as given; NULL: none named
};

// FAILED_PRECONDITION with the capacity reason for `constraint` (POWER_BUDGET_EXCEEDED,
// FEED_REDUNDANCY_LOST, COOLING_BUDGET_EXCEEDED, WEIGHT_BUDGET_EXCEEDED, AIRFLOW_MISMATCH,
// POWER_UNKNOWN, POWER_PORTS_UNKNOWN, AIRFLOW_UNKNOWN, WEIGHT_UNKNOWN, FEEDS_UNNAMED) naming the
// rack, the feed, the figures and the amount over, or what to set; nullopt when `constraint` is
// none of the capacity rules.
std::optional<absl::Status> CapacityRefusal(pqxx::transaction_base& tx,
                                            const RefusedFigures& booking,
                                            const std::string& constraint);

}  // namespace dcl::occupancy

#endif  // DCL_SERVICES_OCCUPANCY_CAPACITY_REFUSAL_H_
