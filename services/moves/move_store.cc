#include "services/moves/move_store.h"

#include <google/protobuf/util/json_util.h>

#include <array>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "services/common/db.h"
#include "services/common/status.h"
#include "services/common/time_util.h"
#include "services/moves/move_convert.h"

namespace dcl::moves {

namespace {

const std::string& MoveColumns() {
  static const std::string* columns = new std::string(absl::StrCat(
      "m.id::text, m.org_id::text, m.device_id::text, m.source_site_id::text, "
      "m.source_rack_id::text, m.source_booking_id::text, m.destination_rack_id::text, "
      "m.destination_side, m.destination_unit, coalesce(m.move_hold_booking_id::text, ''), "
      "m.state, m.preflight::text, coalesce(m.preflight->>'process_state', ''), "
      "coalesce(m.job_id::text, ''), m.note, ",
      SqlMicros("m.created_at"), ", ", SqlMicros("m.updated_at"), ", m.created_by, m.updated_by"));
  return *columns;
}

MoveRecord ReadMove(const pqxx::row& row) {
  MoveRecord m;
  m.id = row[0].as<std::string>();
  m.org_id = row[1].as<std::string>();
  m.device_id = row[2].as<std::string>();
  m.site_id = row[3].as<std::string>();
  m.source_rack_id = row[4].as<std::string>();
  m.source_booking_id = row[5].as<std::string>();
  m.destination_rack_id = row[6].as<std::string>();
  m.destination_side = row[7].as<std::string>();
  m.destination_unit = row[8].as<int>();
  m.move_hold_booking_id = row[9].as<std::string>();
  // moves_state_valid admits only the nine names, so this cannot fail on stored rows.
  ParseState(row[10].as<std::string>(), &m.state);
  m.preflight_json = row[11].as<std::string>();
  m.preflight_process_state = row[12].as<std::string>();
  m.job_id = row[13].as<std::string>();
  m.note = row[14].as<std::string>();
  m.created_at_us = row[15].as<int64_t>();
  m.updated_at_us = row[16].as<int64_t>();
  m.created_by = row[17].as<std::string>();
  m.updated_by = row[18].as<std::string>();
  return m;
}

// The preflight as moves.preflight stores it and Move.preflight_json returns it: protobuf's JSON
// mapping with the .proto field names, a zero unit or an empty text written out rather than
// left away (MoveColumns() reads process_state back by that name, for RestoreProcessState).
absl::StatusOr<std::string> PreflightJson(const v1::MovePreflight& preflight) {
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  std::string json;
  const auto printed = google::protobuf::util::MessageToJsonString(preflight, &json, options);
  if (!printed.ok()) {
    return Internal(absl::StrCat("the preflight has no JSON form: ", printed.ToString()));
  }
  return json;
}

// libpqxx 6.4 has no parameter traits for std::optional: a null `const char*` is SQL NULL.
const char* NullIfEmpty(const std::string& s) { return s.empty() ? nullptr : s.c_str(); }
const char* OrNull(const std::optional<std::string>& s) { return s ? s->c_str() : nullptr; }

}  // namespace

v1::Move ToProto(const MoveRecord& m) {
  v1::Move out;
  out.set_id(m.id);
  out.set_device_id(m.device_id);
  out.set_site_id(m.site_id);
  out.set_source_booking_id(m.source_booking_id);
  out.set_destination_rack_id(m.destination_rack_id);
  out.set_destination_side(m.destination_side == "front" ? v1::SIDE_FRONT : v1::SIDE_REAR);
  out.set_destination_unit(m.destination_unit);
  out.set_move_hold_booking_id(m.move_hold_booking_id);
  out.set_state(ToProtoState(m.state));
  out.set_preflight_json(m.preflight_json);
  out.set_job_id(m.job_id);
  SetTimestampFromMicros(m.created_at_us, out.mutable_created_at());
  SetTimestampFromMicros(m.updated_at_us, out.mutable_updated_at());
  out.set_created_by(m.created_by);
  const StateTransitions& row = kTransitions[static_cast<size_t>(m.state)];
  for (size_t i = 0; i < row.count; ++i) out.add_allowed_targets(ToProtoState(row.targets[i]));
  return out;
}

v1::MoveEvent ToProto(const std::string& move_id, const MoveEventRecord& e) {
  v1::MoveEvent out;
  out.set_move_id(move_id);
  out.set_from_state(e.from_state ? ToProtoState(*e.from_state) : v1::MOVE_STATE_UNSPECIFIED);
  out.set_to_state(ToProtoState(e.to_state));
  out.set_note(e.note);
  out.set_actor(e.actor);
  SetTimestampFromMicros(e.at_us, out.mutable_at());
  out.set_sequence(e.sequence);
  return out;
}

void SetProcessState(pqxx::transaction_base& tx, const std::string& device_id,
                     const std::string& process_state) {
  ExecCached(tx, "UPDATE devices SET process_state = $2 WHERE id = $1::uuid", device_id,
             process_state);
}

bool DeviceInOrganization(pqxx::transaction_base& tx, const std::string& org_id,
                          const std::string& device_id) {
  return !ExecCached(tx, "SELECT 1 FROM devices WHERE id = $1::uuid AND org_id = $2::uuid",
                     device_id, org_id)
              .empty();
}

std::optional<RackRow> FindRack(pqxx::transaction_base& tx, const std::string& org_id,
                                const std::string& rack_id) {
  pqxx::result r = ExecCached(
      tx,
      "SELECT site_id::text, first_unit, first_unit + unit_count - 1, has_rear FROM racks "
      "WHERE id = $1::uuid AND org_id = $2::uuid",
      rack_id, org_id);
  if (r.empty()) return std::nullopt;
  return RackRow{r[0][0].as<std::string>(), r[0][1].as<int>(), r[0][2].as<int>(),
                 r[0][3].as<bool>()};
}

std::string InsertJob(pqxx::transaction_base& tx, const std::string& org_id,
                      const std::string& kind, const std::string& detail) {
  return ExecCached1(tx,
                     "INSERT INTO jobs (org_id, kind, detail) VALUES ($1::uuid, $2, $3) "
                     "RETURNING id::text",
                     org_id, kind, detail)[0]
      .as<std::string>();
}

void FinishJob(pqxx::transaction_base& tx, const std::string& job_id, const std::string& status) {
  if (job_id.empty()) return;
  ExecCached(tx,
             "UPDATE jobs SET status = $2, finished_at = now(), updated_at = now() "
             "WHERE id = $1::uuid AND status = 'running'",
             job_id, status);
}

absl::StatusOr<std::string> InsertMove(pqxx::transaction_base& tx, const NewMove& m) {
  absl::StatusOr<std::string> preflight = PreflightJson(m.preflight);
  if (!preflight.ok()) return preflight.status();
  GuardedResult r = GuardedExec(
      tx,
      "INSERT INTO moves (org_id, device_id, source_site_id, source_rack_id, source_booking_id, "
      "destination_site_id, destination_rack_id, destination_side, destination_unit, state, "
      "preflight, job_id, note, created_by, updated_by) VALUES ($1[1]::uuid, $1[2]::uuid, "
      "$1[3]::uuid, $1[4]::uuid, $1[5]::uuid, $1[6]::uuid, $1[7]::uuid, $1[8], $1[9]::integer, "
      "$1[10], $1[11]::jsonb, $1[12]::uuid, $1[13], $1[14], $1[14]) RETURNING id::text",
      {m.org_id, m.device_id, m.source_site_id, m.source_rack_id, m.source_booking_id,
       m.destination_site_id, m.destination_rack_id, m.destination_side,
       absl::StrCat(m.destination_unit), std::string(StateName(m.state)), *preflight,
       m.job_id.empty() ? std::nullopt : std::optional<std::string>(m.job_id), m.note, m.actor});
  if (!r.violated()) {
    if (!r.returned) return Internal("move insert returned no id");
    return *r.returned;
  }
  // Refusals decided by the schema, by constraint name.
  if (r.violated_constraint == "moves_same_site") {
    return Error(absl::StatusCode::kFailedPrecondition, v1::CROSS_SITE_MOVE,
                 "the destination rack is in another site than the device's placement; a move "
                 "stays inside one site (between sites a device is in_transit)")
        .Meta("source_site_id", m.source_site_id)
        .Meta("destination_site_id", m.destination_site_id);
  }
  if (r.violated_constraint == "moves_one_open_per_device") {
    return Error(absl::StatusCode::kFailedPrecondition, v1::MOVE_ALREADY_OPEN,
                 "the device already has an open move")
        .Meta("device_id", m.device_id);
  }
  return UnexpectedViolation("move", r);
}

void SetMoveHold(pqxx::transaction_base& tx, const std::string& move_id,
                 const std::string& booking_id) {
  ExecCached(tx, "UPDATE moves SET move_hold_booking_id = $2::uuid WHERE id = $1::uuid", move_id,
             booking_id);
}

absl::StatusOr<MoveRecord> LoadMove(pqxx::transaction_base& tx, const std::string& org_id,
                                    const std::string& move_id, bool for_update) {
  pqxx::result r =
      ExecCached(tx,
                 absl::StrCat("SELECT ", MoveColumns(),
                              " FROM moves m WHERE m.id = $1::uuid AND m.org_id = $2::uuid",
                              for_update ? " FOR UPDATE" : ""),
                 move_id, org_id);
  if (r.empty()) return NotFound("move", move_id);
  return ReadMove(r[0]);
}

void UpdateState(pqxx::transaction_base& tx, const std::string& move_id, MoveState state,
                 const std::string& actor) {
  ExecCached(tx,
             "UPDATE moves SET state = $2, updated_at = now(), updated_by = $3, "
             "ended_at = CASE WHEN $4 THEN now() END WHERE id = $1::uuid",
             move_id, std::string(StateName(state)), actor, IsTerminal(state));
}

int64_t AppendEvent(pqxx::transaction_base& tx, const std::string& org_id,
                    const std::string& move_id, std::optional<MoveState> from, MoveState to,
                    const std::string& observation, const std::string& note,
                    const std::string& actor) {
  const char* from_name = from ? StateName(*from) : nullptr;
  return ExecCached1(tx,
                     "INSERT INTO move_events (move_id, org_id, sequence, from_state, to_state, "
                     "observation, note, actor) SELECT $1::uuid, $2::uuid, "
                     "coalesce(max(sequence), 0) + 1, $3, $4, $5, $6, $7 FROM move_events "
                     "WHERE move_id = $1::uuid RETURNING sequence",
                     move_id, org_id, from_name, std::string(StateName(to)), observation, note,
                     actor)[0]
      .as<int64_t>();
}

std::vector<MoveEventRecord> EventsAfter(pqxx::transaction_base& tx, const std::string& org_id,
                                         const std::string& move_id, int64_t after) {
  pqxx::result r = ExecCached(
      tx,
      absl::StrCat(
          "SELECT sequence, coalesce(from_state, ''), to_state, observation, note, actor, ",
          SqlMicros("at"),
          " FROM move_events "
          "WHERE move_id = $1::uuid AND org_id = $2::uuid AND sequence > $3 ORDER BY sequence"),
      move_id, org_id, after);
  std::vector<MoveEventRecord> events;
  events.reserve(r.size());
  for (const auto& row : r) {
    MoveEventRecord e;
    e.sequence = row[0].as<int64_t>();
    MoveState from;
    if (ParseState(row[1].as<std::string>(), &from)) e.from_state = from;
    ParseState(row[2].as<std::string>(), &e.to_state);
    e.observation = row[3].as<std::string>();
    e.note = row[4].as<std::string>();
    e.actor = row[5].as<std::string>();
    e.at_us = row[6].as<int64_t>();
    events.push_back(std::move(e));
  }
  return events;
}

int64_t AppendLocation(pqxx::transaction_base& tx, const LocationRow& row) {
  const bool known = !row.rack_id.empty();
  std::optional<std::string> first, last, corrects;
  if (known) {
    first = absl::StrCat(row.first_unit);
    last = absl::StrCat(row.last_unit);
  }
  if (row.corrects_id != 0) corrects = absl::StrCat(row.corrects_id);
  return ExecCached1(
             tx,

             "INSERT INTO location_history (org_id, device_id, site_id, rack_id, side, first_unit, "
             "last_unit, event, move_id, move_state, booking_id, corrects_id, note, actor) VALUES "
             "($1::uuid, $2::uuid, $3::uuid, $4::uuid, $5, $6, $7, $8, $9::uuid, $10, $11::uuid, "
             "$12::bigint, $13, $14) RETURNING id",
             row.org_id, row.device_id, NullIfEmpty(row.site_id), NullIfEmpty(row.rack_id),
             known ? NullIfEmpty(row.side) : nullptr, OrNull(first), OrNull(last), row.event,
             NullIfEmpty(row.move_id), NullIfEmpty(row.move_state), NullIfEmpty(row.booking_id),
             OrNull(corrects), row.note, row.actor)[0]
      .as<int64_t>();
}

namespace {

const std::string& LocationColumns() {
  static const std::string* columns = new std::string(absl::StrCat(
      "l.id, l.org_id::text, l.device_id::text, coalesce(l.site_id::text, ''), "
      "coalesce(l.rack_id::text, ''), coalesce(l.side, ''), coalesce(l.first_unit, 0), "
      "coalesce(l.last_unit, 0), l.event, coalesce(l.move_id::text, ''), "
      "coalesce(l.move_state, ''), coalesce(l.booking_id::text, ''), coalesce(l.corrects_id, 0), "
      "l.note, l.actor, ",
      SqlMicros("l.recorded_at")));
  return *columns;
}

LocationRecordRow ReadLocation(const pqxx::row& r) {
  LocationRecordRow out;
  out.id = r[0].as<int64_t>();
  out.row.org_id = r[1].as<std::string>();
  out.row.device_id = r[2].as<std::string>();
  out.row.site_id = r[3].as<std::string>();
  out.row.rack_id = r[4].as<std::string>();
  out.row.side = r[5].as<std::string>();
  out.row.first_unit = r[6].as<int>();
  out.row.last_unit = r[7].as<int>();
  out.row.event = r[8].as<std::string>();
  out.row.move_id = r[9].as<std::string>();
  out.row.move_state = r[10].as<std::string>();
  out.row.booking_id = r[11].as<std::string>();
  out.row.corrects_id = r[12].as<int64_t>();
  out.row.note = r[13].as<std::string>();
  out.row.actor = r[14].as<std::string>();
  out.recorded_at_us = r[15].as<int64_t>();
  return out;
}

std::vector<LocationRecordRow> ReadLocations(const pqxx::result& r) {
  std::vector<LocationRecordRow> rows;
  rows.reserve(r.size());
  for (const auto& row : r) rows.push_back(ReadLocation(row));
  return rows;
}

}  // namespace

v1::LocationRecord ToProto(const LocationRecordRow& record) {
  const LocationRow& row = record.row;
  v1::LocationRecord out;
  out.set_id(record.id);
  out.set_device_id(row.device_id);
  out.set_position_known(!row.rack_id.empty());
  out.set_site_id(row.site_id);
  out.set_rack_id(row.rack_id);
  out.set_side(row.side == "front"  ? v1::SIDE_FRONT
               : row.side == "rear" ? v1::SIDE_REAR
                                    : v1::SIDE_UNSPECIFIED);
  out.set_first_unit(row.first_unit);
  out.set_last_unit(row.last_unit);
  out.set_event(row.event);
  out.set_move_id(row.move_id);
  MoveState state;
  if (ParseState(row.move_state, &state)) out.set_move_state(ToProtoState(state));
  out.set_booking_id(row.booking_id);
  out.set_corrects_id(row.corrects_id);
  out.set_note(row.note);
  out.set_actor(row.actor);
  SetTimestampFromMicros(record.recorded_at_us, out.mutable_recorded_at());
  return out;
}

std::optional<LocationRecordRow> LoadLocation(pqxx::transaction_base& tx, const std::string& org_id,
                                              int64_t id) {
  pqxx::result r =
      ExecCached(tx,
                 absl::StrCat("SELECT ", LocationColumns(),
                              " FROM location_history l WHERE l.id = $1 AND l.org_id = $2::uuid"),
                 id, org_id);
  if (r.empty()) return std::nullopt;
  return ReadLocation(r[0]);
}

Page<LocationRecordRow> LocationPage(pqxx::transaction_base& tx, const std::string& org_id,
                                     const std::string& device_id,
                                     const std::optional<PageCursor>& after, int limit) {
  Page<LocationRecordRow> page;
  page.rows = ReadLocations(tx.exec_params(
      absl::StrCat("SELECT ", LocationColumns(),
                   " FROM location_history l WHERE l.device_id = $1::uuid AND l.org_id = $2::uuid "
                   "AND l.corrects_id IS NULL AND ($3 = 0 OR l.id < $3) "
                   "ORDER BY l.id DESC LIMIT $4"),
      device_id, org_id, after ? after->key : int64_t{0}, limit));
  for (const LocationRecordRow& row : page.rows) page.cursors.push_back({row.id, ""});
  return page;
}

std::vector<LocationRecordRow> CorrectionsOf(pqxx::transaction_base& tx,
                                             const std::string& org_id,
                                             const std::vector<int64_t>& ids) {
  if (ids.empty()) return {};
  return ReadLocations(tx.exec_params(
      absl::StrCat("SELECT ", LocationColumns(),
                   " FROM location_history l WHERE l.corrects_id = ANY($1::bigint[]) "
                   "AND l.org_id = $2::uuid ORDER BY l.id DESC"),
      absl::StrCat("{", absl::StrJoin(ids, ","), "}"), org_id));
}

Page<MoveRecord> ListMoves(pqxx::transaction_base& tx, const std::string& org_id,
                           const MoveFilter& filter, const std::optional<PageCursor>& after,
                           int limit) {
  const char* state = filter.state ? StateName(*filter.state) : nullptr;
  std::optional<std::string> after_us, after_id;
  if (after) {
    after_us = absl::StrCat(after->key);
    after_id = after->id;
  }
  pqxx::result r = tx.exec_params(
      absl::StrCat("SELECT ", MoveColumns(), " FROM moves m WHERE m.org_id = $1::uuid AND ",
                   CreationListingCondition("m"),
                   " AND ($2::text IS NULL OR m.state = $2) "
                   "AND ($3::uuid IS NULL OR m.device_id = $3::uuid) "
                   "AND ($4::bigint IS NULL OR (m.created_at, m.id) > (",
                   SqlTimestampFromMicros("$4"),
                   ", $5::uuid)) "
                   "ORDER BY m.created_at, m.id LIMIT $6"),
      org_id, state, NullIfEmpty(filter.device_id), OrNull(after_us), OrNull(after_id), limit);
  Page<MoveRecord> page;
  page.rows.reserve(r.size());
  for (const auto& row : r) {
    page.rows.push_back(ReadMove(row));
    page.cursors.push_back({page.rows.back().created_at_us, page.rows.back().id});
  }
  return page;
}

}  // namespace dcl::moves
