// Lookups by key or id are answered by their unique index whatever the statistics say, and the
// listings still reach their listing index (migration 0028).
//
// A table autovacuum has not analysed yet (every table of a fresh installation) is taken for ten
// pages of rows and "org_id = $1" for 1 row in 200: every index whose first column is org_id
// then promises one row, as the unique index does, and before migration 0028 the planner took the
// listing index (org_id, created_at, id) or another key's index for a lookup by key or id, reading
// the organization's rows on every call. Generic plans are made once per connection, so such a
// plan stayed until the table's first ANALYZE (dcl_reserve's key lookup: 1.28 against 0.76 ms of
// PostgreSQL CPU per Reserve in the benchmark).
#include <catch2/catch.hpp>
#include <pqxx/pqxx>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "services/common/page_token.h"
#include "tests/support/fixtures.h"
#include "tests/support/test_db.h"

namespace dcl {
namespace {

using testing::TestDatabase;

// The generic plan (as a prepared statement on a service connection has it after its fifth
// call, and as dcl_reserve's statements have it from the first) of `statement` with `types`,
// under `settings` ("name=value", as a function's SET clauses are kept in pg_proc.proconfig).
std::string GenericPlan(pqxx::connection& conn, const std::string& statement,
                        const std::string& types, const std::string& arguments,
                        const std::vector<std::string>& settings = {}) {
  pqxx::work tx(conn);
  tx.exec("SET LOCAL plan_cache_mode = force_generic_plan");
  for (const std::string& setting : settings) {
    const size_t eq = setting.find('=');
    tx.exec(absl::StrCat("SELECT set_config(", tx.quote(setting.substr(0, eq)), ", ",
                         tx.quote(setting.substr(eq + 1)), ", true)"));
  }
  tx.exec("DEALLOCATE ALL");
  tx.exec(absl::StrCat("PREPARE lookup(", types, ") AS ", statement));
  std::string plan;
  for (const auto& row : tx.exec(absl::StrCat("EXPLAIN EXECUTE lookup(", arguments, ")"))) {
    plan += row[0].as<std::string>() + "\n";
  }
  tx.abort();
  return plan;
}

// The indexes a plan scans, in order.
std::vector<std::string> ScannedIndexes(const std::string& plan) {
  std::vector<std::string> names;
  const std::regex scan(R"(Scan using (\w+) on)");
  for (auto it = std::sregex_iterator(plan.begin(), plan.end(), scan); it != std::sregex_iterator();
       ++it) {
    names.push_back((*it)[1].str());
  }
  return names;
}

std::string FirstColumn(const TestDatabase& db, const std::string& index) {
  return db.Scalar(absl::StrCat(
      "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
      "AND a.attnum = i.indkey[0] WHERE i.indexrelid = '",
      index, "'::regclass"));
}

// dcl_reserve's lookup of the order's key, as installed, its variables made parameters.
std::string ReserveKeyLookup(const TestDatabase& db) {
  const std::vector<std::string> found = testing::FunctionStatements(
      db, "dcl_reserve", R"(SELECT \* INTO reservation FROM reservations r\s+WHERE [^;]*)",
      {{" INTO reservation", ""}, {"p_org", "$1::uuid"}, {"p_key", "$2::text"}});
  return found.empty() ? "" : found[0];
}

TEST_CASE("lookups by key or id read their unique index in a never-analysed database") {
  TestDatabase db;
  const std::string org = testing::CreateOrg(db, "acme");
  const std::string site = testing::CreateSite(db, org, "S1");
  for (const char* table : {"reservations", "devices", "moves", "sites", "racks"}) {
    INFO(table);
    // The premise: no statistics yet (reltuples -1), as on a fresh installation.
    REQUIRE(db.Scalar(absl::StrCat("SELECT reltuples < 0 FROM pg_class WHERE oid = '", table,
                                   "'::regclass")) == "t");
  }
  const std::string key_lookup = ReserveKeyLookup(db);
  REQUIRE(!key_lookup.empty());

  struct Lookup {
    std::string statement, types, arguments;
    std::string key_column;  // the first column of the index that must answer it
  };
  const std::string ids = absl::StrCat("'", org, "', '", site, "'");  // any two uuids
  const std::vector<Lookup> lookups = {
      {key_lookup, "uuid, text", absl::StrCat("'", org, "', 'order-1'"), "idempotency_key"},
      {"SELECT * FROM reservations r WHERE r.org_id = $1 AND r.id = $2", "uuid, uuid", ids, "id"},
      {"SELECT 1 FROM devices WHERE id = $2 AND org_id = $1", "uuid, uuid", ids, "id"},
      {"SELECT * FROM devices d WHERE d.org_id = $1 AND d.id = $2", "uuid, uuid", ids, "id"},
      {"SELECT * FROM moves m WHERE m.org_id = $1 AND m.id = $2", "uuid, uuid", ids, "id"},
      {"SELECT * FROM sites s WHERE s.org_id = $1 AND s.id = $2", "uuid, uuid", ids, "id"},
      {"SELECT * FROM sites s WHERE s.org_id = $1 AND s.name = $2", "uuid, text",
       absl::StrCat("'", org, "', 'S1'"), "name"},
      {"SELECT * FROM racks r WHERE r.org_id = $1 AND r.id = $2", "uuid, uuid", ids, "id"},
  };
  auto conn = db.Connect();
  for (const Lookup& lookup : lookups) {
    const std::string plan = GenericPlan(*conn, lookup.statement, lookup.types, lookup.arguments);
    INFO(lookup.statement << "\n" << plan);
    const std::vector<std::string> indexes = ScannedIndexes(plan);
    REQUIRE(indexes.size() == 1);
    CHECK(FirstColumn(db, indexes[0]) == lookup.key_column);
    CHECK(db.Scalar(absl::StrCat("SELECT indisunique FROM pg_index WHERE indexrelid = '",
                                 indexes[0], "'::regclass")) == "t");
  }
}

// The settings `function` runs its statements with (its SET clauses).
std::vector<std::string> FunctionSettings(const TestDatabase& db, const std::string& function) {
  const std::string list = db.Scalar(absl::StrCat(
      "SELECT array_to_string(proconfig, ' ') FROM pg_proc WHERE proname = '", function, "'"));
  std::vector<std::string> settings;
  for (size_t at = 0; at < list.size();) {
    const size_t end = std::min(list.find(' ', at), list.size());
    settings.push_back(list.substr(at, end - at));
    at = end + 1;
  }
  return settings;
}

// Migration 0031. A fresh installation that an ANALYZE saw empty: every lookup costs the same to
// the planner, and a plan made now stays until the next ANALYZE or VACUUM while the tables fill
// (a bulk import of bound machines).
TEST_CASE(
    "dcl_reserve and the refusal's explanation plan the same after an ANALYZE of empty "
    "tables") {
  TestDatabase db;
  const std::string org = testing::CreateOrg(db, "acme");
  const std::string site = testing::CreateSite(db, org, "S1");
  db.Exec("ANALYZE");
  REQUIRE(db.Scalar("SELECT reltuples FROM pg_class WHERE oid = 'service_bindings'::regclass") ==
          "0");

  struct Statement {
    std::string function, pattern;
    std::vector<std::pair<std::string, std::string>> parameters;
    std::string types, arguments;
    std::string index;  // the index that must answer it; "" for any
  };
  const std::string uuids = absl::StrCat("'", org, "', '", site, "'");
  const std::string walk_arguments = absl::StrCat(uuids, ", '", site, "'");
  const std::vector<Statement> statements = {
      {"dcl_reserve",
       R"(SELECT \* INTO reservation FROM reservations r\s+WHERE [^;]*)",
       {{" INTO reservation", ""}, {"p_org", "$1::uuid"}, {"p_key", "$2::text"}},
       "uuid, text",
       absl::StrCat("'", org, "', 'order-1'"),
       "reservations_org_key_uq"},
      {"dcl_reserve",
       R"(PERFORM 1 FROM sites s WHERE [^;]*)",
       {{"PERFORM 1", "SELECT 1"}, {"p_site", "$1::uuid"}, {"p_org", "$2::uuid"}},
       "uuid, uuid",
       uuids,
       ""},
      {"dcl_reserve",
       R"(SELECT array_agg\(w\.id ORDER BY w\.id\) INTO v_batch[^;]*)",
       {{" INTO v_batch", ""}, {"p_site", "$1::uuid"}, {"v_lo", "$2::uuid"}, {"v_hi", "$3::uuid"}},
       "uuid, uuid, uuid",
       walk_arguments,
       "devices_site_id_order_idx"},
      {"dcl_reserve",
       R"(SELECT candidate\.id[^;]*)",
       {{" INTO v_device", ""},
        {"v_batch", "$1::uuid[]"},
        {"p_site", "$2::uuid"},
        {"p_org", "$3::uuid"},
        {"p_vendor", "$4::text"},
        {"p_model", "$5::text"},
        {"p_profile", "$6::text"}},
       "uuid[], uuid, uuid, text, text, text",
       absl::StrCat("ARRAY['", site, "']::uuid[], ", uuids, ", '', '', ''"),
       ""},
      {"dcl_exclusion_summary",
       R"(SELECT d\.id INTO v_last FROM devices d[^;]*)",
       {{" INTO v_last", ""}, {"p_site", "$1::uuid"}, {"v_lo", "$2::uuid"}},
       "uuid, uuid",
       uuids,
       "devices_site_id_order_idx"},
      {"dcl_exclusion_summary",
       R"(SELECT true, f\.vendor[^;]*)",
       {{"p_site", "$1::uuid"},
        {"v_lo", "$2::uuid"},
        {"p_org", "$3::uuid"},
        {"p_max_listed", "$4::integer"}},
       "uuid, uuid, uuid, integer",
       absl::StrCat(uuids, ", '", org, "', 5"),
       ""},
  };
  auto conn = db.Connect();
  for (const Statement& statement : statements) {
    const std::vector<std::string> settings = FunctionSettings(db, statement.function);
    const std::vector<std::string> found = testing::FunctionStatements(
        db, statement.function, statement.pattern, statement.parameters);
    INFO(statement.function << ": " << statement.pattern << " with "
                            << absl::StrJoin(settings, " "));
    REQUIRE(!found.empty());
    for (const std::string& sql : found) {
      const std::string plan =
          GenericPlan(*conn, sql, statement.types, statement.arguments, settings);
      INFO(sql << "\n" << plan);
      CHECK(plan.find("Seq Scan") == std::string::npos);
      const std::vector<std::string> indexes = ScannedIndexes(plan);
      CHECK(!indexes.empty());
      if (!statement.index.empty()) {
        REQUIRE(!indexes.empty());
        CHECK(indexes[0] == statement.index);
      }
    }
  }
}

// Migration 0035. dcl_reserve_call (a Reserve with its refusal's explanation in one statement)
// plans its own two statements with the settings of the functions it calls, after the same
// ANALYZE of empty tables; they read those functions only, whose statements the test above
// checks.
TEST_CASE("dcl_reserve_call plans like dcl_reserve and reads no table of its own") {
  TestDatabase db;
  const std::string org = testing::CreateOrg(db, "acme");
  const std::string site = testing::CreateSite(db, org, "S1");
  db.Exec("ANALYZE");
  const std::vector<std::string> settings = FunctionSettings(db, "dcl_reserve_call");
  INFO(absl::StrJoin(settings, " "));
  CHECK(settings == FunctionSettings(db, "dcl_reserve"));
  CHECK(settings == FunctionSettings(db, "dcl_exclusion_summary"));

  struct Statement {
    std::string pattern;
    std::vector<std::pair<std::string, std::string>> parameters;
    std::string types, arguments, function_read;
  };
  const std::vector<std::pair<std::string, std::string>> reserve_parameters = {
      {" INTO v_result", ""},
      {"p_org", "$1::uuid"},
      {"p_key", "$2::text"},
      {"p_site", "$3::uuid"},
      {"p_vendor", "$4::text"},
      {"p_model", "$5::text"},
      {"p_profile", "$6::text"},
      {"p_walk_start", "$7::uuid"},
      {"p_ttl_seconds", "$8::integer"},
      {"p_actor", "$9::text"},
      {"p_max_candidates", "$10::integer"},
      {"p_max_attempts", "$11::integer"},
      {"p_max_rows", "$12::integer"},
      {"p_call_deadline", "$13::timestamptz"}};
  const std::vector<Statement> statements = {
      {R"(SELECT \* INTO v_result\s+FROM dcl_reserve_within_deadline[^;]*)", reserve_parameters,
       "uuid, text, uuid, text, text, text, uuid, integer, text, integer, integer, integer, "
       "timestamptz",
       absl::StrCat("'", org, "', 'order-1', '", site, "', '', '', '', '", site,
                    "', 900, 'test', 25, 5, 1024, NULL"),
       "dcl_reserve_within_deadline"},
      {R"(SELECT coalesce\(jsonb_agg[^;]*)",
       {{" INTO exclusions", ""},
        {"p_org", "$1::uuid"},
        {"p_site", "$2::uuid"},
        {"p_max_listed", "$3::integer"}},
       "uuid, uuid, integer",
       absl::StrCat("'", org, "', '", site, "', 5"),
       "dcl_exclusion_summary"},
  };
  auto conn = db.Connect();
  for (const Statement& statement : statements) {
    const std::vector<std::string> found = testing::FunctionStatements(
        db, "dcl_reserve_call", statement.pattern, statement.parameters);
    INFO(statement.pattern);
    REQUIRE(found.size() == 1);
    const std::string plan =
        GenericPlan(*conn, found[0], statement.types, statement.arguments, settings);
    INFO(found[0] << "\n" << plan);
    CHECK(plan.find("Function Scan on " + statement.function_read) != std::string::npos);
    CHECK(plan.find("Seq Scan") == std::string::npos);
    CHECK(ScannedIndexes(plan).empty());
  }
}

TEST_CASE("a listing reaches its listing index by stating the listing condition") {
  TestDatabase db;
  const std::string org = testing::CreateOrg(db, "acme");
  const std::string other = testing::CreateOrg(db, "other");
  for (const std::string& o : {org, other}) {
    const std::string site = testing::CreateSite(db, o, "S1");
    db.Exec(absl::StrCat(
        "INSERT INTO devices (org_id, site_id, vendor, model, height_units, depth_class) "
        "SELECT '",
        o, "', '", site, "', 'Dell', 'R650', 1, 'full' FROM generate_series(1, 5000)"));
    db.Exec(absl::StrCat(
        "INSERT INTO reservations (org_id, idempotency_key, device_id, state, criteria_site_id, "
        "selection_reason, expires_at, ended_at, end_reason, ended_by) "
        "SELECT d.org_id, 'k-' || d.id, d.id, 'cancelled', d.site_id, '{}', "
        "now() + interval '15 minutes', now(), 'cancelled', 'test' FROM devices d "
        "WHERE d.org_id = '",
        o, "'"));
  }
  db.Exec("ANALYZE");

  struct Listing {
    std::string table, alias, order, index;
  };
  const std::vector<Listing> listings = {
      {"reservations", "r", "r.created_at DESC, r.id DESC", "reservations_org_created_idx"},
      {"devices", "d", "d.created_at, d.id", "devices_org_created_idx"},
  };
  auto conn = db.Connect();
  for (const Listing& listing : listings) {
    const std::string head = absl::StrCat("SELECT ", listing.alias, ".id FROM ", listing.table, " ",
                                          listing.alias, " WHERE ", listing.alias, ".org_id = $1");
    const std::string tail = absl::StrCat(" ORDER BY ", listing.order, " LIMIT 51");
    const std::string stated =
        absl::StrCat(head, " AND ", CreationListingCondition(listing.alias), tail);
    const std::string plan = GenericPlan(*conn, stated, "uuid", absl::StrCat("'", org, "'"));
    INFO(stated << "\n" << plan);
    CHECK(ScannedIndexes(plan) == std::vector<std::string>{listing.index});
    CHECK(plan.find("Sort") == std::string::npos);
    // Without the condition the listing index is out of reach: the condition is what opts in.
    const std::string unstated =
        GenericPlan(*conn, head + tail, "uuid", absl::StrCat("'", org, "'"));
    INFO(unstated);
    for (const std::string& index : ScannedIndexes(unstated)) CHECK(index != listing.index);
  }
}

}  // namespace
}  // namespace dcl
