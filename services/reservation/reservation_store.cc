#include "services/reservation/reservation_store.h"

#include <cstdint>
#include <cstdio>
#include <optional>
#include <random>
#include <stdexcept>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "services/common/call_deadline.h"
#include "services/common/status.h"
#include "services/common/time_util.h"
#include "services/reservation/flat_json.h"

namespace dcl::reservation {

namespace {

// The columns RecordFromRow reads, of the reservation `r` (a table alias or a composite value).
std::string ColumnsOf(const std::string& r) {
  return absl::StrCat(r, ".id::text, ", r, ".idempotency_key, ", r, ".device_id::text, ", r,
                      ".state, ", r, ".criteria_site_id::text, ", r, ".criteria_vendor, ", r,
                      ".criteria_model, ", r, ".criteria_hardware_profile, ", r,
                      ".selection_reason::text, ", SqlMicros(r + ".created_at"), ", ",
                      SqlMicros(r + ".expires_at"), ", ", SqlMicros(r + ".ended_at"),
                      ", coalesce(", r, ".end_reason, ''), coalesce(", r, ".ended_by, ''), ",
                      "coalesce(", r, ".service_id::text, ''), clock_timestamp() >= ", r,
                      ".expires_at");
}

const std::string& ReservationColumns() {
  static const std::string* columns = new std::string(ColumnsOf("r"));
  return *columns;
}

ReservationRecord RecordFromRow(const pqxx::row& row) {
  ReservationRecord record;
  v1::Reservation& r = record.proto;
  r.set_id(row[0].as<std::string>());
  r.set_idempotency_key(row[1].as<std::string>());
  r.set_device_id(row[2].as<std::string>());
  r.set_state(StateFromName(row[3].as<std::string>()));
  r.mutable_criteria()->set_site_id(row[4].as<std::string>());
  r.mutable_criteria()->set_vendor(row[5].as<std::string>());
  r.mutable_criteria()->set_model(row[6].as<std::string>());
  r.mutable_criteria()->set_hardware_profile(row[7].as<std::string>());
  r.set_selection_reason_json(row[8].as<std::string>());
  SetTimestampFromMicros(row[9].as<int64_t>(), r.mutable_created_at());
  SetTimestampFromMicros(row[10].as<int64_t>(), r.mutable_expires_at());
  if (!row[11].is_null()) SetTimestampFromMicros(row[11].as<int64_t>(), r.mutable_ended_at());
  r.set_end_reason(row[12].as<std::string>());
  r.set_ended_by(row[13].as<std::string>());
  r.set_service_id(row[14].as<std::string>());
  record.lapsed = row[15].as<bool>();
  return record;
}

const std::string& BindingColumns() {
  static const std::string* columns =
      new std::string(absl::StrCat("b.id::text, b.service_id::text, b.device_id::text, ",
                                   SqlMicros("b.started_at"), ", ", SqlMicros("b.ended_at")));
  return *columns;
}

v1::ServiceBinding BindingFromRow(const pqxx::row& row) {
  v1::ServiceBinding b;
  b.set_id(row[0].as<std::string>());
  b.set_service_id(row[1].as<std::string>());
  b.set_device_id(row[2].as<std::string>());
  SetTimestampFromMicros(row[3].as<int64_t>(), b.mutable_started_at());
  if (!row[4].is_null()) SetTimestampFromMicros(row[4].as<int64_t>(), b.mutable_ended_at());
  return b;
}

}  // namespace

v1::ReservationState StateFromName(const std::string& name) {
  if (name == "held") return v1::RESERVATION_HELD;
  if (name == "converted") return v1::RESERVATION_CONVERTED;
  if (name == "expired") return v1::RESERVATION_EXPIRED;
  if (name == "cancelled") return v1::RESERVATION_CANCELLED;
  return v1::RESERVATION_STATE_UNSPECIFIED;
}

std::string StateName(v1::ReservationState state) {
  switch (state) {
    case v1::RESERVATION_HELD:
      return "held";
    case v1::RESERVATION_CONVERTED:
      return "converted";
    case v1::RESERVATION_EXPIRED:
      return "expired";
    case v1::RESERVATION_CANCELLED:
      return "cancelled";
    default:
      return "";
  }
}

namespace {

// The organization's reservation whose `unique_column` (id or idempotency_key) is `value`.
std::optional<ReservationRecord> FindReservationBy(pqxx::transaction_base& tx,
                                                   const char* unique_column,
                                                   const std::string& org, const std::string& value,
                                                   bool lock) {
  pqxx::result rows = ExecCached(tx,
                                 absl::StrCat("SELECT ", ReservationColumns(),
                                              " FROM reservations r WHERE r.org_id = $1 AND r.",
                                              unique_column, " = $2", lock ? " FOR UPDATE" : ""),
                                 org, value);
  if (rows.empty()) return std::nullopt;
  return RecordFromRow(rows[0]);
}

}  // namespace

std::optional<ReservationRecord> FindReservationById(pqxx::transaction_base& tx,
                                                     const std::string& org, const std::string& id,
                                                     bool lock) {
  return FindReservationBy(tx, "id", org, id, lock);
}

std::optional<ReservationRecord> FindReservationByKey(pqxx::transaction_base& tx,
                                                      const std::string& org,
                                                      const std::string& key, bool lock) {
  return FindReservationBy(tx, "idempotency_key", org, key, lock);
}

Page<v1::Reservation> ReservationPage(pqxx::transaction_base& tx, const std::string& org,
                                      const std::string& state,
                                      const std::optional<PageCursor>& after, int limit) {
  // Newest first; the cursor is the (created_at, id) of the last row returned, compared as
  // exact microseconds.
  pqxx::result rows = tx.exec_params(
      absl::StrCat("SELECT ", ReservationColumns(), ", ", SqlMicros("r.created_at"),
                   " FROM reservations r WHERE r.org_id = $1 AND ", CreationListingCondition("r"),
                   " AND ($2 = '' OR r.state = $2) "
                   "AND ($3 = '' OR (r.created_at, r.id) < (",
                   SqlTimestampFromMicros("$4"),
                   ", $3::uuid)) "
                   "ORDER BY r.created_at DESC, r.id DESC LIMIT $5"),
      org, state, after ? after->id : std::string(), after ? after->key : int64_t{0}, limit);
  Page<v1::Reservation> page;
  for (const pqxx::row& row : rows) {
    page.rows.push_back(RecordFromRow(row).proto);
    page.cursors.push_back({row[16].as<int64_t>(), row[0].as<std::string>()});
  }
  return page;
}

std::string RandomWalkStart() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  const uint64_t hi = rng(), lo = rng();
  char buf[37];
  std::snprintf(buf, sizeof(buf), "%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(hi >> 32),
                static_cast<unsigned>((hi >> 16) & 0xffff), static_cast<unsigned>(hi & 0xffff),
                static_cast<unsigned>(lo >> 48),
                static_cast<unsigned long long>(lo & 0xffffffffffffULL));
  return buf;
}

