#include "services/occupancy/capacity_refusal.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "services/common/db.h"
#include "services/common/status.h"

namespace dcl::occupancy {
namespace {

// The capacity rules (schema/migrations/0038_capacity_feeds_cooling.sql): a budget row over its
// capacity, or a device booking's figure a budget cannot decide. Dormant on a rack without
// power feeds, cooling budget and airflow.
constexpr char kFeedWithinRating[] = "rack_feed_within_rating";
constexpr char kFeedRedundancy[] = "rack_feed_redundancy";
constexpr char kCoolingWithinBudget[] = "rack_cooling_within_budget";
constexpr char kPowerKnown[] = "bookings_power_known";
constexpr char kPowerPortsKnown[] = "bookings_power_ports_known";
constexpr char kAirflowKnown[] = "bookings_airflow_known";
constexpr char kAirflowMatches[] = "bookings_airflow_matches";
constexpr char kFeedsNamed[] = "bookings_feeds_named";

// A budget row of the rack refused the device: re-read in this transaction (the insert's
// subtransaction is rolled back, the transaction stays usable) which row of `dimension` the
// device's contribution puts over its capacity, most over first, to name the rack, the feed
// (and the feed lost), the figures and the amount over. Rows as they are now: a booking that
// committed or released since may have moved the sum.
absl::Status BudgetExceeded(pqxx::transaction_base& tx, const std::string& rack_id,
                            const std::string& device_id, const std::string& constraint) {
  const char* dimension = constraint == kFeedWithinRating ? "feed"
                          : constraint == kFeedRedundancy ? "feed_lost"
                                                          : "cooling";
  const v1::Reason reason = constraint == kFeedWithinRating ? v1::POWER_BUDGET_EXCEEDED
                            : constraint == kFeedRedundancy ? v1::FEED_REDUNDANCY_LOST
                                                            : v1::COOLING_BUDGET_EXCEEDED;
  pqxx::result r = ExecCached(
      tx,
      "SELECT r.name, b.used + c.amount, b.capacity, coalesce(lost.name, ''), "
      "coalesce(carrying.name, '') "
      "FROM racks r JOIN devices d ON d.id = $2::uuid "
      "CROSS JOIN LATERAL dcl_capacity_contribution(r.id, d.power_draw_watts, "
      "d.power_port_count, NULL) c "
      "JOIN rack_budgets b ON b.rack_id = r.id AND b.dimension = c.dimension AND b.key = c.key "
      "LEFT JOIN power_feeds lost ON b.dimension = 'feed_lost' "
      "AND lost.id::text = split_part(b.key, '>', 1) "
      "LEFT JOIN power_feeds carrying ON carrying.id::text = "
      "split_part(b.key, '>', CASE b.dimension WHEN 'feed_lost' THEN 2 ELSE 1 END) "
      "WHERE r.id = $1::uuid AND b.dimension = $3 AND b.used + c.amount > b.capacity "
      "ORDER BY b.used + c.amount - b.capacity DESC, b.key LIMIT 1",
      rack_id, device_id, dimension);
  if (r.empty()) {
    return Error(absl::StatusCode::kFailedPrecondition, reason,
                 absl::StrCat("rack ", rack_id, ": the ", dimension,
                              " budget was exceeded (it has changed since)"))
        .Meta("rack_id", rack_id)
        .Meta("dimension", dimension)
        .Meta("device_id", device_id);
  }
  const std::string rack_name = r[0][0].as<std::string>();
  const int64_t used = r[0][1].as<int64_t>();
  const int64_t capacity = r[0][2].as<int64_t>();
  const std::string lost = r[0][3].as<std::string>();
  const std::string feed = r[0][4].as<std::string>();
  const std::string figures =
      absl::StrCat(used, " W of its ", capacity, " W (over by ", used - capacity, " W)");
  std::string message;
  if (reason == v1::POWER_BUDGET_EXCEEDED) {
    message = absl::StrCat("rack ", rack_name, ": feed ", feed, " would carry ", figures);
  } else if (reason == v1::FEED_REDUNDANCY_LOST) {
    message = absl::StrCat("rack ", rack_name, ": with feed ", lost, " lost, feed ", feed,
                           " would carry ", figures);
  } else {
    message = absl::StrCat("rack ", rack_name, ": heat ", used, " W of its cooling budget ",
                           capacity, " W (over by ", used - capacity, " W)");
  }
  Error error(absl::StatusCode::kFailedPrecondition, reason, message);
  error.Meta("rack_id", rack_id)
      .Meta("rack_name", rack_name)
      .Meta("dimension", dimension)
      .Meta("device_id", device_id)
      .Meta("used_watts", std::to_string(used))
      .Meta("capacity_watts", std::to_string(capacity))
      .Meta("over_watts", std::to_string(used - capacity));
  if (!feed.empty()) error.Meta("feed", feed);
  if (!lost.empty()) error.Meta("lost_feed", lost);
  return error.status();
}

// A device booking's figure the rack's rules cannot decide: named with the device's field to
// set (the unknown is never guessed) or, for the airflow, both directions.
absl::Status FiguresRefused(pqxx::transaction_base& tx, const std::string& rack_id,
                            const std::string& device_id, const std::string& constraint) {
  pqxx::result r = ExecCached(
      tx,
      "SELECT r.name, coalesce(r.airflow, ''), coalesce(d.airflow, ''), "
      "coalesce(d.power_port_count, 0), (SELECT count(*) FROM power_feeds f "
      "WHERE f.rack_id = r.id) FROM racks r, devices d WHERE r.id = $1::uuid AND d.id = $2::uuid",
      rack_id, device_id);
  const std::string rack_name = r.empty() ? rack_id : r[0][0].as<std::string>();
  const std::string where = absl::StrCat(" before booking it into rack ", rack_name);
  auto unknown = [&](v1::Reason reason, const std::string& what, const std::string& field) {
    return Error(absl::StatusCode::kFailedPrecondition, reason,
                 absl::StrCat("device ", device_id, " has no ", what, ": set its ", field, where,
                              ", whose budgets need it"))
        .Meta("device_id", device_id)
        .Meta("rack_id", rack_id)
        .Meta("missing", field)
        .status();
  };
  if (constraint == kPowerKnown) {
    return unknown(v1::POWER_UNKNOWN, "power figure", "power_draw_watts");
  }
  if (constraint == kPowerPortsKnown) {
    return unknown(v1::POWER_PORTS_UNKNOWN, "power port count", "power_port_count");
  }
  if (constraint == kAirflowKnown) {
    return unknown(v1::AIRFLOW_UNKNOWN, "single airflow", "airflow");
  }
  if (constraint == kAirflowMatches) {
    const std::string rack_airflow = r.empty() ? "" : r[0][1].as<std::string>();
    const std::string device_airflow = r.empty() ? "" : r[0][2].as<std::string>();
    return Error(absl::StatusCode::kFailedPrecondition, v1::AIRFLOW_MISMATCH,
                 absl::StrCat("device ", device_id, " blows ", device_airflow, ", against rack ",
                              rack_name, "'s ", rack_airflow))
        .Meta("device_id", device_id)
        .Meta("rack_id", rack_id)
        .Meta("device_airflow", device_airflow)
        .Meta("rack_airflow", rack_airflow);
  }
  const std::string ports = r.empty() ? "0" : r[0][3].as<std::string>();
  const std::string feeds = r.empty() ? "0" : r[0][4].as<std::string>();
  return Error(absl::StatusCode::kFailedPrecondition, v1::FEEDS_UNNAMED,
               absl::StrCat("device ", device_id, " has ", ports, " power ports on rack ",
                            rack_name, " with ", feeds, " feeds: name the feeds it hangs on"))
      .Meta("device_id", device_id)
      .Meta("rack_id", rack_id)
      .Meta("power_ports", ports)
      .Meta("feeds", feeds);
}

}  // namespace

std::optional<absl::Status> CapacityRefusal(pqxx::transaction_base& tx, const std::string& rack_id,
                                            const std::string& device_id,
                                            const std::string& constraint) {
  if (constraint == kFeedWithinRating || constraint == kFeedRedundancy ||
      constraint == kCoolingWithinBudget) {
    return BudgetExceeded(tx, rack_id, device_id, constraint);
  }
  if (constraint == kPowerKnown || constraint == kPowerPortsKnown || constraint == kAirflowKnown ||
      constraint == kAirflowMatches || constraint == kFeedsNamed) {
    return FiguresRefused(tx, rack_id, device_id, constraint);
  }
  return std::nullopt;
}

}  // namespace dcl::occupancy
