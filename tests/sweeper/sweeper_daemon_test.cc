// The real sweeper binary as a running process against a real PostgreSQL: it expires what is
// due within a few intervals and nothing else, two of them share the work without waiting on
// each other, it survives a terminated connection and a database outage, SIGTERM ends it after
// the current batch with exit status 0, and 100,000 due holds go in batches.
#include <catch2/catch.hpp>

#include <signal.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <optional>
#include <iostream>
#include <thread>

#include <pqxx/pqxx>

#include "tests/support/metrics_scrape.h"
#include "tests/support/test_db.h"
#include "tests/sweeper/holds_seed.h"
#include "tests/sweeper/sweeper_process.h"

namespace dcl {
namespace {

using namespace std::chrono_literals;
using testing::HoldsOrg;
using testing::InsertReservations;
using testing::SeedHoldsOrg;
using testing::SweeperProcess;
using testing::TestDatabase;
using testing::WaitUntil;

std::string DbArg(const TestDatabase& db) { return "--database_url=" + db.service_url(); }

int64_t CountState(const TestDatabase& db, const std::string& key_prefix,
                   const std::string& state) {
  return db.Count("SELECT count(*) FROM reservations WHERE idempotency_key LIKE '" + key_prefix +
                  "%' AND state = '" + state + "'");
}

// Everything about how a row ended, over the rows whose key starts with `key_prefix`.
std::string EndFingerprint(const TestDatabase& db, const std::string& key_prefix) {
  return db.Scalar(
      "SELECT md5(string_agg(concat_ws('|', id, state, ended_at, end_reason, ended_by, "
      "service_id, expires_at), ',' ORDER BY id)) FROM reservations WHERE idempotency_key LIKE '" +
      key_prefix + "%'");
}

// Batches that are not exactly `batch_size` rows: every row of one batch carries that batch's
// transaction time as ended_at, so a group of another size is a half-written or merged batch.
int64_t MisSizedBatches(const TestDatabase& db, int batch_size) {
  return db.Count(
      "SELECT count(*) FROM (SELECT ended_at FROM reservations WHERE end_reason = "
      "'expired_by_sweeper' GROUP BY ended_at HAVING count(*) <> " +
      std::to_string(batch_size) + ") g");
}

// Ends every connection to the test database (from the admin database, so that it works while
// the test database refuses connections); the number of backends ended.
int64_t TerminateBackends(const TestDatabase& db) {
  pqxx::connection admin(testing::AdminConnInfo());
  pqxx::nontransaction tx(admin);
  return tx
      .exec_params1("SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = $1 AND pid <> pg_backend_pid()) t",
                    db.name())[0]
      .as<int64_t>();
}

void SetAllowConnections(const TestDatabase& db, bool allow) {
  pqxx::connection admin(testing::AdminConnInfo());
  pqxx::nontransaction tx(admin);
  tx.exec("ALTER DATABASE " + db.name() + " ALLOW_CONNECTIONS " + (allow ? "true" : "false"));
}

TEST_CASE("the running sweeper expires due holds within a few intervals and touches nothing else") {
  TestDatabase db;
  auto conn = db.Connect();
  const HoldsOrg org = SeedHoldsOrg(*conn, "acme");
  InsertReservations(*conn, org, 50, "held", -60, "due-");
  InsertReservations(*conn, org, 20, "held", 3600, "later-");
  // Ended rows whose expiry passed long ago: the sweeper never changes them.
  InsertReservations(*conn, org, 10, "converted", -600, "conv-");
  InsertReservations(*conn, org, 10, "cancelled", -600, "canc-");
  InsertReservations(*conn, org, 10, "expired", -600, "exp-");
  const std::string converted_before = EndFingerprint(db, "conv-");
  const std::string cancelled_before = EndFingerprint(db, "canc-");
  const std::string expired_before = EndFingerprint(db, "exp-");
  const std::string later_before = EndFingerprint(db, "later-");

  SweeperProcess sweeper({DbArg(db), "--interval_seconds=1", "--sweeper_name=s1"});
  REQUIRE(WaitUntil([&] { return CountState(db, "due-", "expired") == 50; }, 10s));
  std::this_thread::sleep_for(2500ms);  // a few more sweeps

  CHECK(sweeper.Running());
  CHECK(CountState(db, "due-", "held") == 0);
  CHECK(db.Count("SELECT count(*) FROM reservations WHERE idempotency_key LIKE 'due-%' AND "
                 "state = 'expired' AND end_reason = 'expired_by_sweeper' AND ended_by = "
                 "'sweeper' AND ended_at >= expires_at") == 50);
  CHECK(db.Count("SELECT count(*) FROM reservations WHERE state = 'cancelled'") == 10);
  CHECK(EndFingerprint(db, "later-") == later_before);
  CHECK(CountState(db, "later-", "held") == 20);
  CHECK(EndFingerprint(db, "conv-") == converted_before);
  CHECK(EndFingerprint(db, "canc-") == cancelled_before);
  CHECK(EndFingerprint(db, "exp-") == expired_before);
  // The operator's record of the last successful sweep, by the database clock.
  CHECK(db.Count("SELECT count(*) FROM sweeper_status WHERE name = 's1' AND last_success_at > "
                 "now() - interval '3 seconds' AND last_failure_at IS NULL") == 1);

  // A hold that lapses now is picked up by a later sweep of the same process.
  db.Exec("UPDATE reservations SET expires_at = now() - interval '1 second' "
          "WHERE idempotency_key = 'later-1'");
  REQUIRE(WaitUntil([&] { return CountState(db, "later-", "expired") == 1; }, 10s));
  CHECK(CountState(db, "later-", "held") == 19);

  sweeper.Signal(SIGTERM);
  const std::optional<int> exit_status = sweeper.WaitForExit(10s);
  REQUIRE(exit_status.has_value());
  CHECK(*exit_status == 0);
  const std::string log = sweeper.Log();
  INFO(log);
  CHECK(log.find("sweep: expired 50 holds") != std::string::npos);
  CHECK(log.find("sweep: expired 1 holds") != std::string::npos);
}

TEST_CASE("the running sweeper serves its metrics: rows it ended, sweeps, last success") {
  TestDatabase db;
  auto conn = db.Connect();
  const HoldsOrg org = SeedHoldsOrg(*conn, "acme");
  InsertReservations(*conn, org, 30, "held", -60, "due-");
  const double started = static_cast<double>(time(nullptr));

  SweeperProcess sweeper({DbArg(db), "--interval_seconds=1", "--metrics_listen=127.0.0.1:0"});
  std::optional<int> port;
  REQUIRE(WaitUntil([&] { return (port = testing::LoggedMetricsPort(sweeper.Log())).has_value(); },
                    10s));
  REQUIRE(WaitUntil([&] { return CountState(db, "due-", "expired") == 30; }, 10s));
  testing::Samples samples;
  // The counter moves with each committed batch; the success once the sweep is recorded.
  REQUIRE(WaitUntil(
      [&] {
        samples = testing::Scrape(*port);
        return testing::ValueOr0(samples, "dcl_sweeper_sweeps_total{outcome=\"success\"}") >= 1;
      },
      10s));
  INFO(sweeper.Log());
  CHECK(samples.at("dcl_sweeper_reservations_expired_total") == 30);
  CHECK(samples.at("dcl_sweeper_bookings_released_total") == 0);
  CHECK(samples.at("dcl_sweeper_sweeps_total{outcome=\"failure\"}") == 0);
  const double last_success = samples.at("dcl_sweeper_last_success_timestamp_seconds");
  CHECK(last_success >= started - 1);
  CHECK(last_success <= static_cast<double>(time(nullptr)) + 1);
  CHECK(samples.at("dcl_db_pool_connections_max") == 2);  // the sweeper's pool is capped at 2

  sweeper.Signal(SIGTERM);
  CHECK(sweeper.WaitForExit(10s) == std::optional<int>(0));
}

TEST_CASE("--once sweeps what is due and exits 0; an unreachable database exits 1") {
  TestDatabase db;
  auto conn = db.Connect();
  const HoldsOrg org = SeedHoldsOrg(*conn, "acme");
  InsertReservations(*conn, org, 30, "held", -60, "due-");
  InsertReservations(*conn, org, 5, "held", 3600, "later-");

  SweeperProcess once({DbArg(db), "--once"});
  const std::optional<int> ok_status = once.WaitForExit(30s);
  REQUIRE(ok_status.has_value());
  CHECK(*ok_status == 0);
  CHECK(CountState(db, "due-", "expired") == 30);
  CHECK(CountState(db, "later-", "held") == 5);

  // Port 1: nothing listens there, the connection is refused at once.
  SweeperProcess unreachable(
      {"--database_url=host=127.0.0.1 port=1 dbname=none user=dcl connect_timeout=2", "--once"});
  const std::optional<int> failed_status = unreachable.WaitForExit(30s);
  REQUIRE(failed_status.has_value());
  CHECK(*failed_status == 1);
  CHECK(unreachable.Log().find("sweep failed") != std::string::npos);

  SweeperProcess misconfigured({"--database_url=" + db.service_url(), "--once", "--batch_size=0"});
  const std::optional<int> bad_flag_status = misconfigured.WaitForExit(30s);
  REQUIRE(bad_flag_status.has_value());
  CHECK(*bad_flag_status == 2);
}

TEST_CASE("two sweepers at once expire each due hold exactly once and neither waits for a lock") {
  TestDatabase db;
  auto conn = db.Connect();
  const HoldsOrg org = SeedHoldsOrg(*conn, "acme");
  constexpr int kDue = 40000;
  InsertReservations(*conn, org, kDue, "held", -60, "due-");
  InsertReservations(*conn, org, 100, "held", 3600, "later-");
  // Every state change is written down with the backend that made it.
  db.Exec(R"sql(
CREATE TABLE sweep_audit (reservation_id uuid NOT NULL, backend_pid integer NOT NULL);
CREATE FUNCTION sweep_audit_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF OLD.state IS DISTINCT FROM NEW.state THEN
    INSERT INTO sweep_audit VALUES (NEW.id, pg_backend_pid());
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER sweep_audit_row AFTER UPDATE ON reservations
  FOR EACH ROW EXECUTE FUNCTION sweep_audit_row();
)sql");

  // Samples the database for any backend waiting for a row lock (another transaction's tuple
  // or transaction id) while the two run. Other heavyweight-lock waits (a table extended by
  // both at once) are counted apart: they are physical and brief, not waiting on each other's
  // work.
  std::atomic<bool> sampling{true};
  std::atomic<int64_t> row_lock_waits{0};
  std::atomic<int64_t> other_lock_waits{0};
  std::atomic<int64_t> samples{0};
  std::thread sampler([&] {
    auto probe = db.Connect();
    while (sampling.load()) {
      pqxx::nontransaction tx(*probe);
      pqxx::row row = tx.exec1(
          "SELECT count(*) FILTER (WHERE wait_event IN ('tuple', 'transactionid')), "
          "count(*) FILTER (WHERE wait_event NOT IN ('tuple', 'transactionid')) "
          "FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'");
      row_lock_waits += row[0].as<int64_t>();
      other_lock_waits += row[1].as<int64_t>();
      ++samples;
      std::this_thread::sleep_for(5ms);
    }
  });

  const auto start = std::chrono::steady_clock::now();
  SweeperProcess a({DbArg(db), "--once", "--batch_size=100", "--sweeper_name=a"});
  SweeperProcess b({DbArg(db), "--once", "--batch_size=100", "--sweeper_name=b"});
  const std::optional<int> a_status = a.WaitForExit(120s);
  const std::optional<int> b_status = b.WaitForExit(120s);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  sampling.store(false);
  sampler.join();

  REQUIRE(a_status.has_value());
  REQUIRE(b_status.has_value());
  CHECK(*a_status == 0);
  CHECK(*b_status == 0);
  CHECK(CountState(db, "due-", "expired") == kDue);
  CHECK(CountState(db, "later-", "held") == 100);
  CHECK(db.Count("SELECT count(*) FROM sweep_audit") == kDue);
  CHECK(db.Count("SELECT count(DISTINCT reservation_id) FROM sweep_audit") == kDue);
  // Both did part of the work (two backends in the audit), and none waited for a row lock.
  const int64_t backends = db.Count("SELECT count(DISTINCT backend_pid) FROM sweep_audit");
  CHECK(backends == 2);
  CHECK(samples.load() > 0);
  CHECK(row_lock_waits.load() == 0);
  std::cout << "two sweepers: " << kDue << " holds in " << seconds << " s, split "
            << db.Scalar("SELECT string_agg(c::text, ' / ') FROM (SELECT count(*) c FROM "
                         "sweep_audit GROUP BY backend_pid) g")
            << "; " << samples.load() << " samples: " << row_lock_waits.load()
            << " row-lock waits, " << other_lock_waits.load() << " other lock waits\n";
}

TEST_CASE("a sweeper whose connection is terminated keeps running and sweeps again") {
  TestDatabase db;
  auto conn = db.Connect();
  const HoldsOrg org = SeedHoldsOrg(*conn, "acme");
  InsertReservations(*conn, org, 10, "held", -60, "first-");

  SweeperProcess sweeper({DbArg(db), "--interval_seconds=1", "--batch_size=100"});
  REQUIRE(WaitUntil([&] { return CountState(db, "first-", "expired") == 10; }, 10s));

  // Its idle pooled connection dies between two sweeps.
  CHECK(TerminateBackends(db) >= 2);  // the sweeper's and this test's own
  conn = db.Connect();
  InsertReservations(*conn, org, 10, "held", -60, "second-");
  REQUIRE(WaitUntil([&] { return CountState(db, "second-", "expired") == 10; }, 10s));
  CHECK(sweeper.Running());

  // Connections die again and again while it works through 20,000 holds in batches of 100.
  InsertReservations(*conn, org, 20000, "held", -60, "third-");
  for (int i = 0; i < 20; ++i) {
    TerminateBackends(db);
    std::this_thread::sleep_for(100ms);
  }
  conn = db.Connect();
  REQUIRE(WaitUntil([&] { return CountState(db, "third-", "expired") == 20000; }, 60s));
  CHECK(sweeper.Running());
  CHECK(db.Count("SELECT count(*) FROM (SELECT ended_at FROM reservations WHERE end_reason = "
                 "'expired_by_sweeper' GROUP BY ended_at HAVING count(*) > 100) g") == 0);

  // The database refuses connections for several intervals: each sweep fails, is logged, and
  // the next interval tries again; once the database is back, the holds go.
  InsertReservations(*conn, org, 10, "held", -60, "fourth-");
  conn.reset();
  SetAllowConnections(db, false);
  TerminateBackends(db);
  std::this_thread::sleep_for(3500ms);
  CHECK(sweeper.Running());
  const std::string log_during_outage = sweeper.Log();
  SetAllowConnections(db, true);
  REQUIRE(WaitUntil([&] { return CountState(db, "fourth-", "expired") == 10; }, 15s));
  CHECK(sweeper.Running());
  {
    INFO(log_during_outage);
    CHECK(log_during_outage.find("sweep failed") != std::string::npos);
  }

  sweeper.Signal(SIGTERM);
  const std::optional<int> exit_status = sweeper.WaitForExit(10s);
  REQUIRE(exit_status.has_value());
  CHECK(*exit_status == 0);
}

TEST_CASE("SIGTERM during a sweep: exit status 0 and no half-written batch") {
  TestDatabase db;
  auto conn = db.Connect();
  const HoldsOrg org = SeedHoldsOrg(*conn, "acme");
  constexpr int kDue = 10000;
  constexpr int kBatch = 100;
  InsertReservations(*conn, org, kDue, "held", -60, "due-");
  // Each expired row costs a millisecond, so a sweep takes ~10 s and SIGTERM lands inside it.
  db.Exec(R"sql(
CREATE FUNCTION slow_down() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_sleep(0.001); RETURN NEW; END $$;
CREATE TRIGGER slow_down BEFORE UPDATE ON reservations
  FOR EACH ROW EXECUTE FUNCTION slow_down();
)sql");

  SweeperProcess sweeper({DbArg(db), "--interval_seconds=1", "--batch_size=100"});
  REQUIRE(WaitUntil([&] { return CountState(db, "due-", "expired") > 0; }, 20s));
  sweeper.Signal(SIGTERM);
  const auto signalled = std::chrono::steady_clock::now();
  const std::optional<int> exit_status = sweeper.WaitForExit(10s);
  const double exit_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - signalled).count();
  REQUIRE(exit_status.has_value());
  CHECK(*exit_status == 0);
  CHECK(exit_seconds < 3.0);  // the current batch, not the rest of the sweep