namespace {

// dcl_reserve_call's exclusions, the jsonb array as text: one object per distinct combination of
// the asked site's facts (a handful), each with its count and the first few device ids, plus one
// counting the devices at the organization's other sites (dcl_exclusion_summary,
// schema/migrations/0022, 0031, 0035), in the summary's order. An object whose at_asked_site is
// null carries no combination (an organization without devices). Classify() turns each
// combination into a reason. Decoded here rather than spread into columns by the query: the
// common path, a hold, then runs no join, sort or table function beyond dcl_reserve_call itself
// (measured: tests/bench, anatomy).
ExclusionSummary SummaryFromJson(const std::string& json, const Criteria& criteria,
                                 int max_listed) {
  const std::optional<std::vector<FlatJsonObject>> combinations = ParseFlatJsonObjects(json);
  if (!combinations) {
    throw std::logic_error("dcl_reserve_call answered exclusions that are not a JSON array");
  }
  ExclusionSummary summary;
  for (const FlatJsonObject& fields : *combinations) {
    // A field of the given kind, or null when it is missing or of another kind (which protobuf's
    // Value, read before, treated as empty).
    auto find = [&](const char* name, FlatJsonValue::Kind kind) -> const FlatJsonValue* {
      const auto it = fields.find(name);
      return it != fields.end() && it->second.kind == kind ? &it->second : nullptr;
    };
    auto text = [&](const char* name) {
      const FlatJsonValue* value = find(name, FlatJsonValue::Kind::kString);
      return value != nullptr ? value->text : std::string();
    };
    auto flag = [&](const char* name) {
      const FlatJsonValue* value = find(name, FlatJsonValue::Kind::kBool);
      return value != nullptr && value->boolean;
    };
    const FlatJsonValue* at_asked_site = find("at_asked_site", FlatJsonValue::Kind::kBool);
    if (at_asked_site == nullptr) continue;
    DeviceFacts facts;
    // The other sites' combination carries no facts but "not this site": Classify checks the
    // site first, so that alone makes each of them wrong_site.
    facts.site_id = at_asked_site->boolean ? criteria.site_id : std::string();
    facts.vendor = text("vendor");
    facts.model = text("model");
    facts.hardware_profile = text("hardware_profile");
    facts.process_state = text("process_state");
    facts.bound = flag("bound");
    facts.held = flag("held");
    facts.decommissioned = flag("decommissioned");
    const FlatJsonValue* devices = find("devices", FlatJsonValue::Kind::kNumber);
    const int count = devices != nullptr ? static_cast<int>(devices->number) : 0;
    const Exclusion exclusion = Classify(criteria, facts);
    summary.counts[static_cast<size_t>(exclusion)] += count;
    if (exclusion == Exclusion::kEligible) {
      summary.eligible += count;
      continue;
    }
    // Devices at other sites are counted, not listed: they say nothing about this site.
    if (exclusion == Exclusion::kWrongSite) continue;
    for (absl::string_view id : absl::StrSplit(text("first_ids"), ',', absl::SkipEmpty())) {
      if (static_cast<int>(summary.listed.size()) >= max_listed) break;
      summary.listed.emplace_back(std::string(id), exclusion);
    }
  }
  return summary;
}

}  // namespace

