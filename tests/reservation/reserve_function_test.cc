// dcl_reserve (schema/migrations/0020_reserve_function.sql) against a real PostgreSQL: its SQL
// narrowing holds exactly the devices Classify() calls eligible, for every combination of facts
// (the eligibility rule has two implementations; this test ties them), and the walk's statement,
// read from the installed function, plans as an ordered walk of devices_site_id_order_idx with
// statistics that are stale or skewed.
#include <algorithm>
#include <catch2/catch.hpp>
#include <pqxx/pqxx>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "services/reservation/eligibility.h"
#include "services/reservation/reservation_store.h"
#include "tests/support/fixtures.h"
#include "tests/support/test_db.h"

namespace dcl::reservation {
namespace {

using testing::TestDatabase;

constexpr char kWalkFromTheStart[] = "00000000-0000-0000-0000-000000000000";

// Every process state the schema allows, read from its CHECK constraint, so a state added
// later is covered without editing this test.
std::vector<std::string> ProcessStates(const TestDatabase& db) {
  const std::string check = db.Scalar(
      "SELECT pg_get_constraintdef(oid) FROM pg_constraint "
      "WHERE conname = 'devices_process_state_valid'");
  std::vector<std::string> states;
  const std::regex literal("'([^']*)'::text");
  for (auto it = std::sregex_iterator(check.begin(), check.end(), literal);
       it != std::sregex_iterator(); ++it) {
    states.push_back((*it)[1].str());
  }
  return states;
}

// One axis of a text criterion: what the request asks and what the device is.
struct Match {
  std::string asked;
  std::string actual;
};
const Match kMatches[] = {{"", "X1"}, {"X1", "X1"}, {"X1", "X2"}};

TEST_CASE(
    "dcl_reserve holds a device exactly when Classify calls it eligible, for every "
    "combination of facts") {
  TestDatabase db;
  const std::string org = testing::CreateOrg(db, "acme");
  const std::vector<std::string> states = ProcessStates(db);
  REQUIRE(states.size() >= 4);
  auto conn = db.Connect();
  // Set-up on the same connection as the calls (one connection per statement is slow).
  auto scalar = [&](const std::string& sql) {
    pqxx::nontransaction tx(*conn);
    return tx.exec1(sql)[0].as<std::string>();
  };
  auto site_named = [&](const std::string& name) {
    return scalar(absl::StrCat("INSERT INTO sites (org_id, name) VALUES ('", org, "', '", name,
                               "') RETURNING id"));
  };

  int combinations = 0, eligible = 0;
  for (bool same_site : {true, false}) {
    for (const Match& vendor : kMatches) {
      for (const Match& model : kMatches) {
        for (const Match& profile : kMatches) {
          for (const std::string& state : states) {
            for (bool bound : {false, true}) {
              for (bool held : {false, true}) {
                for (bool decommissioned : {false, true}) {
                  const int n = ++combinations;
                  // A site of its own per combination: the device is the only one the walk can see
                  // (or, for a wrong site, the asked site is empty and the device stands next
                  // door).
                  const std::string asked_site = site_named(absl::StrCat("s", n));
                  const std::string device_site =
                      same_site ? asked_site : site_named(absl::StrCat("o", n));
                  const std::string device = scalar(absl::StrCat(
                      "INSERT INTO devices (org_id, site_id, vendor, model, hardware_profile, "
                      "process_state, height_units, depth_class) VALUES ('",
                      org, "', '", device_site, "', '", vendor.actual, "', '", model.actual, "', '",
                      profile.actual, "', '", state, "', 1, 'full') RETURNING id"));
                  if (decommissioned) {
                    scalar(
                        absl::StrCat("UPDATE devices SET decommissioned_at = now(), "
                                     "decommissioned_by = 'test' WHERE id = '",
                                     device, "' RETURNING id"));
                  }
                  if (bound) {
                    const std::string service = scalar(
                        absl::StrCat("INSERT INTO services (org_id, kind, customer) VALUES ('", org,
                                     "', 'dedicated', 'c1') RETURNING id"));
                    scalar(absl::StrCat(
                        "INSERT INTO service_bindings (org_id, service_id, device_id) VALUES ('",
                        org, "', '", service, "', '", device, "') RETURNING id"));
                  }
                  if (held) {
                    scalar(absl::StrCat(
                        "INSERT INTO reservations (org_id, idempotency_key, device_id, "
                        "criteria_site_id, selection_reason, expires_at) VALUES ('",
                        org, "', 'other-", n, "', '", device, "', '", device_site,
                        "', '{}', now() + interval '15 minutes') RETURNING id"));
                  }

                  const Criteria criteria{asked_site, vendor.asked, model.asked, profile.asked};
                  DeviceFacts facts;
                  facts.id = device;
                  facts.site_id = device_site;
                  facts.vendor = vendor.actual;
                  facts.model = model.actual;
                  facts.hardware_profile = profile.actual;
                  facts.process_state = state;
                  facts.bound = bound;
                  facts.held = held;
                  facts.decommissioned = decommissioned;
                  const bool classify_eligible = Classify(criteria, facts) == Exclusion::kEligible;

                  const ReserveOutcome outcome = [&] {
                    pqxx::nontransaction tx(*conn);
                    return ReserveInDatabase(tx, org, absl::StrCat("order-", n), criteria,
                                             kWalkFromTheStart, 900, "test", WalkLimits{}, 5,
                                             absl::InfiniteFuture());
                  }();
                  INFO("combination "
                       << n << ": same_site=" << same_site << " vendor=" << vendor.asked << "/"
                       << vendor.actual << " model=" << model.asked << "/" << model.actual
                       << " profile=" << profile.asked << "/" << profile.actual
                       << " state=" << state << " bound=" << bound << " held=" << held
                       << " decommissioned=" << decommissioned
                       << " classify=" << ExclusionName(Classify(criteria, facts)));
                  const bool function_held = outcome.kind == ReserveOutcome::Kind::kHeld;
                  CHECK(function_held == classify_eligible);
                  // The refusal's explanation comes with the refusal, never with a hold.
                  CHECK(outcome.exclusions.has_value() == !function_held);
                  if (function_held) {
                    ++eligible;
                    REQUIRE(outcome.reservation.has_value());
                    CHECK(outcome.reservation->proto.device_id() == device);
                    // The frozen reason carries the facts as read under the lock.
                    CHECK(scalar(absl::StrCat(
                              "SELECT selection_reason->'device'->>'process_state' || '/' || "
                              "(selection_reason->'device'->>'vendor') || '/' || "
                              "(selection_reason->>'eligibility') FROM reservations WHERE id = '",
                              outcome.reservation->proto.id(), "'")) ==
                          absl::StrCat(state, "/", vendor.actual, "/eligible"));
                  } else {
                    CHECK(outcome.kind == ReserveOutcome::Kind::kNoCandidate);
                    REQUIRE(outcome.exclusions.has_value());
                    // ... and says what Classify says of the device: listed with its reason
                    // at the asked site, counted as wrong_site (never listed) next door.
                    const Exclusion reason = Classify(criteria, facts);
                    CHECK(outcome.exclusions->eligible == 0);
                    CHECK(outcome.exclusions->counts[static_cast<size_t>(reason)] >= 1);
                    if (same_site) {
                      CHECK(outcome.exclusions->counts[static_cast<size_t>(reason)] == 1);
                      CHECK(outcome.exclusions->listed ==
                            std::vector<std::pair<std::string, Exclusion>>{{device, reason}});
                    } else {
                      CHECK(outcome.exclusions->listed.empty());
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  // Criteria: 3 ways each of 3 texts; both kinds of site; every state; bound; held;
  // decommissioned.
  CHECK(combinations == 2 * 27 * static_cast<int>(states.size()) * 8);
  // Eligible: same site, each text asked-and-equal or not asked (2^3), normal, free, in service.
  CHECK(eligible == 8);
}

// `n` devices of one kind at `site` of `org`.
void SeedDevices(const TestDatabase& db, const std::string& org, const std::string& site, int n) {
  db.Exec(absl::StrCat(
      "INSERT INTO devices (org_id, site_id, vendor, model, height_units, depth_class) SELECT '",
      org, "', '", site, "', 'Dell', 'R650', 1, 'full' FROM generate_series(1, ", n, ")"));
}

// Skewed and stale statistics: a site of 20,000 in one organization, then `analyze`, then a site
// of 3,000 in another that the statistics do not know (a customer's first import).
struct SkewedSites {
  SkewedSites(const TestDatabase& db, const std::string& analyze)
      : big_org(testing::CreateOrg(db, "big")),
        big_site(testing::CreateSite(db, big_org, "B1")),
        new_org(testing::CreateOrg(db, "acme")),
        new_site(testing::CreateSite(db, new_org, "N1")) {
    SeedDevices(db, big_org, big_site, 20000);
    db.Exec(analyze);
    SeedDevices(db, new_org, new_site, 3000);
  }
  const std::string big_org, big_site, new_org, new_site;
};

// The walk's statements as installed, parameters in place of the function's variables.
std::vector<std::string> WalkStatements(const TestDatabase& db) {
  return testing::FunctionStatements(
      db, "dcl_reserve",
      R"(SELECT d\.id FROM devices d\s+WHERE \(d\.site_id, d\.id\)[\s\S]*?LIMIT 16)",
      {{"p_site", "$1::uuid"}, {"v_lo", "$2::uuid"}, {"v_hi", "$3::uuid"}});
}

TEST_CASE("the walk's statement is an ordered walk of (site_id, id) whatever the statistics say") {
  TestDatabase db;
  const SkewedSites sites(db, "ANALYZE devices");
  const std::string& big_site = sites.big_site;
  const std::string& new_site = sites.new_site;

  const std::vector<std::string> statements = WalkStatements(db);
  REQUIRE(statements.size() == 2);
  auto conn = db.Connect();
  for (const char* mode : {"force_custom_plan", "force_generic_plan"}) {
    for (const std::string& site : {new_site, big_site}) {
      for (const std::string& statement : statements) {
        pqxx::work tx(*conn);
        tx.exec(absl::StrCat("SET LOCAL plan_cache_mode = ", mode));
        tx.exec("DEALLOCATE ALL");  // prepared statements outlive a rolled-back transaction
        tx.exec(absl::StrCat("PREPARE walk(uuid, uuid, uuid) AS ", statement));
        std::string plan;
        for (const auto& row : tx.exec(absl::StrCat(
                 "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) EXECUTE walk('", site,
                 "', '80000000-0000-0000-0000-000000000000', "
                 "'ffffffff-ffff-ffff-ffff-ffffffffffff')"))) {
          plan += row[0].as<std::string>() + "\n";
        }
        INFO(mode << " " << statement << "\n" << plan);
        CHECK(plan.find("Scan using devices_site_id_order_idx") != std::string::npos);
        CHECK(plan.find("Sort") == std::string::npos);
        CHECK(plan.find("Bitmap") == std::string::npos);
        // The index node stops after the 16 rows the LIMIT asks for.
        CHECK(std::regex_search(plan, std::regex(R"(devices_site_id_order_idx[^\n]*rows=16 )")));
        tx.abort();
      }
    }
  }
}

// The candidate step as installed: the function's variables become parameters.
std::string CandidateStatement(const TestDatabase& db) {
  const std::vector<std::string> found =
      testing::FunctionStatements(db, "dcl_reserve", R"(SELECT candidate\.id[\s\S]*?LIMIT 1(?=;))",
                                  {{" INTO v_device", ""},
                                   {"v_batch", "$1::uuid[]"},
                                   {"p_site", "$2::uuid"},
                                   {"p_org", "$3::uuid"},
                                   {"p_vendor", "$4::text"},
                                   {"p_model", "$5::text"},
                                   {"p_profile", "$6::text"}});
  return found.empty() ? "" : found[0];
}

// The ids of `batch` (a query of device ids) as an array literal, in id order, as the walk
// hands them to the candidate step.
std::string BatchArray(const TestDatabase& db, const std::string& batch) {
  return db.Scalar(absl::StrCat("SELECT array_agg(id ORDER BY id)::text FROM (", batch, ") b"));
}

// The plan of the candidate step for `batch_array` at `site` of `org`, executed (ANALYZE) with
// `options`, in a transaction rolled back after; the step's answer into `chosen`.
std::string CandidatePlan(pqxx::connection& conn, const std::string& statement, const char* mode,
                          const std::string& batch_array, const std::string& site,
                          const std::string& org, const std::string& options,
                          std::string* chosen = nullptr) {
  pqxx::work tx(conn);
  tx.exec(absl::StrCat("SET LOCAL plan_cache_mode = ", mode));
  tx.exec("SET LOCAL enable_seqscan = off");  // as dcl_reserve runs it (migration 0031)
  tx.exec("DEALLOCATE ALL");
  tx.exec(absl::StrCat("PREPARE candidate(uuid[], uuid, uuid, text, text, text) AS ", statement));
  const std::string execute =
      absl::StrCat("EXECUTE candidate('", batch_array, "', '", site, "', '", org, "', '', '', '')");
  std::string plan;
  for (const auto& row : tx.exec(absl::StrCat("EXPLAIN (", options, ") ", execute))) {
    plan += row[0].as<std::string>() + "\n";
  }
  if (chosen != nullptr) {
    const pqxx::result rows = tx.exec(execute);
    *chosen = rows.empty() ? "" : rows[0][0].as<std::string>();
  }
  tx.abort();
  return plan;
}

// Migration 0037. The candidate step tries the batch in the walk's order and stops at the first
// device it can lock: a hold costs the lookups and probes of the devices up to it, not the
// whole batch's and a sort (before: `d.id = ANY (v_batch)`, every row of the batch fetched and
// probed, then sorted). With statistics that are stale or skewed and in both plan modes, as the
// walk's test above.
TEST_CASE("the candidate step tries the batch in walk order and stops at the first it can hold") {
  TestDatabase db;
  const SkewedSites sites(db, "ANALYZE");  // reservations too: empty by its statistics
  const std::string statement = CandidateStatement(db);
  REQUIRE(!statement.empty());

  auto conn = db.Connect();
  for (const std::string& site : {sites.new_site, sites.big_site}) {
    const std::string& site_org = site == sites.new_site ? sites.new_org : sites.big_org;
    // A batch as the walk reads it: the site's 16 ids after a walk start, the first three held.
    const std::string batch =
        absl::StrCat("SELECT id FROM devices WHERE site_id = '", site,
                     "' AND id > '80000000-0000-0000-0000-000000000000' ORDER BY id LIMIT 16");
    const std::string fourth =
        db.Scalar(absl::StrCat("SELECT id FROM (", batch, ") b ORDER BY id OFFSET 3 LIMIT 1"));
    db.Exec(absl::StrCat(
        "INSERT INTO reservations (org_id, idempotency_key, device_id, criteria_site_id, "
        "selection_reason, expires_at) SELECT org_id, 'k-' || id, id, site_id, '{}', "
        "now() + interval '15 minutes' FROM devices WHERE id IN (SELECT id FROM (",
        batch, ") b ORDER BY id LIMIT 3)"));
    for (const char* mode : {"force_custom_plan", "force_generic_plan"}) {
      std::string chosen;
      const std::string plan =
          CandidatePlan(*conn, statement, mode, BatchArray(db, batch), site, site_org,
                        "ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF", &chosen);
      INFO(mode << " in site " << site << "\n" << statement << "\n" << plan);
      CHECK(plan.find("Sort") == std::string::npos);
      CHECK(plan.find("Seq Scan") == std::string::npos);
      CHECK(plan.find("Bitmap") == std::string::npos);
      // The batch's first four in order, each looked up; the fourth is locked and ends it.
      CHECK(std::regex_search(plan, std::regex(R"(Nested Loop \(actual rows=1 loops=1\))")));
      CHECK(std::regex_search(
          plan, std::regex(R"(Function Scan on unnest batch \(actual rows=4 loops=1\))")));
      // Each an exact lookup: whichever index answers it, its condition is the batch's id.
      CHECK(std::regex_search(
          plan, std::regex(R"(Index Scan using \w+ on devices d \(actual rows=\d+ loops=4\))")));
      CHECK(std::regex_search(plan, std::regex(R"(Index Cond: [^\n]*\(id = batch\.id\))")));
      CHECK(chosen == fourth);
    }
  }
}

// A batch with no machine to hold (a sold-out stretch of the site, a refusal) costs the same
// wherever it lies in the site. Red for the first version of migration 0037, which stated the
// batch as its range on (site_id, id): the scan did not stop at the batch's last device and read
// on to the site's end (that statement run through this test by hand: 201, 126 and 50 buffers).
TEST_CASE("the candidate step reads only its batch wherever the batch lies in the site") {
  TestDatabase db;
  const std::string org = testing::CreateOrg(db, "acme");
  const std::string site = testing::CreateSite(db, org, "S1");
  SeedDevices(db, org, site, 20000);
  db.Exec("ANALYZE");
  const std::string statement = CandidateStatement(db);
  REQUIRE(!statement.empty());

  auto conn = db.Connect();
  const std::regex buffers(R"(Buffers: shared hit=(\d+)(?: read=(\d+))?)");
  for (const char* mode : {"force_custom_plan", "force_generic_plan"}) {
    std::vector<int> read;  // buffers per batch: the site's first 16, 16 from its middle, its last
    for (const int offset : {0, 10000, 19984}) {
      const std::string batch =
          absl::StrCat("SELECT id FROM devices ORDER BY id OFFSET ", offset, " LIMIT 16");
      db.Exec(absl::StrCat(
          "INSERT INTO reservations (org_id, idempotency_key, device_id, criteria_site_id, "
          "selection_reason, expires_at) SELECT org_id, 'k-' || id, id, site_id, '{}', "
          "now() + interval '15 minutes' FROM devices WHERE id IN (",
          batch, ") ON CONFLICT DO NOTHING"));
      const std::string plan =
          CandidatePlan(*conn, statement, mode, BatchArray(db, batch), site, org,
                        "ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF");
      INFO(mode << ", the batch at " << offset << "\n" << plan);
      CHECK(std::regex_search(plan,
                              std::regex(R"(Function Scan on unnest batch \(actual rows=16 )")));
      std::smatch match;
      REQUIRE(std::regex_search(plan, match, buffers));  // the top node's: the whole statement's
      read.push_back(std::stoi(match[1].str()) +
                     (match[2].matched ? std::stoi(match[2].str()) : 0));
    }
    INFO(mode << ": buffers for the batch at the start, middle and end of the site: " << read[0]
              << ", " << read[1] << ", " << read[2]);
    // 16 lookups by id and 32 probes are about 120 buffers; the site's index alone has over 80
    // leaf pages, so a scan that reads on past the batch shows.
    CHECK(*std::max_element(read.begin(), read.end()) -
              *std::min_element(read.begin(), read.end()) <=
          8);
  }
}

// "Is this device held?" reads the arbiter's index by device. The function plans its
// statements once per connection (generic plans), so the plan made at a connection's first
// Reserve stays while the table grows; with statistics from before the first hold (as a fresh
// installation has them until autovacuum's first ANALYZE of reservations) and a few hundred
// holds, that plan probed reservations_held_expiry_idx, the sweeper's index of held rows by
// deadline, and filtered every held row for every candidate: each Reserve cost more than the
// one before (auto_explain in the benchmark: 1,700 buffers and 2 ms for one step with 900
// holds). Migration 0025 keeps that index to statements that bound the deadline.
TEST_CASE("the candidate step probes holds by device whatever the statistics say") {
  TestDatabase db;
  const std::string org = testing::CreateOrg(db, "acme");
  const std::string site = testing::CreateSite(db, org, "S1");
  db.Exec(absl::StrCat(
      "INSERT INTO devices (org_id, site_id, vendor, model, height_units, depth_class) "
      "SELECT '",
      org, "', '", site,
      "', 'Dell', 'R650', 1, 'full' "
      "FROM generate_series(1, 4000)"));
  db.Exec("ANALYZE");  // reservations is empty by its statistics from here on
  const std::string statement = CandidateStatement(db);
  REQUIRE(!statement.empty());
  const std::string batch = db.Scalar(
      "SELECT array_agg(id ORDER BY id)::text FROM (SELECT id FROM devices ORDER BY id DESC "
      "LIMIT 16) d");

  auto conn = db.Connect();
  int held = 0;
  for (const int total : {300, 600, 1600}) {
    db.Exec(absl::StrCat(
        "INSERT INTO reservations (org_id, idempotency_key, device_id, criteria_site_id, "
        "selection_reason, expires_at) "
        "SELECT d.org_id, 'k-' || d.id, d.id, d.site_id, '{}', now() + interval '15 minutes' "
        "FROM devices d WHERE NOT EXISTS (SELECT 1 FROM reservations r WHERE r.device_id = d.id) "
        "ORDER BY d.id LIMIT ",
        total - held));
    held = total;
    pqxx::work tx(*conn);
    tx.exec("SET LOCAL plan_cache_mode = force_generic_plan");
    tx.exec("DEALLOCATE ALL");
    tx.exec(absl::StrCat("PREPARE candidate(uuid[], uuid, uuid, text, text, text) AS ", statement));
    std::string plan;
    for (const auto& row : tx.exec(absl::StrCat("EXPLAIN EXECUTE candidate('", batch, "', '", site,
                                                "', '", org, "', '', '', '')"))) {
      plan += row[0].as<std::string>() + "\n";
    }
    INFO(held << " held, statistics from before the first\n" << statement << "\n" << plan);
    CHECK(plan.find("reservations_held_expiry_idx") == std::string::npos);
    CHECK(plan.find("Seq Scan on reservations") == std::string::npos);
    CHECK(plan.find("Index Only Scan using reservations_device_held_uq") != std::string::npos);
    tx.abort();
  }
}

// The probe above has exactly one index to choose: no other index of reservations starts with
// device_id (migration 0027 dropped reservations_device_idx, which held every reservation ever
// made and would have answered "is this device held?" by reading the device's whole history).
// A migration that adds such an index again must also show that the probe keeps the arbiter.
TEST_CASE("the arbiter is the only index of reservations that starts with device_id") {
  TestDatabase db;
  const std::string indexes = db.Scalar(
      "SELECT string_agg(c.relname, ',' ORDER BY c.relname) FROM pg_index i "
      "JOIN pg_class c ON c.oid = i.indexrelid "
      "JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0] "
      "WHERE i.indrelid = 'reservations'::regclass AND a.attname = 'device_id'");
  CHECK(indexes == kDeviceHeldIndex);
}

}  // namespace
}  // namespace dcl::reservation