  const int64_t expired = CountState(db, "due-", "expired");
  const int64_t held = CountState(db, "due-", "held");
  CHECK(expired > 0);
  CHECK(expired < kDue);  // it stopped inside the sweep
  CHECK(expired + held == kDue);
  CHECK(expired % kBatch == 0);
  CHECK(MisSizedBatches(db, kBatch) == 0);
  CHECK(db.Count("SELECT count(*) FROM reservations WHERE state = 'held' AND "
                 "(ended_at IS NOT NULL OR end_reason IS NOT NULL OR ended_by IS NOT NULL)") == 0);
  const std::string log = sweeper.Log();
  INFO(log);
  CHECK(log.find("stopped between batches") != std::string::npos);
  // An interrupted sweep is not a successful one.
  CHECK(db.Count("SELECT count(*) FROM sweeper_status WHERE last_success_at IS NOT NULL") == 0);
}

TEST_CASE("100,000 due holds are swept by the running daemon in batches of 1,000") {
  TestDatabase db;
  auto conn = db.Connect();
  const HoldsOrg org = SeedHoldsOrg(*conn, "acme");
  constexpr int kDue = 100000;
  InsertReservations(*conn, org, kDue, "held", -60, "due-");
  InsertReservations(*conn, org, 1000, "held", 3600, "later-");
  db.Exec("ANALYZE reservations");

  const auto start = std::chrono::steady_clock::now();
  // Batches of 1,000, not the default 20 (sweeper.h says why 20): a tenth of the transactions
  // for the same rows keeps the test short, and the batching it checks is the same.
  SweeperProcess sweeper(
      {DbArg(db), "--interval_seconds=1", "--sweeper_name=big", "--batch_size=1000"});
  REQUIRE(WaitUntil([&] { return CountState(db, "due-", "expired") == kDue; }, 180s));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  REQUIRE(WaitUntil(
      [&] {
        return db.Count("SELECT count(*) FROM sweeper_status WHERE name = 'big' AND "
                        "last_reservations_expired = 100000") == 1;
      },
      10s));
  const int64_t sweep_ms =
      db.Count("SELECT last_duration_ms FROM sweeper_status WHERE name = 'big'");
  CHECK(CountState(db, "later-", "held") == 1000);
  CHECK(db.Count("SELECT count(DISTINCT ended_at) FROM reservations WHERE state = 'expired'") ==
        100);
  CHECK(MisSizedBatches(db, 1000) == 0);
  sweeper.Signal(SIGTERM);
  CHECK(sweeper.WaitForExit(10s) == std::optional<int>(0));
  std::cout << "100,000 due holds: sweep " << sweep_ms << " ms ("
            << (sweep_ms > 0 ? kDue * 1000.0 / sweep_ms : 0.0)
            << " expirations/s); observed from process start " << seconds << " s\n";
}

}  // namespace
}  // namespace dcl