ReserveOutcome ReserveInDatabase(pqxx::transaction_base& tx, const std::string& org,
                                 const std::string& key, const Criteria& criteria,
                                 const std::string& walk_start, int ttl_seconds,
                                 const std::string& actor, const WalkLimits& limits, int max_listed,
                                 absl::Time call_deadline) {
  // The function returns the reservation as a composite value (an outer query in the same
  // statement would not see the row the function inserted), whose fields the query selects for
  // RecordFromRow; a refusal's exclusions come as the jsonb array's text (SummaryFromJson), NULL
  // for every other outcome.
  static const std::string* sql = new std::string(absl::StrCat(
      "SELECT ", ColumnsOf("(f.reservation)"),
      ", f.outcome, f.candidates_examined, f.lost_races, f.rows_visited, f.exclusions::text "
      "FROM dcl_reserve_call($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, ",
      SqlTimestampFromMicros("nullif($13, '')"), ", $14) f"));
  const std::string deadline = CallDeadlineParameter(call_deadline);
  // ExecCached: parsed and planned once per connection where the connection is its own.
  auto call = [&] {
    return ExecCached(tx, *sql, org, key, criteria.site_id, criteria.vendor, criteria.model,
                      criteria.hardware_profile, walk_start, ttl_seconds, actor,
                      limits.max_candidates, limits.max_attempts, limits.max_rows, deadline,
                      max_listed);
  };
  const pqxx::result rows = [&] {
    try {
      return call();
    } catch (const pqxx::unique_violation&) {
      // Only reservations_org_key_uq can raise here (the arbiter is ON CONFLICT DO NOTHING): a
      // same-key hold written by a path that skips the function's advisory lock committed first.
      // In autocommit nothing of the failed call remains; the second call replays that hold.
      RestartAfterFailedStatement(tx);
      return call();
    }
  }();
  if (rows.size() != 1) throw std::logic_error("dcl_reserve_call answered not one row");
  const pqxx::row row = rows[0];
  ReserveOutcome outcome;
  const std::string kind = row[16].as<std::string>();
  outcome.candidates_examined = row[17].as<int>();
  outcome.lost_races = row[18].as<int>();
  outcome.rows_visited = row[19].as<int>();
  if (kind == "held") {
    outcome.kind = ReserveOutcome::Kind::kHeld;
  } else if (kind == "replay") {
    outcome.kind = ReserveOutcome::Kind::kReplay;
  } else if (kind == "no_site") {
    outcome.kind = ReserveOutcome::Kind::kNoSite;
  } else if (kind == "contended") {
    outcome.kind = ReserveOutcome::Kind::kContended;
  } else if (kind == "walk_limit") {
    outcome.kind = ReserveOutcome::Kind::kWalkLimit;
  } else if (kind == "no_candidate") {
    outcome.kind = ReserveOutcome::Kind::kNoCandidate;
  } else {
    throw std::logic_error("dcl_reserve answered an unknown outcome: " + kind);
  }
  if (!row[0].is_null()) outcome.reservation = RecordFromRow(row);
  if (!row[20].is_null()) {
    outcome.exclusions = SummaryFromJson(row[20].as<std::string>(), criteria, max_listed);
  }
  return outcome;
}

