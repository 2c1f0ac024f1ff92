#include "services/occupancy/capacity_refusal.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "services/common/db.h"
#include "services/common/status.h"

namespace dcl::occupancy {
namespace {

// The capacity rules (schema/migrations/0038_capacity_feeds_cooling.sql, 0039_capacity_power_
// weight.sql, 0040_capacity_ports.sql): a budget row over its capacity, a row whose load is partly
// unknown, or a device booking's figure a budget cannot decide. A rack without budget rows and
// airflow has none.
constexpr char kFeedWithinRating[] = "rack_feed_within_rating";
constexpr char kFeedRedundancy[] = "rack_feed_redundancy";
constexpr char kCoolingWithinBudget[] = "rack_cooling_within_budget";
constexpr char kPowerWithinBudget[] = "rack_power_within_budget";
constexpr char kWeightWithinBudget[] = "rack_weight_within_budget";
constexpr char kPortsWithinBudget[] = "rack_ports_within_budget";
constexpr char kPowerLoadUnknown[] = "rack_power_load_unknown";
constexpr char kWeightLoadUnknown[] = "rack_weight_load_unknown";
constexpr char kPowerKnown[] = "bookings_power_known";
constexpr char kPowerPortsKnown[] = "bookings_power_ports_known";
constexpr char kWeightKnown[] = "bookings_weight_known";
constexpr char kAirflowKnown[] = "bookings_airflow_known";
constexpr char kAirflowMatches[] = "bookings_airflow_matches";
constexpr char kFeedsNamed[] = "bookings_feeds_named";
constexpr char kPortsKnown[] = "bookings_ports_known";

// One budget rule: the constraint that says no, the rack_budgets dimension it judges, the reason
// and the unit its figures are in.
struct BudgetRule {
  const char* constraint;
  const char* dimension;
  v1::Reason reason;
  const char* unit;
};
constexpr BudgetRule kBudgetRules[] = {
    {kFeedWithinRating, "feed", v1::POWER_BUDGET_EXCEEDED, "W"},
    {kFeedRedundancy, "feed_lost", v1::FEED_REDUNDANCY_LOST, "W"},
    {kCoolingWithinBudget, "cooling", v1::COOLING_BUDGET_EXCEEDED, "W"},
    {kPowerWithinBudget, "power", v1::POWER_BUDGET_EXCEEDED, "W"},
    {kWeightWithinBudget, "weight", v1::WEIGHT_BUDGET_EXCEEDED, "kg"},
    {kPortsWithinBudget, "ports", v1::PORTS_EXHAUSTED, "ports"},
};

const BudgetRule* FindBudgetRule(const std::string& constraint) {
  for (const BudgetRule& rule : kBudgetRules) {
    if (constraint == rule.constraint) return &rule;
  }
  return nullptr;
}

const char* NullIfEmpty(const std::string& s) { return s.empty() ? nullptr : s.c_str(); }

// A budget row of the rack refused the booking: re-read in this transaction (the insert's
// subtransaction is rolled back, the transaction stays usable) which row of the rule's dimension
// the booking's contribution (dcl_capacity_contribution, the schema's own arithmetic) puts over
// what it may carry, most over first, to name the rack, the feed (and the feed lost), the
// figures and the amount over. Rows as they are now: a booking that committed or released since
// may have moved the sum.
absl::Status BudgetExceeded(pqxx::transaction_base& tx, const RefusedFigures& booking,
                            const BudgetRule& rule) {
  pqxx::result r = ExecCached(
      tx,
      "SELECT r.name, b.used + c.amount, b.capacity, b.allowance, coalesce(lost.name, ''), "
      "coalesce(carrying.name, ''), CASE b.dimension WHEN 'ports' THEN b.key ELSE '' END "
      "FROM racks r LEFT JOIN devices d ON d.id = $2::uuid "
      "CROSS JOIN LATERAL dcl_capacity_contribution(r.id, "
      "CASE WHEN d.id IS NULL THEN $4::bigint ELSE d.power_draw_watts END, d.power_port_count, "
      // The feeds the booking named, or those the BEFORE trigger chose (the same choice now).
      "CASE WHEN $6::text[] IS NULL THEN dcl_choose_feeds(r.id, d.power_port_count) "
      "ELSE ARRAY(SELECT f.id FROM power_feeds f WHERE f.rack_id = r.id "
      "AND f.name = ANY ($6::text[]) ORDER BY f.id) END, "
      "CASE WHEN d.id IS NULL THEN $5::bigint ELSE d.weight_kg END, d.network_ports) c "
      "JOIN rack_budgets b ON b.rack_id = r.id AND b.dimension = c.dimension AND b.key = c.key "
      "LEFT JOIN power_feeds lost ON b.dimension = 'feed_lost' "
      "AND lost.id::text = split_part(b.key, '>', 1) "
      "LEFT JOIN power_feeds carrying ON b.dimension IN ('feed', 'feed_lost') AND "
      "carrying.id::text = split_part(b.key, '>', CASE b.dimension WHEN 'feed_lost' THEN 2 ELSE 1 "
      "END) "
      "WHERE r.id = $1::uuid AND b.dimension = $3 AND b.used + c.amount > b.capacity + b.allowance "
      "ORDER BY b.used + c.amount - b.capacity DESC, b.key LIMIT 1",
      booking.rack_id, NullIfEmpty(booking.device_id), rule.dimension, booking.power_watts,
      booking.weight_kg, booking.feed_names);
  if (r.empty()) {
    return Error(absl::StatusCode::kFailedPrecondition, rule.reason,
                 absl::StrCat("rack ", booking.rack_id, ": the ", rule.dimension,
                              " budget was exceeded (it has changed since)"))
        .Meta("rack_id", booking.rack_id)
        .Meta("dimension", rule.dimension)
        .Meta("device_id", booking.device_id);
  }
  const std::string rack_name = r[0][0].as<std::string>();
  const int64_t used = r[0][1].as<int64_t>();
  const int64_t capacity = r[0][2].as<int64_t>();
  const int64_t allowance = r[0][3].as<int64_t>();
  const std::string lost = r[0][4].as<std::string>();
  const std::string feed = r[0][5].as<std::string>();
  const std::string speed = r[0][6].as<std::string>();
  const std::string unit = rule.unit;
  const std::string over = absl::StrCat(used - capacity, " ", unit);
  std::string message;
  const std::string dimension = rule.dimension;
  if (dimension == "feed") {
    message = absl::StrCat("rack ", rack_name, ": feed ", feed, " would carry ", used, " W of its ",
                           capacity, " W (over by ", over, ")");
  } else if (dimension == "feed_lost") {
    message = absl::StrCat("rack ", rack_name, ": with feed ", lost, " lost, feed ", feed,
                           " would carry ", used, " W of its ", capacity, " W (over by ", over,
                           ")");
  } else if (dimension == "ports") {
    // The row's key is the speed; a speed the rack does not offer has a row of capacity 0.
    message = absl::StrCat("rack ", rack_name, ": ", used, " ", speed, " ports needed of the ",
                           capacity, " its switches offer (over by ", used - capacity, ")");
  } else if (dimension == "cooling") {
    message = absl::StrCat("rack ", rack_name, ": heat ", used, " W of its cooling budget ",
                           capacity, " W (over by ", over, ")");
  } else {
    message = absl::StrCat("rack ", rack_name, ": ", dimension, " ", used, " ", unit, " of its ",
                           capacity, " ", unit, " budget (over by ", over, ")");
  }
  if (allowance > 0) {
    // A rack over its budget before the budget was enforced (0039): releases only, until it is
    // back under.
    absl::StrAppend(&message, "; the rack was already over by ", allowance, " ", unit,
                    " before its budget was enforced and takes nothing more until it is under");
  }
  // A device booking's refusal names the device in its metadata; a reservation's says what did
  // not fit, since it has no device to name.
  if (booking.device_id.empty()) absl::StrAppend(&message, ": the reservation does not fit");
  const std::string suffix = unit == "W" ? "_watts" : unit == "kg" ? "_kg" : "_ports";
  Error error(absl::StatusCode::kFailedPrecondition, rule.reason, message);
  error.Meta("rack_id", booking.rack_id)
      .Meta("rack_name", rack_name)
      .Meta("dimension", dimension)
      .Meta("device_id", booking.device_id)
      .Meta("used" + suffix, std::to_string(used))
      .Meta((dimension == "ports" ? "offered" : "capacity") + suffix, std::to_string(capacity))
      .Meta("over" + suffix, std::to_string(used - capacity));
  if (!speed.empty()) error.Meta("speed", speed);
  if (allowance > 0) error.Meta("allowance" + suffix, std::to_string(allowance));
  if (!feed.empty()) error.Meta("feed", feed);
  if (!lost.empty()) error.Meta("lost_feed", lost);
  return error.status();
}

// A row whose load is partly unknown (0039: devices booked before the budget without the
// figure): the rack takes nothing more until their figures are set. Names them (the first few).
absl::Status LoadUnknown(pqxx::transaction_base& tx, const RefusedFigures& booking,
                         const std::string& constraint) {
  const bool power = constraint == kPowerLoadUnknown;
  const std::string field = power ? "power_draw_watts" : "weight_kg";
  pqxx::result r = ExecCached(
      tx,
      "SELECT r.name, count(d.id), coalesce(string_agg(d.id::text, ', ' ORDER BY d.id) "
      "FILTER (WHERE d.rank <= 5), '') "
      "FROM racks r LEFT JOIN (SELECT d.id, b.rack_id, row_number() OVER (ORDER BY d.id) AS rank "
      "FROM bookings b JOIN devices d ON d.id = b.device_id WHERE b.rack_id = $1::uuid "
      "AND b.released_at IS NULL AND b.kind IN ('placement', 'move_hold') "
      "AND CASE WHEN $2 THEN b.power_watts IS NULL ELSE b.weight_kg IS NULL END) d "
      "ON d.rack_id = r.id WHERE r.id = $1::uuid GROUP BY r.name",
      booking.rack_id, power);
  const std::string rack_name = r.empty() ? booking.rack_id : r[0][0].as<std::string>();
  const std::string count = r.empty() ? "0" : r[0][1].as<std::string>();
  const std::string devices = r.empty() ? "" : r[0][2].as<std::string>();
  return Error(absl::StatusCode::kFailedPrecondition,
               power ? v1::POWER_UNKNOWN : v1::WEIGHT_UNKNOWN,
               absl::StrCat("rack ", rack_name, " carries ", count, " device(s) booked before its ",
                            power ? "power" : "weight", " budget without a figure (", devices,
                            "): set their ", field, "; until then it takes nothing more"))
      .Meta("rack_id", booking.rack_id)
      .Meta("rack_name", rack_name)
      .Meta("missing", field)
      .Meta("unknown_devices", count)
      .Meta("device_ids", devices)
      .status();
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
  if (constraint == kWeightKnown) {
    return unknown(v1::WEIGHT_UNKNOWN, "weight figure", "weight_kg");
  }
  if (constraint == kPortsKnown) {
    return unknown(v1::PORTS_UNKNOWN, "network port figure", "network_ports");
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

std::optional<absl::Status> CapacityRefusal(pqxx::transaction_base& tx,
                                            const RefusedFigures& booking,
                                            const std::string& constraint) {
  if (const BudgetRule* rule = FindBudgetRule(constraint)) {
    return BudgetExceeded(tx, booking, *rule);
  }
  if (constraint == kPowerLoadUnknown || constraint == kWeightLoadUnknown) {
    return LoadUnknown(tx, booking, constraint);
  }
  if (constraint == kPowerKnown || constraint == kPowerPortsKnown || constraint == kWeightKnown ||
      constraint == kAirflowKnown || constraint == kAirflowMatches || constraint == kFeedsNamed ||
      constraint == kPortsKnown) {
    return FiguresRefused(tx, booking.rack_id, booking.device_id, constraint);
  }
  return std::nullopt;
}

}  // namespace dcl::occupancy
