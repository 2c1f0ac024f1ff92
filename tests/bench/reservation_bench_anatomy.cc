// The reservation benchmark's view of the database (reservation_bench.h): what the cluster did
// between two readings (WAL, checkpoints, autovacuum), and the anatomy of one hold, part by part,
// in one session without network or protocol.
#include "tests/bench/reservation_bench.h"

#include <cstdio>
#include <functional>
#include <map>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "services/reservation/reservation_store.h"

namespace dcl::bench::reservation_bench {

Bench::DatabaseActivity Bench::ReadActivity() {
  pqxx::connection conn(url_);
  pqxx::nontransaction tx(conn);
  pqxx::row wal = tx.exec1("SELECT wal_bytes::float8 / 1048576, wal_fpi FROM pg_stat_wal");
  pqxx::row bg = tx.exec1("SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter");
  pqxx::row vac = tx.exec1(
      "SELECT coalesce(sum(autovacuum_count), 0), coalesce(sum(autoanalyze_count), 0) "
      "FROM pg_stat_user_tables WHERE relname IN ('reservations', 'devices', "
      "'client_requests', 'reservation_events')");
  DatabaseActivity a;
  a.wal_mb = wal[0].as<double>();
  a.full_page_images = wal[1].as<long long>();
  a.checkpoints = bg[0].as<long long>();
  a.autovacuums = vac[0].as<long long>();
  a.autoanalyzes = vac[1].as<long long>();
  return a;
}

void Bench::PrintActivity(const char* phase, const DatabaseActivity& from,
                          const DatabaseActivity& to) {
  std::printf(
      "   %s: WAL %.1f MB, full-page images %lld, checkpoints %lld, autovacuum runs %lld, "
      "autoanalyze runs %lld\n",
      phase, to.wal_mb - from.wal_mb, to.full_page_images - from.full_page_images,
      to.checkpoints - from.checkpoints, to.autovacuums - from.autovacuums,
      to.autoanalyzes - from.autoanalyzes);
}

void Bench::Anatomy(int n) {
  const std::string site = NewSite("anatomy", 10000);
  const std::string parts_site = NewSite("anatomy-parts", 2 * n);
  // A site of 10 whose every machine is held: what each of 256-on-10's refusals finds.
  const std::string full_site = NewSite("anatomy-full", 10);
  Sql(absl::StrCat("DO $full$ BEGIN FOR i IN 1..10 LOOP PERFORM * FROM dcl_reserve('", org_,
                   "', 'anatomy-full-' || i, '", full_site,
                   "', '', '', '', NULL, 900, 'bench', 25, 5, 1024); END LOOP; END $full$"));
  if (Scalar(absl::StrCat("SELECT count(*) FROM reservations WHERE state = 'held' AND "
                          "criteria_site_id = '",
                          full_site, "'")) != "10") {
    Die("anatomy: the full site's 10 machines are not all held");
  }
  pqxx::connection conn(url_);
  const int backend = pqxx::nontransaction(conn).exec1("SELECT pg_backend_pid()")[0].as<int>();
  struct Cost {
    double cpu_ms = 0;
    double wal_bytes = 0;
  };
  auto lsn = [&] {
    return pqxx::nontransaction(conn)
        .exec1("SELECT pg_current_wal_lsn()::text")[0]
        .as<std::string>();
  };
  // CPU seconds and WAL bytes of `work` on this session's backend.
  auto measure = [&](const std::function<void()>& work) {
    const std::string lsn_before = lsn();
    const double before = ProcessCpuSeconds(backend);
    work();
    const double after = ProcessCpuSeconds(backend);
    Cost cost;
    cost.cpu_ms = (after - before) * 1000.0;
    cost.wal_bytes = pqxx::nontransaction(conn)
                         .exec1(absl::StrCat("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '",
                                             lsn_before, "')::float8"))[0]
                         .as<double>();
    return cost;
  };
  // Iteration `first` + 1 .. `first` + `iterations` of a part in a DO loop.
  auto run = [&](const std::string& body, int first, int iterations) {
    const std::string sql = absl::StrCat(
        "DO $anatomy$ DECLARE v_org uuid := '", org_, "'; v_site uuid := '", site,
        "'; v_psite uuid := '", parts_site, "'; v_full uuid := '", full_site,
        "'; v_ids uuid[] := ARRAY(SELECT id FROM devices WHERE site_id = '", parts_site,
        "' ORDER BY id); v_batch uuid[]; v_d uuid; v_start uuid; BEGIN FOR i IN ", first + 1, "..",
        first + iterations, " LOOP v_start := gen_random_uuid(); ", body,
        " COMMIT; END LOOP; END $anatomy$");
    return measure([&] { pqxx::nontransaction(conn).exec(sql); });
  };
  const std::string candidate =
      "SELECT d.id INTO v_d FROM devices d WHERE d.id = v_ids[i] AND d.site_id = v_psite "
      "AND d.org_id = v_org AND d.process_state = 'normal' AND d.decommissioned_at IS NULL ";
  const std::string probes =
      "AND (SELECT 1 FROM service_bindings b WHERE b.device_id = d.id AND b.ended_at IS NULL "
      "LIMIT 1) IS NULL AND (SELECT 1 FROM reservations h WHERE h.device_id = d.id AND "
      "h.state = 'held' LIMIT 1) IS NULL ";
  auto hold = [&](const std::string& key, const std::string& device, const std::string& reason) {
    return absl::StrCat(
        "INSERT INTO reservations AS r (org_id, idempotency_key, device_id, state, "
        "criteria_site_id, criteria_vendor, criteria_model, criteria_hardware_profile, "
        "selection_reason, created_by, expires_at) VALUES (v_org, '",
        key, "' || i, ", device, ", 'held', v_psite, '', '', '', ", reason,
        ", 'bench', now() + interval '15 minutes') ON CONFLICT (device_id) WHERE state = "
        "'held' DO NOTHING;");
  };
  const std::string json_reason =
      "jsonb_build_object('criteria', jsonb_build_object('site_id', v_psite::text, 'vendor', "
      "'', 'model', '', 'hardware_profile', ''), 'device', jsonb_build_object('id', "
      "v_ids[i]::text, 'site_id', v_psite::text, 'vendor', 'Dell', 'model', 'R650', "
      "'hardware_profile', '', 'process_state', 'normal', 'bound', false, 'held', false, "
      "'decommissioned', false), 'eligibility', 'eligible', 'candidates_examined', 1, "
      "'lost_races', 0, 'rows_visited', 16, 'walk_start', v_start::text, "
      "'chosen_at', now())";
  struct Part {
    const char* name;
    std::string body;  // a DO loop's body, or empty for a statement part
    std::function<void(int first, int iterations)> statements = nullptr;
  };
  // A part sent as statements from this client, one round trip each: `one(tx, i)` for
  // iteration i, autocommit, prepared as on the service's connections.
  auto each_statement = [&](std::function<void(pqxx::nontransaction&, int)> one) {
    return [&conn, one](int first, int iterations) {
      PreparedStatementScope prepared(true);
      for (int i = first; i < first + iterations; ++i) {
        pqxx::nontransaction tx(conn);
        one(tx, i);
      }
    };
  };
  // The floor's INSERT; the service's Reserve query; the same function without the service's
  // outer query (what that query adds to the round trip).
  const auto floor_statements = each_statement([&](pqxx::nontransaction& tx, int) {
    ExecCached(tx, "INSERT INTO bench_echo_insert (org_id, payload) VALUES ($1::uuid, $2)", org_,
               "anatomy");
  });
  reservation::Criteria criteria;
  criteria.site_id = site;
  const auto reserve_statements = each_statement([&](pqxx::nontransaction& tx, int i) {
    reservation::ReserveInDatabase(
        tx, org_, absl::StrCat("anatomy-statement-", i), criteria, reservation::RandomWalkStart(),
        900, "bench", reservation::WalkLimits{25, 5, 1024}, 20, absl::InfiniteFuture());
  });
  const auto function_statements = each_statement([&](pqxx::nontransaction& tx, int i) {
    ExecCached(tx,
               "SELECT outcome FROM dcl_reserve_call($1::uuid, $2, $3::uuid, '', '', '', "
               "$4::uuid, 900, 'bench', 25, 5, 1024, NULL, 20)",
               org_, absl::StrCat("anatomy-function-", i), site, reservation::RandomWalkStart());
  });
  const std::vector<Part> parts = {
      {"loop and commit, no write", "PERFORM 1;"},
      {"floor: one-row INSERT (bench_echo_insert)",
       "INSERT INTO bench_echo_insert (org_id, payload) VALUES (v_org, 'anatomy');"},
      {"key: advisory lock, key lookup, site check",
       "PERFORM pg_advisory_xact_lock(hashtext(v_org::text), hashtext('anatomy-key-' || i)); "
       "PERFORM 1 FROM reservations r WHERE r.org_id = v_org AND r.idempotency_key = "
       "'anatomy-key-' || i; PERFORM 1 FROM sites s WHERE s.id = v_site AND s.org_id = v_org;"},
      {"walk: the next 16 device ids",
       "SELECT array_agg(w.id ORDER BY w.id) INTO v_batch FROM (SELECT d.id FROM devices d "
       "WHERE (d.site_id, d.id) > (v_site, v_start) AND (d.site_id, d.id) <= "
       "(v_site, 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid) ORDER BY d.site_id, d.id LIMIT "
       "16) w;"},
      {"candidate: row lock with the two probes",
       absl::StrCat(candidate, probes, "FOR NO KEY UPDATE OF d SKIP LOCKED;")},
      {"candidate: row lock without the probes",
       absl::StrCat(candidate, "FOR NO KEY UPDATE OF d SKIP LOCKED;")},
      {"hold: INSERT into reservations, JSON reason",
       hold("anatomy-json-", "v_ids[i]", json_reason)},
      {"hold: INSERT into reservations, empty reason",
       hold("anatomy-bare-", absl::StrCat("v_ids[", n, " + i]"), "'{}'::jsonb")},
      {"dcl_reserve alone (0031, no wrapper)",
       "PERFORM * FROM dcl_reserve(v_org, 'anatomy-bare-call-' || i, v_site, '', '', '', "
       "v_start, 900, 'bench', 25, 5, 1024);"},
      {"dcl_reserve_within_deadline (0030)",
       "PERFORM * FROM dcl_reserve_within_deadline(v_org, 'anatomy-deadline-call-' || i, "
       "v_site, '', '', '', v_start, 900, 'bench', 25, 5, 1024, NULL);"},
      {"the whole decision: dcl_reserve_call",
       absl::StrCat("PERFORM * FROM dcl_reserve_call(v_org, 'anatomy-call-' || i, v_site, '', "
                    "'', '', v_start, 900, 'bench', 25, 5, 1024, NULL, 20);")},
      {"refusal on a full site of 10: dcl_reserve",
       "PERFORM * FROM dcl_reserve(v_org, 'anatomy-refused-' || i, v_full, '', '', '', "
       "v_start, 900, 'bench', 25, 5, 1024);"},
      {"refusal's explanation: dcl_exclusion_summary",
       "PERFORM * FROM dcl_exclusion_summary(v_org, v_full, 20);"},
      {"refusal, the whole decision: dcl_reserve_call",
       "PERFORM * FROM dcl_reserve_call(v_org, 'anatomy-refused-call-' || i, v_full, '', '', "
       "'', v_start, 900, 'bench', 25, 5, 1024, NULL, 20);"},
      {"floor as statements: one round trip each", "", floor_statements},
      {"decision as statements: the service's query", "", reserve_statements},
      {"decision as statements: the function alone", "", function_statements},
  };
  constexpr int kRounds = 3;
  std::printf(
      "\n== anatomy of one hold: each part %d times in one session, a commit after each (a DO "
      "loop: no network, no parse, no protocol; or statements from this client), the parts "
      "taking turns in %d rounds ==\n",
      n, kRounds);
  // Every iteration draws a walk start (gen_random_uuid), the loop's part included. The first
  // DO of a session and the first statements pay for caches, PL/pgSQL and plans: warmed once,
  // not measured.
  run(parts[0].body, 0, 100);
  floor_statements(0, 100);
  reserve_statements(-100, 100);
  function_statements(-100, 100);
  CancelHolds(site);
  std::vector<Cost> costs(parts.size());
  for (int round = 0; round < kRounds; ++round) {
    const int first = round * n / kRounds;
    const int iterations = (round + 1) * n / kRounds - first;
    for (size_t p = 0; p < parts.size(); ++p) {
      const Cost cost = parts[p].statements
                            ? measure([&] { parts[p].statements(first, iterations); })
                            : run(parts[p].body, first, iterations);
      costs[p].cpu_ms += cost.cpu_ms;
      costs[p].wal_bytes += cost.wal_bytes;
      CancelHolds(site);  // each decision part finds the site as free as the first did
    }
  }
  std::printf("%-46s %10s %12s %10s\n", "part", "CPU ms", "net of loop", "WAL bytes");
  const double loop_ms = costs[0].cpu_ms / n;
  std::map<std::string, double> per_call;
  for (size_t p = 0; p < parts.size(); ++p) {
    const double cpu_ms = costs[p].cpu_ms / n;
    per_call[parts[p].name] = cpu_ms;
    std::printf("%-46s %10.3f %12.3f %10.0f\n", parts[p].name, cpu_ms, cpu_ms - loop_ms,
                costs[p].wal_bytes / n);
  }
  one_client_.decision_beyond_insert_ms = per_call.at("the whole decision: dcl_reserve_call") -
                                          per_call.at("floor: one-row INSERT (bench_echo_insert)");
  // What a statement costs beyond its SQL (protocol, parse of the bind, portal, snapshot,
  // the answer's rows): the statements' CPU minus the SQL's in the loop (net of the loop).
  auto round_trip = [&](const char* statements, const char* in_loop) {
    return per_call.at(statements) - (per_call.at(in_loop) - loop_ms);
  };
  const double floor_round_trip = round_trip("floor as statements: one round trip each",
                                             "floor: one-row INSERT (bench_echo_insert)");
  const double decision_round_trip = round_trip("decision as statements: the service's query",
                                                "the whole decision: dcl_reserve_call");
  std::printf(
      "round trip beyond the SQL (statements minus the loop's SQL): floor %.3f ms, decision "
      "%.3f ms (the function alone %.3f ms)\n",
      floor_round_trip, decision_round_trip,
      round_trip("decision as statements: the function alone",
                 "the whole decision: dcl_reserve_call"));
  one_client_.round_trip_beyond_floor_ms = decision_round_trip - floor_round_trip;
  std::fflush(stdout);
  CancelHolds(site);
  CancelHolds(parts_site);
  CancelHolds(full_site);
}

}  // namespace dcl::bench::reservation_bench