void MarkConverted(pqxx::transaction_base& tx, const std::string& id, const std::string& service_id,
                   const std::string& actor) {
  ExecCached(tx,
             "UPDATE reservations SET state = 'converted', end_reason = 'converted', "
             "ended_at = clock_timestamp(), ended_by = $2, service_id = $3 "
             "WHERE id = $1 AND state = 'held'",
             id, actor, service_id);
}

void MarkExpiredAtConversion(pqxx::transaction_base& tx, const std::string& id,
                             const std::string& actor) {
  ExecCached(tx,
             "UPDATE reservations SET state = 'expired', end_reason = 'expired_at_conversion', "
             "ended_at = clock_timestamp(), ended_by = $2 WHERE id = $1 AND state = 'held'",
             id, actor);
}

void MarkCancelled(pqxx::transaction_base& tx, const std::string& id, const std::string& actor,
                   const std::string& note) {
  ExecCached(tx,
             "UPDATE reservations SET state = 'cancelled', end_reason = 'cancelled', "
             "ended_at = clock_timestamp(), ended_by = $2, end_note = nullif($3, '') "
             "WHERE id = $1 AND state = 'held'",
             id, actor, note);
}

int64_t ExpireLapsedHolds(pqxx::transaction_base& tx, int limit, const std::string& actor) {
  // Held reservations whose deadline passed by the database clock → expired, never cancelled
  // ("did someone call it off, or did it lapse?" must stay answerable). The row lock of
  // FOR UPDATE SKIP LOCKED is what a Convert takes too: a hold being converted right now is not
  // ours to judge; the next pass sees whatever that Convert committed. The outer UPDATE repeats
  // the state condition so the statement is correct on its own, whatever picked the ids.
  // Schema enforces: the state vocabulary and the one-hold-per-device index. This statement
  // enforces: only `held` rows past expires_at are touched, and they become `expired`.
  pqxx::result result = tx.exec_params(R"sql(
WITH due AS (
  SELECT id FROM reservations
  WHERE state = 'held' AND expires_at < now()
  ORDER BY expires_at
  LIMIT $1
  FOR UPDATE SKIP LOCKED
)
UPDATE reservations r
SET state = 'expired', ended_at = now(), end_reason = 'expired_by_sweeper', ended_by = $2
FROM due
WHERE r.id = due.id AND r.state = 'held'
)sql",
                                       limit, actor);
  return static_cast<int64_t>(result.affected_rows());
}

v1::Service InsertService(pqxx::transaction_base& tx, const std::string& org,
                          const std::string& kind, const std::string& customer,
                          const std::string& actor) {
  pqxx::row row = ExecCached1(
      tx,
      "INSERT INTO services (org_id, kind, customer, created_by) VALUES ($1, $2, $3, $4) "
      "RETURNING id::text",
      org, kind, customer, actor);
  v1::Service service;
  service.set_id(row[0].as<std::string>());
  service.set_kind(kind);
  service.set_customer(customer);
  return service;
}

absl::StatusOr<v1::ServiceBinding> WriteBinding(pqxx::transaction_base& tx, const std::string& org,
                                                const std::string& service_id,
                                                const std::string& device_id,
                                                const std::string& reservation_id,
                                                const std::string& actor) {
  // RULE ENFORCED HERE, NOT BY THE SCHEMA: a binding points to a dedicated service. A CHECK
  // cannot read the services table, so this function, the only one that inserts into
  // service_bindings, refuses any other kind. FOR KEY SHARE keeps the service from being
  // deleted until the binding commits. The two "one active binding" rules are the schema's
  // (partial unique indexes), told apart here by name.
  pqxx::result service = ExecCached(
      tx, "SELECT kind FROM services WHERE id = $1 AND org_id = $2 FOR KEY SHARE", service_id, org);
  if (service.empty()) return NotFound("service", service_id);
  const std::string kind = service[0][0].as<std::string>();
  if (kind != "dedicated") {
    return Error(absl::StatusCode::kFailedPrecondition, v1::SERVICE_NOT_DEDICATED,
                 "a machine can be bound only to a dedicated service; this service is " + kind)
        .Meta("service_id", service_id)
        .Meta("kind", kind);
  }
  GuardedResult inserted = GuardedExec(
      tx,
      "INSERT INTO service_bindings (org_id, service_id, device_id, reservation_id, started_by) "
      "VALUES ($1[1]::uuid, $1[2]::uuid, $1[3]::uuid, $1[4]::uuid, $1[5]) RETURNING id::text",
      {org, service_id, device_id,
       reservation_id.empty() ? std::nullopt : std::optional<std::string>(reservation_id), actor});
  if (inserted.violated()) {
    if (inserted.violated_constraint == kServiceActiveIndex) {
      return Error(absl::StatusCode::kFailedPrecondition, v1::SERVICE_ALREADY_BOUND,
                   "the service is already bound to a machine")
          .Meta("service_id", service_id);
    }
    if (inserted.violated_constraint == kDeviceActiveIndex) {
      return Error(absl::StatusCode::kFailedPrecondition, v1::DEVICE_ALREADY_BOUND,
                   "the machine is already bound to another service")
          .Meta("device_id", device_id);
    }
    return UnexpectedViolation("binding", inserted);
  }
  if (!inserted.returned) return Internal("binding insert returned no id");
  pqxx::row row = ExecCached1(
      tx, absl::StrCat("SELECT ", BindingColumns(), " FROM service_bindings b WHERE b.id = $1"),
      *inserted.returned);
  return BindingFromRow(row);
}

