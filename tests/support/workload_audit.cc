#include "tests/support/workload_audit.h"

#include <cctype>
#include <set>
#include <stdexcept>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "services/move_workflow/move_state.h"

namespace dcl::workload {

std::vector<std::string> Column(Reader& db, const std::string& sql) {
  std::vector<std::string> values;
  for (const auto& row : db.Exec(sql)) values.push_back(row[0].is_null() ? "" : row[0].c_str());
  return values;
}

std::map<std::string, std::string> HistoryDigests(Reader& db) {
  std::map<std::string, std::string> digests;
  for (const auto& row : db.Exec("SELECT id::text, md5(l::text) FROM location_history l")) {
    digests[row[0].c_str()] = row[1].c_str();
  }
  return digests;
}

v1::MoveState StateFromName(const std::string& name) {
  v1::MoveState state = v1::MOVE_STATE_UNSPECIFIED;
  std::string upper = "MOVE_" + name;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  v1::MoveState_Parse(upper, &state);
  return state;
}

// 1. Every invariant, over the whole database.
void AuditInvariants(Reader& db, Report& report) {
  const char* const kOpen = "state NOT IN ('completed', 'cancelled', 'failed')";
  const std::vector<std::pair<std::string, std::string>> invariants = {
      {"no machine held twice",
       "SELECT device_id::text FROM reservations WHERE state = 'held' GROUP BY device_id "
       "HAVING count(*) > 1"},
      {"no held machine bound to a service",
       "SELECT r.id::text FROM reservations r JOIN service_bindings b ON b.device_id = "
       "r.device_id AND b.ended_at IS NULL WHERE r.state = 'held'"},
      {"one active binding per machine",
       "SELECT device_id::text FROM service_bindings WHERE ended_at IS NULL GROUP BY device_id "
       "HAVING count(*) > 1"},
      {"one active binding per service",
       "SELECT service_id::text FROM service_bindings WHERE ended_at IS NULL GROUP BY service_id "
       "HAVING count(*) > 1"},
      {"no slot booked twice",
       "SELECT rack_id::text || ' ' || side || ' ' || unit FROM booking_slots WHERE released_at "
       "IS NULL GROUP BY rack_id, side, unit HAVING count(*) > 1"},
      {"a booking's slots are released with it",
       "SELECT DISTINCT b.id::text FROM bookings b JOIN booking_slots s ON s.booking_id = b.id "
       "WHERE (b.released_at IS NULL) <> (s.released_at IS NULL)"},
      {"every placement without expiry",
       "SELECT id::text FROM bookings WHERE kind = 'placement' AND expires_at IS NOT NULL"},
      {"one active placement per device",
       "SELECT device_id::text FROM bookings WHERE kind = 'placement' AND released_at IS NULL "
       "GROUP BY device_id HAVING count(*) > 1"},
      {"no open move without its destination held",
       absl::StrCat("SELECT m.id::text FROM moves m LEFT JOIN bookings h ON h.id = "
                    "m.move_hold_booking_id WHERE m.",
                    kOpen,
                    " AND (h.id IS NULL OR h.released_at IS NOT NULL OR NOT EXISTS (SELECT 1 "
                    "FROM booking_slots s WHERE s.booking_id = h.id AND s.released_at IS NULL))")},
      {"one open move per device", absl::StrCat("SELECT device_id::text FROM moves WHERE ", kOpen,
                                                " GROUP BY device_id HAVING count(*) > 1")},
      {"a device is moving exactly while it has an open move",
       absl::StrCat("SELECT d.id::text FROM devices d WHERE (d.process_state = 'moving') <> "
                    "EXISTS (SELECT 1 FROM moves m WHERE m.device_id = d.id AND m.",
                    kOpen, ")")},
      {"every move has its events numbered 1..n",
       "SELECT m.id::text FROM moves m LEFT JOIN (SELECT move_id, min(sequence) AS low, "
       "max(sequence) AS high, count(*) AS n FROM move_events GROUP BY move_id) e ON e.move_id "
       "= m.id WHERE e.n IS NULL OR e.low <> 1 OR e.high <> e.n"},
      {"each move event starts where the one before ended",
       "SELECT e.move_id::text || ' #' || e.sequence FROM move_events e LEFT JOIN move_events p "
       "ON p.move_id = e.move_id AND p.sequence = e.sequence - 1 WHERE (e.sequence = 1 AND "
       "e.from_state IS NOT NULL) OR (e.sequence > 1 AND e.from_state IS DISTINCT FROM "
       "p.to_state)"},
      {"a move's state is its last event's",
       "SELECT m.id::text FROM moves m JOIN LATERAL (SELECT to_state FROM move_events e WHERE "
       "e.move_id = m.id ORDER BY sequence DESC LIMIT 1) last ON true WHERE last.to_state <> "
       "m.state"},
      {"one location history row per move event, in the same order",
       "SELECT m.id::text FROM moves m WHERE (SELECT array_agg(to_state ORDER BY sequence) FROM "
       "move_events e WHERE e.move_id = m.id) IS DISTINCT FROM (SELECT array_agg(move_state "
       "ORDER BY id) FROM location_history l WHERE l.move_id = m.id AND l.event <> "
       "'correction')"},
      // Capacity (schema 0038/0039): the rows' CHECKs say no row is ever over; the drift
      // function recomputes every row from the active bookings, so a trigger that missed a
      // booking, a release or a promotion anywhere in the workload shows here.
      {"no rack budget carries more than it may",
       "SELECT rack_id::text || ' ' || dimension || ' ' || key FROM rack_budgets "
       "WHERE used > capacity + allowance"},
      {"every rack budget row equals a recomputation from the active bookings",
       "SELECT rack_id::text || ' ' || dimension || ' ' || key || ': ' || coalesce(used::text, "
       "'missing') || ' vs ' || coalesce(expected::text, 'none') FROM dcl_rack_budget_drift()"},
      {"sweeper expiries after their deadline (database clock)",
       "SELECT id::text FROM reservations WHERE end_reason = 'expired_by_sweeper' AND ended_at "
       "< expires_at"},
      // The binding's started_at is its transaction's start (now()), which precedes Convert's
      // deadline check (clock_timestamp()): a binding begun at or after the deadline means the
      // check passed a lapsed hold.
      {"no hold converted after its deadline (database clock)",
       "SELECT r.id::text FROM reservations r JOIN service_bindings b ON b.reservation_id = "
       "r.id WHERE r.state = 'converted' AND b.started_at >= r.expires_at"},
      {"sweeper releases after their deadline (database clock)",
       "SELECT id::text FROM bookings WHERE released_by = 'sweeper' AND released_at < "
       "expires_at"},
  };
  for (const auto& [name, sql] : invariants) {
    const std::vector<std::string> offending = Column(db, sql);
    std::printf(
        "  %-64s %s\n", name.c_str(),
        offending.empty() ? "holds" : absl::StrCat("BROKEN (", offending.size(), ")").c_str());
    if (!offending.empty()) {
      report.Fail(absl::StrCat(
          "1. invariant broken: ", name, ": ",
          absl::StrJoin(offending.begin(),
                        offending.begin() + std::min<size_t>(3, offending.size()), ", ")));
    }
  }
  int64_t transitions = 0;
  for (const auto& row :
       db.Exec("SELECT move_id::text, from_state, to_state FROM move_events WHERE from_state IS "
               "NOT NULL")) {
    moves::MoveState from, to;
    ++transitions;
    if (!moves::ParseState(row[1].c_str(), &from) || !moves::ParseState(row[2].c_str(), &to) ||
        !moves::IsAllowed(from, to)) {
      report.Fail(absl::StrCat("1. invariant broken: move ", row[0].c_str(), " went ",
                               row[1].c_str(), " -> ", row[2].c_str(), ", not in the table"));
    }
  }
  std::printf("  %-64s checked (%lld)\n", "every recorded transition is in the transition table",
              static_cast<long long>(transitions));
}

void AuditHolds(Reader& db, const std::string& org,
                const std::vector<std::unique_ptr<ReservationClient>>& clients, Report& report) {
  int64_t checked = 0, refused = 0;
  for (const auto& client : clients) {
    for (const auto& [key, hold] : client->holds()) {
      if (hold.unknown) continue;
      ++checked;
      const pqxx::result rows = db.Exec(absl::StrCat(
          "SELECT id::text, device_id::text, state, coalesce(service_id::text, ''), "
          "coalesce(end_reason, ''), ended_at >= expires_at FROM reservations WHERE org_id = '",
          org, "' AND idempotency_key = '", key, "'"));
      if (rows.size() != 1) {
        report.Fail(absl::StrCat("2. acknowledged Reserve ", key, " is missing"));
        continue;
      }
      const pqxx::row row = rows[0];
      const std::string state = row[2].c_str();
      std::string wrong;
      if (hold.id != row[0].c_str() || hold.device != row[1].c_str()) {
        wrong = absl::StrCat("reservation ", row[0].c_str(), " of device ", row[1].c_str(),
                             ", acknowledged ", hold.id, " of device ", hold.device);
      } else if (hold.state == "held") {
        const bool lapsed = state == "expired" && !row[5].is_null() && row[5].as<bool>() &&
                            (std::string(row[4].c_str()) == "expired_by_sweeper" ||
                             std::string(row[4].c_str()) == "expired_at_conversion");
        if (state != "held" && !lapsed) wrong = "held, now " + state + " " + row[4].c_str();
      } else if (state != hold.state) {
        wrong = hold.state + ", now " + state;
      } else if (hold.state == "converted" && hold.service != row[3].c_str()) {
        wrong = absl::StrCat("converted to service ", hold.service, ", now ", row[3].c_str());
      }
      if (hold.state == "converted" && !hold.binding.empty() && wrong.empty()) {
        const pqxx::result binding = db.Exec(
            absl::StrCat("SELECT service_id::text, device_id::text, ended_at IS NOT NULL FROM "
                         "service_bindings WHERE id = '",
                         hold.binding, "'"));
        if (binding.size() != 1 || hold.service != binding[0][0].c_str() ||
            hold.device != binding[0][1].c_str() ||
            binding[0][2].as<bool>() != hold.binding_ended) {
          wrong =
              absl::StrCat("binding ", hold.binding,
                           " not as acknowledged (ended: ", hold.binding_ended ? "yes" : "no", ")");
        }
      }
      if (!wrong.empty()) report.Fail(absl::StrCat("2. reservation ", key, ": ", wrong));
    }
    for (const std::string& key : client->refused_keys()) {
      ++refused;
      if (db.Count(absl::StrCat("SELECT count(*) FROM reservations WHERE org_id = '", org,
                                "' AND idempotency_key = '", key, "'")) != 0) {
        report.Fail(absl::StrCat("2. Reserve ", key, " was refused, yet its reservation exists"));
      }
    }
    for (const v1::ReserveRequest& request : client->unanswered()) {
      const std::string& key = request.idempotency_key();
      const int64_t found =
          db.Count(absl::StrCat("SELECT count(*) FROM reservations WHERE org_id = '", org,
                                "' AND idempotency_key = '", key, "'"));
      auto resolved = client->rows_after_retry().find(key);
      if (resolved != client->rows_after_retry().end() && found != resolved->second) {
        report.Fail(absl::StrCat("2. Reserve ", key, " resolved by a retry with the same key, yet ",
                                 found, " reservations carry its key (", resolved->second,
                                 " expected)"));
      } else if (resolved == client->rows_after_retry().end()) {
        report.Note(absl::StrCat("Reserve never answered nor resolved, in the database: ", found));
      }
    }
  }
  std::printf("  %-64s %lld\n", "refused reservations absent", static_cast<long long>(refused));
  std::printf("  %-64s %lld\n", "acknowledged reservations compared",
              static_cast<long long>(checked));
}

void AuditBookings(Reader& db, const std::string& org,
                   const std::vector<std::unique_ptr<OccupancyClient>>& clients, Report& report) {
  int64_t refused = 0;
  // Bookings per reason, read once: reasons are not indexed, and a long run refuses tens of
  // thousands of creates.
  std::map<std::string, int64_t> bookings_by_reason;
  for (const auto& row : db.Exec(absl::StrCat(
           "SELECT reason, count(*) FROM bookings WHERE org_id = '", org, "' GROUP BY reason"))) {
    bookings_by_reason[row[0].c_str()] = row[1].as<int64_t>();
  }
  static const std::map<std::string, v1::BookingKind> kKinds = {
      {"placement", v1::BOOKING_PLACEMENT},
      {"blocking", v1::BOOKING_BLOCKING},
      {"move_hold", v1::BOOKING_MOVE_HOLD},
      {"reservation", v1::BOOKING_RESERVATION}};
  int64_t checked = 0;
  for (const auto& client : clients) {
    for (const auto& [id, booking] : client->bookings()) {
      ++checked;
      const pqxx::result rows = db.Exec(absl::StrCat(
          "SELECT kind, rack_id::text, coalesce(device_id::text, ''), released_at IS NOT NULL, "
          "coalesce(released_by, ''), coalesce(released_at >= expires_at, false) FROM bookings "
          "WHERE id = '",
          id, "'"));
      if (rows.size() != 1) {
        report.Fail(absl::StrCat("2. acknowledged booking ", id, " is missing"));
        continue;
      }
      std::set<std::pair<int, int>> slots;
      for (const auto& slot : db.Exec(absl::StrCat(
               "SELECT side, unit FROM booking_slots WHERE booking_id = '", id, "'"))) {
        slots.insert({std::string(slot[0].c_str()) == "front" ? v1::SIDE_FRONT : v1::SIDE_REAR,
                      slot[1].as<int>()});
      }
      const bool released = rows[0][3].as<bool>();
      // A rack reservation that lapsed is released by a sweeper, or by the booking write path
      // of whoever claims its units next.
      const bool lapsed = booking.kind == v1::BOOKING_RESERVATION && rows[0][5].as<bool>();
      std::string wrong;
      if (kKinds.at(rows[0][0].c_str()) != booking.kind || booking.rack != rows[0][1].c_str() ||
          booking.device != rows[0][2].c_str() || slots != booking.slots) {
        wrong = "kind, rack, device or slots differ";
      } else if (booking.released && !released) {
        wrong = "release acknowledged, still active";
      } else if (!booking.released && !booking.release_unknown && released && !lapsed) {
        wrong = absl::StrCat("released by ", rows[0][4].c_str(), " though nobody was told so");
      }
      if (!wrong.empty()) report.Fail(absl::StrCat("2. booking ", id, ": ", wrong));
    }
    for (const UnknownCreate& create : client->unknown_creates()) {
      auto it = bookings_by_reason.find(create.reason);
      const int64_t found = it == bookings_by_reason.end() ? 0 : it->second;
      report.Note(absl::StrCat(create.rpc, " after an unknown outcome, bookings found: ", found));
      if (found > 1) {
        report.Fail(absl::StrCat("2. ", create.rpc, " retried after an unknown outcome wrote ",
                                 found, " bookings (reason ", create.reason, ")"));
      }
    }
    for (const UnknownCreate& create : client->refused_creates()) {
      ++refused;
      if (bookings_by_reason.count(create.reason) != 0) {
        report.Fail(absl::StrCat("2. ", create.rpc, " was refused, yet a booking with its reason ",
                                 create.reason, " exists"));
      }
    }
  }
  std::printf("  %-64s %lld\n", "refused bookings absent", static_cast<long long>(refused));
  std::printf("  %-64s %lld\n", "acknowledged bookings compared", static_cast<long long>(checked));
}

void AuditMoves(Reader& db, const std::vector<const MoveRecord*>& moves, Report& report) {
  int64_t checked = 0, transitions = 0;
  for (const MoveRecord* move : moves) {
    if (move->unknown) continue;
    ++checked;
    transitions += static_cast<int64_t>(move->path.size());
    std::vector<v1::MoveState> recorded;
    for (const std::string& state :
         Column(db, absl::StrCat("SELECT to_state FROM move_events WHERE move_id = '", move->id,
                                 "' ORDER BY sequence"))) {
      recorded.push_back(StateFromName(state));
    }
    const std::string state =
        db.Scalar(absl::StrCat("SELECT state FROM moves WHERE id = '", move->id, "'"));
    if (recorded != move->path || StateFromName(state) != move->path.back()) {
      std::vector<std::string> made, found;
      for (v1::MoveState s : move->path) made.push_back(v1::MoveState_Name(s));
      for (v1::MoveState s : recorded) found.push_back(v1::MoveState_Name(s));
      report.Fail(absl::StrCat("2. move ", move->id, ": acknowledged [", absl::StrJoin(made, " "),
                               "], recorded [", absl::StrJoin(found, " "), "] now ", state));
    }
  }
  std::printf("  %-64s %lld (%lld transitions)\n", "acknowledged moves compared",
              static_cast<long long>(checked), static_cast<long long>(transitions));
}

void AuditHistoryUnchanged(Reader& db, const std::map<std::string, std::string>& seen,
                           const std::string& when, Report& report) {
  const std::map<std::string, std::string> now = HistoryDigests(db);
  int64_t changed = 0;
  for (const auto& [id, digest] : seen) {
    auto it = now.find(id);
    if (it == now.end() || it->second != digest) ++changed;
  }
  std::printf("  %-64s %s (%zu rows then, %zu now)\n",
              absl::StrCat("location history rows ", when, " unchanged").c_str(),
              changed == 0 ? "holds" : "BROKEN", seen.size(), now.size());
  if (changed > 0) {
    report.Fail(absl::StrCat("1. ", changed, " location history rows changed or vanished"));
  }
}

void AuditProcesses(SuiteProcesses& suite, Report& report) {
  for (const std::string& exit : suite.UnexpectedExits()) report.Fail("4. " + exit);
  for (const std::string& name : suite.Names()) {
    if (suite.Port(name) != 0 && !testing::IsServing(suite.Port(name), 10s)) {
      report.Fail("4. not SERVING at the end: " + name);
    }
  }
}

}  // namespace dcl::workload
