// The reservation schema against a real PostgreSQL: the arbiter index agrees with the table of
// holding states (and with the code's constant), and every rule the schema owns is enforced by
// the constraint the code maps by name.
#include <catch2/catch.hpp>
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

}  // namespace
}  // namespace dcl::reservation
