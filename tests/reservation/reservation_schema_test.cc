// The reservation schema against a real PostgreSQL: the arbiter index agrees with the table of
// holding states (and with the code's constant), and every rule the schema owns is enforced by
// the constraint the code maps by name.
#include <catch2/catch.hpp>
#include <pqxx/pqxx>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "services/common/db.h"
#include "services/reservation/reservation_store.h"
#include "tests/support/fixtures.h"
#include "tests/support/test_db.h"

namespace dcl::reservation {
namespace {

using testing::TestDatabase;

const char* kAllStates[] = {"held", "converted", "expired", "cancelled"};

struct Seed {
  std::string org, site, device, service;
};

Seed SeedOrg(const TestDatabase& db, const std::string& name) {
  Seed s;
  s.org = testing::CreateOrg(db, name);
  s.site = testing::CreateSite(db, s.org, "FRA1");
  s.device = testing::CreateDevice(db, s.org, s.site);
  s.service = db.Scalar(absl::StrCat("INSERT INTO services (org_id, kind, customer) VALUES ('",
                                     s.org, "', 'dedicated', 'c1') RETURNING id"));
  return s;
}

// A reservation row in `state` with the columns that state requires.
std::string InsertReservation(const Seed& s, const std::string& key, const std::string& state) {
  std::string end = "NULL, NULL, NULL, NULL";
  if (state == "converted") end = absl::StrCat("now(), 'converted', 'test', '", s.service, "'");
  if (state == "expired") end = "now(), 'expired_by_sweeper', 'test', NULL";
  if (state == "cancelled") end = "now(), 'cancelled', 'test', NULL";
  return absl::StrCat(
      "INSERT INTO reservations (org_id, idempotency_key, device_id, state, criteria_site_id, "
      "selection_reason, expires_at, ended_at, end_reason, ended_by, service_id) VALUES ('",
      s.org, "', '", key, "', '", s.device, "', '", state, "', '", s.site,
      "', '{}', now() + interval '15 minutes', ", end, ") RETURNING id");
}

TEST_CASE("the table of holding states agrees with the arbiter index's predicate and the code") {
  TestDatabase db;
  const Seed s = SeedOrg(db, "acme");
  auto pool = db.MakePool(1);

  std::set<std::string> table;
  for (const auto& row : db.Exec("SELECT state FROM reservation_holding_states")) {
    table.insert(row[0].as<std::string>());
  }
  CHECK(table == std::set<std::string>{kHoldingState});

  // The index as the catalog has it: unique, on device_id, partial.
  CHECK(db.Scalar("SELECT indisunique::text FROM pg_index WHERE indexrelid = "
                  "'reservations_device_held_uq'::regclass") == "true");
  CHECK(db.Scalar("SELECT pg_get_indexdef('reservations_device_held_uq'::regclass)")
            .find("(device_id) WHERE (state = 'held'::text)") != std::string::npos);

  // Semantically, state by state: two rows on one device in state S collide exactly when S is
  // in the table. (Behaviour, not text: a predicate rewritten as IN (...) still passes.)
  for (const char* state : kAllStates) {
    INFO("state " << state);
    absl::Status status = pool->Transact([&](pqxx::work& tx) -> absl::Status {
      GuardedResult first = GuardedExec(tx, InsertReservation(s, "k1", state), {});
      REQUIRE_FALSE(first.violated());
      GuardedResult second = GuardedExec(tx, InsertReservation(s, "k2", state), {});
      const bool collides = second.violated();
      CHECK(collides == (table.count(state) == 1));
      if (collides) CHECK(second.violated_constraint == kDeviceHeldIndex);
      return absl::CancelledError("roll back");
    });
    CHECK(status.code() == absl::StatusCode::kCancelled);
  }
}

TEST_CASE("an idempotency key is unique per organization, not across organizations") {
  TestDatabase db;
  const Seed a = SeedOrg(db, "acme");
  const Seed b = SeedOrg(db, "globex");
  auto pool = db.MakePool(1);
  absl::Status status = pool->Transact([&](pqxx::work& tx) -> absl::Status {
    CHECK_FALSE(GuardedExec(tx, InsertReservation(a, "order-1", "cancelled"), {}).violated());
    CHECK_FALSE(GuardedExec(tx, InsertReservation(b, "order-1", "cancelled"), {}).violated());
    GuardedResult again = GuardedExec(tx, InsertReservation(a, "order-1", "cancelled"), {});
    CHECK(again.violated_constraint == kOrgKeyConstraint);
    return absl::OkStatus();
  });
  REQUIRE(status.ok());
}

// Migration 0029: one foreign key (device_id, org_id) → devices (id, org_id).
TEST_CASE("a reservation's organization is its device's organization") {
  TestDatabase db;
  const Seed a = SeedOrg(db, "acme");
  Seed crossed = SeedOrg(db, "globex");
  crossed.device = a.device;  // globex's reservation of acme's machine
  auto pool = db.MakePool(1);
  absl::Status status = pool->Transact([&](pqxx::work& tx) -> absl::Status {
    GuardedResult result = GuardedExec(tx, InsertReservation(crossed, "order-1", "held"), {});
    CHECK(result.violated_constraint == "reservations_device_org_fk");
    CHECK_FALSE(GuardedExec(tx, InsertReservation(a, "order-1", "held"), {}).violated());
    return absl::OkStatus();
  });
  REQUIRE(status.ok());
}

TEST_CASE("a reservation's end must match its state") {
  TestDatabase db;
  const Seed s = SeedOrg(db, "acme");
  auto pool = db.MakePool(1);
  absl::Status status = pool->Transact([&](pqxx::work& tx) -> absl::Status {
    // 'expired' without an end, 'converted' without a service, 'held' with an end.
    const std::string base = absl::StrCat(
        "INSERT INTO reservations (org_id, idempotency_key, device_id, state, criteria_site_id, "
        "selection_reason, expires_at, ended_at, end_reason, service_id) VALUES ('",
        s.org, "', 'k', '", s.device, "', ");
    const char* tails[] = {
        "'expired', $1[1]::uuid, '{}', now() + interval '1 hour', NULL, NULL, NULL)",
        "'converted', $1[1]::uuid, '{}', now() + interval '1 hour', now(), 'converted', NULL)",
        "'held', $1[1]::uuid, '{}', now() + interval '1 hour', now(), 'cancelled', NULL)",
        "'cancelled', $1[1]::uuid, '{}', now() + interval '1 hour', now(), "
        "'expired_by_sweeper', NULL)",
    };
    for (const char* tail : tails) {
      GuardedResult r = GuardedExec(tx, base + tail + " RETURNING id", {s.site});
      CHECK(r.violated_constraint == "reservations_end_consistent");
    }
    return absl::OkStatus();
  });
  REQUIRE(status.ok());
}

TEST_CASE("active bindings: a service on one machine, a machine for one service; history is free") {
  TestDatabase db;
  const Seed s = SeedOrg(db, "acme");
  const std::string device2 = testing::CreateDevice(db, s.org, s.site);
  const std::string service2 =
      db.Scalar(absl::StrCat("INSERT INTO services (org_id, kind, customer) VALUES ('", s.org,
                             "', 'dedicated', 'c2') RETURNING id"));
  auto pool = db.MakePool(1);
  const std::string insert =
      "INSERT INTO service_bindings (org_id, service_id, device_id) "
      "VALUES ($1[1]::uuid, $1[2]::uuid, $1[3]::uuid) RETURNING id";
  absl::Status status = pool->Transact([&](pqxx::work& tx) -> absl::Status {
    REQUIRE_FALSE(GuardedExec(tx, insert, {s.org, s.service, s.device}).violated());
    CHECK(GuardedExec(tx, insert, {s.org, s.service, device2}).violated_constraint ==
          kServiceActiveIndex);
    CHECK(GuardedExec(tx, insert, {s.org, service2, s.device}).violated_constraint ==
          kDeviceActiveIndex);
    // Ended rows are history: the machine can be given again.
    tx.exec("UPDATE service_bindings SET ended_at = now()");
    CHECK_FALSE(GuardedExec(tx, insert, {s.org, service2, s.device}).violated());
    return absl::OkStatus();
  });
  REQUIRE(status.ok());
}

// site_device_counts (migration 0023, in stripes since 0032-0034) is what a refusal's wrong_site
// count reads: the sum of a site's stripes must equal the devices table's own count after every
// kind of write to devices.
TEST_CASE("site_device_counts follows inserts, bulk inserts, deletes and site changes exactly") {
  TestDatabase db;
  const Seed a = SeedOrg(db, "acme");
  const std::string other_site = testing::CreateSite(db, a.org, "AMS1");
  const Seed b = SeedOrg(db, "globex");
  auto mismatches = [&] {
    // Sites whose kept count differs from the table's (a missing row counts as 0).
    return db.Scalar(
        "SELECT count(*) FROM sites s "
        "LEFT JOIN (SELECT org_id, site_id, sum(devices) AS devices FROM site_device_counts "
        "  GROUP BY 1, 2) c ON c.org_id = s.org_id AND c.site_id = s.id "
        "LEFT JOIN (SELECT org_id, site_id, count(*) AS n FROM devices GROUP BY 1, 2) d "
        "  ON d.org_id = s.org_id AND d.site_id = s.id "
        "WHERE coalesce(c.devices, 0) <> coalesce(d.n, 0)");
  };
  CHECK(mismatches() == "0");
  // One statement adding devices to two sites of one organization and one of another.
  db.Exec(absl::StrCat(
      "INSERT INTO devices (org_id, site_id, vendor, model, height_units, depth_class) "
      "SELECT o, s, 'Dell', 'R650', 1, 'full' FROM (VALUES ('",
      a.org, "'::uuid, '", a.site, "'::uuid), ('", a.org, "', '", other_site, "'), ('", b.org,
      "', '", b.site, "')) v(o, s), generate_series(1, 7)"));
  CHECK(mismatches() == "0");
  CHECK(db.Scalar(absl::StrCat("SELECT sum(devices) FROM site_device_counts WHERE site_id = '",
                               other_site, "'")) == "7");
  db.Exec(absl::StrCat("DELETE FROM devices WHERE id IN (SELECT id FROM devices WHERE site_id = '",
                       other_site, "' LIMIT 3)"));
  CHECK(mismatches() == "0");
  db.Exec(absl::StrCat("UPDATE devices SET site_id = '", other_site,
                       "' WHERE id IN (SELECT id FROM devices WHERE site_id = '", a.site,
                       "' AND id <> '", a.device, "' LIMIT 2)"));
  CHECK(mismatches() == "0");
  CHECK(db.Scalar(absl::StrCat("SELECT sum(devices) FROM site_device_counts WHERE site_id = '",
                               other_site, "'")) == "6");
  // A write that does not touch org or site leaves the counts alone.
  db.Exec("UPDATE devices SET process_state = 'staging'");
  CHECK(mismatches() == "0");
}

// Two transactions adding devices to one site do not wait for each other (migrations 0032-0034):
// each counts in the stripe of its transaction id. Before, both updated the site's one row and
// the second waited for the first's commit (a NetBox import's registrations ran in line).
TEST_CASE("two transactions adding devices to one site do not wait for each other") {
  TestDatabase db;
  const Seed a = SeedOrg(db, "acme");
  const std::string add_device = absl::StrCat(
      "INSERT INTO devices (org_id, site_id, vendor, model, height_units, depth_class) VALUES ('",
      a.org, "', '", a.site, "', 'Dell', 'R650', 1, 'full')");
  auto first_conn = db.Connect();
  auto second_conn = db.Connect();
  pqxx::work first(*first_conn);
  first.exec(add_device);  // holds its stripe's row until it ends
  const long long first_stripe = first.exec1("SELECT txid_current() % 16")[0].as<long long>();
  // The second in a stripe of its own: transaction ids are cluster-wide and other tests take
  // some, so a second transaction whose id falls on the first's stripe gives way to another.
  for (int attempt = 0;; ++attempt) {
    REQUIRE(attempt < 64);
    pqxx::work second(*second_conn);
    if (second.exec1("SELECT txid_current() % 16")[0].as<long long>() == first_stripe) {
      second.abort();
      continue;
    }
    second.exec("SET LOCAL lock_timeout = '2s'");
    CHECK_NOTHROW(second.exec(add_device));  // before: lock timeout, waiting for `first`
    second.commit();
    break;
  }
  first.commit();
  CHECK(db.Scalar(absl::StrCat("SELECT sum(devices) FROM site_device_counts WHERE site_id = '",
                               a.site, "'")) ==
        db.Scalar(absl::StrCat("SELECT count(*) FROM devices WHERE site_id = '", a.site, "'")));
}

// dcl_exclusion_summary reads the asked site 1,024 devices at a time (migration 0024): over
// several batches its counts per combination of facts must still add up to the table's own.
TEST_CASE("the exclusion summary over a site of several batches adds up to the table's counts") {
  TestDatabase db;
  const Seed a = SeedOrg(db, "acme");
  const std::string other_site = testing::CreateSite(db, a.org, "AMS1");
  db.Exec(absl::StrCat(
      "INSERT INTO devices (org_id, site_id, vendor, model, height_units, depth_class) "
      "SELECT '",
      a.org, "', '", a.site,
      "', CASE WHEN g % 3 = 0 THEN 'HPE' ELSE 'Dell' END, "
      "'R650', 1, 'full' FROM generate_series(1, 2500) g"));
  db.Exec(absl::StrCat(
      "INSERT INTO devices (org_id, site_id, vendor, model, height_units, depth_class) "
      "SELECT '",
      a.org, "', '", other_site,
      "', 'Dell', 'R650', 1, 'full' "
      "FROM generate_series(1, 40)"));
  db.Exec(absl::StrCat(
      "INSERT INTO reservations (org_id, idempotency_key, device_id, criteria_site_id, "
      "selection_reason, expires_at) SELECT '",
      a.org, "', 'k' || id, id, '", a.site,
      "', '{}', now() + interval '1 hour' FROM devices WHERE site_id = '", a.site,
      "' ORDER BY md5(id::text) LIMIT 700"));
  db.Exec(
      absl::StrCat("UPDATE devices SET decommissioned_at = now(), decommissioned_by = 't' "
                   "WHERE id IN (SELECT id FROM devices WHERE site_id = '",
                   a.site, "' ORDER BY md5(id::text) DESC LIMIT 90)"));
  const std::string summary = absl::StrCat(
      "SELECT at_asked_site, vendor, held, decommissioned, sum(devices)::bigint AS n "
      "FROM dcl_exclusion_summary('",
      a.org, "', '", a.site, "', 5) GROUP BY 1, 2, 3, 4");
  const std::string table =
      absl::StrCat("SELECT d.site_id = '", a.site,
                   "' AS at_asked_site, "
                   "CASE WHEN d.site_id = '",
                   a.site,
                   "' THEN d.vendor ELSE '' END AS vendor, "
                   "d.site_id = '",
                   a.site,
                   "' AND EXISTS (SELECT 1 FROM reservations h "
                   "  WHERE h.device_id = d.id AND h.state = 'held') AS held, "
                   "d.site_id = '",
                   a.site,
                   "' AND d.decommissioned_at IS NOT NULL AS decommissioned, "
                   "count(*) AS n FROM devices d WHERE d.org_id = '",
                   a.org, "' GROUP BY 1, 2, 3, 4");
  // Rows in one and not the other, both ways: none.
  CHECK(db.Scalar(absl::StrCat("SELECT count(*) FROM ((", summary, ") EXCEPT (", table, ")) x")) ==
        "0");
  CHECK(db.Scalar(absl::StrCat("SELECT count(*) FROM ((", table, ") EXCEPT (", summary, ")) x")) ==
        "0");
  CHECK(db.Scalar(absl::StrCat("SELECT sum(devices) FROM dcl_exclusion_summary('", a.org, "', '",
                               a.site, "', 5) WHERE at_asked_site")) == "2501");
}

}  // namespace
}  // namespace dcl::reservation