std::optional<v1::ServiceBinding> FindBindingOfReservation(pqxx::transaction_base& tx,
                                                           const std::string& org,
                                                           const std::string& reservation_id) {
  pqxx::result rows = ExecCached(
      tx,
      absl::StrCat("SELECT ", BindingColumns(),
                   " FROM service_bindings b WHERE b.org_id = $1 AND b.reservation_id = $2 "
                   "ORDER BY b.started_at DESC LIMIT 1"),
      org, reservation_id);
  if (rows.empty()) return std::nullopt;
  return BindingFromRow(rows[0]);
}

absl::StatusOr<v1::ServiceBinding> EndServiceBinding(pqxx::transaction_base& tx,
                                                     const std::string& org,
                                                     const std::string& binding_id,
                                                     const std::string& actor, bool* replay) {
  pqxx::result updated = ExecCached(
      tx,
      absl::StrCat("UPDATE service_bindings b SET ended_at = greatest(clock_timestamp(), "
                   "b.started_at), ended_by = $3 "
                   "WHERE b.id = $1 AND b.org_id = $2 AND b.ended_at IS NULL RETURNING ",
                   BindingColumns()),
      binding_id, org, actor);
  if (!updated.empty()) {
    *replay = false;
    return BindingFromRow(updated[0]);
  }
  pqxx::result existing =
      ExecCached(tx,
                 absl::StrCat("SELECT ", BindingColumns(),
                              " FROM service_bindings b WHERE b.id = $1 AND b.org_id = $2"),
                 binding_id, org);
  if (existing.empty()) return NotFound("binding", binding_id);
  *replay = true;
  return BindingFromRow(existing[0]);
}

bool HasService(pqxx::transaction_base& tx, const std::string& org, const std::string& service_id,
                bool customer_only, const std::string& customer) {
  return !tx.exec_params(
                "SELECT 1 FROM services WHERE id = $1 AND org_id = $2 AND "
                "(NOT $3 OR customer = $4)",
                service_id, org, customer_only, customer)
              .empty();
}

std::optional<v1::ServiceLocation> LocateBoundMachine(pqxx::transaction_base& tx,
                                                      const std::string& org,
                                                      const std::string& service_id) {
  pqxx::result rows = tx.exec_params(
      "SELECT d.id, b.site_id, b.rack_id, r.name, b.first_unit, b.last_unit, b.front, b.rear "
      "FROM service_bindings sb "
      "JOIN devices d ON d.id = sb.device_id "
      "JOIN bookings b ON b.device_id = d.id AND b.kind = 'placement' "
      "                AND b.released_at IS NULL "
      "JOIN racks r ON r.id = b.rack_id "
      "WHERE sb.service_id = $1 "
      // Only the binding in force: an ended one points at a machine that now serves
      // someone else. And only the caller's organization, on the binding and the device: no
      // constraint ties a binding's device to the binding's organization.
      "  AND sb.ended_at IS NULL AND sb.org_id = $2 AND d.org_id = $2",
      service_id, org);
  if (rows.empty()) return std::nullopt;
  const pqxx::row row = rows[0];
  v1::ServiceLocation location;
  location.set_service_id(service_id);
  location.set_device_id(row[0].as<std::string>());
  location.set_site_id(row[1].as<std::string>());
  location.set_rack_id(row[2].as<std::string>());
  location.set_rack_name(row[3].as<std::string>());
  location.set_first_unit(row[4].as<int>());
  location.set_last_unit(row[5].as<int>());
  if (row[6].as<bool>()) location.add_sides(v1::SIDE_FRONT);
  if (row[7].as<bool>()) location.add_sides(v1::SIDE_REAR);
  return location;
}

}  // namespace dcl::reservation
