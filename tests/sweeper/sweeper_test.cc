// The sweep logic (sweeper/sweeper.h) called as a function against a real PostgreSQL, with a
// fake clock for the daemon loop: batches, the status record, rows a Convert holds locked,
// stop requests, and a failed sweep retried at the next interval.
#include <catch2/catch.hpp>

#include <chrono>
#include <functional>
#include <vector>

#include <pqxx/pqxx>

#include "absl/time/time.h"
#include "services/common/metrics.h"
#include "sweeper/sweeper.h"
#include "tests/support/metrics_scrape.h"
#include "tests/support/test_db.h"
#include "tests/sweeper/holds_seed.h"

namespace dcl {
namespace {

using testing::HoldsOrg;
using testing::InsertReservations;
using testing::SeedHoldsOrg;
using testing::TestDatabase;

// Time that passes only when the loop sleeps; every sleep is recorded and may run a hook.
class FakeClock final : public Clock {
 public:
  absl::Time Now() override { return now_; }
  void SleepUntil(absl::Time deadline, absl::Notification& stop) override {
    sleeps.push_back(deadline - now_);
    now_ = deadline;
    if (on_sleep) on_sleep(static_cast<int>(sleeps.size()));
  }
  std::vector<absl::Duration> sleeps;
  std::function<void(int)> on_sleep;

 private:
  absl::Time now_ = absl::FromUnixSeconds(1'800'000'000);
};

int64_t CountState(const TestDatabase& db, const std::string& key_prefix,
                   const std::string& state) {
  return db.Count("SELECT count(*) FROM reservations WHERE idempotency_key LIKE '" + key_prefix +
                  "%' AND state = '" + state + "'");
}

SweeperOptions Options(int batch_size) {
  SweeperOptions options;
  options.name = "test";
  options.batch_size = batch_size;
  options.interval = absl::Seconds(7);
  return options;
}

TEST_CASE("one sweep expires every due hold in batches and records its success") {
  TestDatabase db;
  auto conn = db.Connect();
  const HoldsOrg org = SeedHoldsOrg(*conn, "acme");
  InsertReservations(*conn, org, 2500, "held", -1, "due-");
  InsertReservations(*conn, org, 40, "held", 600, "later-");
  auto pool = db.MakePool(2);
  FakeClock clock;
  Sweeper sweeper(*pool, Options(1000), clock);

  absl::StatusOr<SweepResult> result = sweeper.SweepOnce();
  REQUIRE(result.ok());
  CHECK(result->complete);
  CHECK(result->reservations_expired == 2500);
  CHECK(result->batches == 3);
  CHECK(CountState(db, "due-", "expired") == 2500);
  CHECK(CountState(db, "later-", "held") == 40);
  // One transaction per batch: the batches are 1000, 1000 and 500 rows.
  CHECK(db.Scalar("SELECT string_agg(c::text, ',' ORDER BY c DESC) FROM (SELECT count(*) c FROM "
                  "reservations WHERE state = 'expired' GROUP BY ended_at) g") == "1000,1000,500");
  CHECK(db.Count("SELECT count(*) FROM sweeper_status WHERE name = 'test' AND last_success_at "
                 "IS NOT NULL AND last_reservations_expired = 2500") == 1);
  CHECK(sweeper.sweeps_succeeded() == 1);

  // Nothing due: a sweep that changes nothing still counts as a successful sweep.
  result = sweeper.SweepOnce();
  REQUIRE(result.ok());
  CHECK(result->reservations_expired == 0);
  CHECK(result->batches == 0);
  CHECK(db.Count("SELECT count(*) FROM sweeper_status WHERE name = 'test' AND "
                 "last_reservations_expired = 0") == 1);
}

TEST_CASE("lapsed rack reservations are released with their slots; placements and holds stay") {
  TestDatabase db;
  auto conn = db.Connect();
  const HoldsOrg org = SeedHoldsOrg(*conn, "acme");
  const std::string rack = testing::InsertRack(*conn, org, "R1");
  const std::string device = testing::InsertDevice(*conn, org);
  const std::string lapsed = testing::InsertBooking(*conn, org, rack, "reservation", 1, 2, -60);
  const std::string later = testing::InsertBooking(*conn, org, rack, "reservation", 3, 4, 3600);
  const std::string placement =
      testing::InsertBooking(*conn, org, rack, "placement", 5, 5, std::nullopt, device);
  // A move hold and a blocking whose expiry passed belong to a move / to an operator: not ours.
  const std::string move_hold = testing::InsertBooking(*conn, org, rack, "move_hold", 6, 7, -60);
  const std::string blocking = testing::InsertBooking(*conn, org, rack, "blocking", 8, 8, -60);
  // Released long ago: stays as it was.
  const std::string released = testing::InsertBooking(*conn, org, rack, "reservation", 9, 9, -60);
  db.Exec("UPDATE bookings SET released_at = now() - interval '30 minutes', released_by = 'ops', "
          "release_reason = 'done' WHERE id = '" + released + "'");
  db.Exec("UPDATE booking_slots SET released_at = now() - interval '30 minutes' "
          "WHERE booking_id = '" + released + "'");
  // Many more lapsed rack reservations, one unit each: they go in batches too.
  for (int unit = 10; unit < 35; ++unit) {
    testing::InsertBooking(*conn, org, rack, "reservation", unit, unit, -30);
  }
  const std::string untouched_before = db.Scalar(
      "SELECT md5(string_agg(concat_ws('|', b.id, b.released_at, b.released_by, "
      "b.release_reason, s.unit, s.released_at), ',' ORDER BY b.id, s.unit)) FROM bookings b "
      "JOIN booking_slots s ON s.booking_id = b.id WHERE b.id IN ('" + later + "', '" +
      placement + "', '" + move_hold + "', '" + blocking + "', '" + released + "')");

  auto pool = db.MakePool(2);
  FakeClock clock;
  Sweeper sweeper(*pool, Options(10), clock);
  absl::StatusOr<SweepResult> result = sweeper.SweepOnce();
  REQUIRE(result.ok());
  CHECK(result->bookings_released == 26);
  CHECK(result->batches == 3);

  // Header and slots in the same transaction, with who and why.
  CHECK(db.Count("SELECT count(*) FROM bookings WHERE id = '" + lapsed + "' AND released_by = "
                 "'sweeper' AND release_reason <> '' AND released_at IS NOT NULL") == 1);
  CHECK(db.Count("SELECT count(*) FROM booking_slots s JOIN bookings b ON b.id = s.booking_id "
                 "WHERE b.id = '" + lapsed + "' AND s.released_at = b.released_at") == 2);
  CHECK(db.Count("SELECT count(*) FROM bookings b JOIN booking_slots s ON s.booking_id = b.id "
                 "WHERE b.kind = 'reservation' AND b.expires_at < now() AND "
                 "(b.released_at IS NULL OR s.released_at IS NULL)") == 0);
  CHECK(db.Scalar(
            "SELECT md5(string_agg(concat_ws('|', b.id, b.released_at, b.released_by, "
            "b.release_reason, s.unit, s.released_at), ',' ORDER BY b.id, s.unit)) FROM bookings "
            "b JOIN booking_slots s ON s.booking_id = b.id WHERE b.id IN ('" + later + "', '" +
            placement + "', '" + move_hold + "', '" + blocking + "', '" + released + "')") ==
        untouched_before);
  // The units are free for the slot index again.
  CHECK_NOTHROW(testing::InsertBooking(*conn, org, rack, "blocking", 1, 2, std::nullopt));
  CHECK(db.Count("SELECT last_bookings_released FROM sweeper_status WHERE name = 'test'") == 26);
}

TEST_CASE("a hold a Convert has locked is skipped, not waited for, and the Convert's outcome stands") {
  TestDatabase db;
  auto conn = db.Connect();
  const HoldsOrg org = SeedHoldsOrg(*conn, "acme");
  InsertReservations(*conn, org, 200, "held", -1, "due-");

  // A Convert in progress: it holds the row lock of three due holds.
  auto convert_conn = db.Connect();
  pqxx::work convert(*convert_conn);
  convert.exec(
      "SELECT id FROM reservations WHERE idempotency_key IN ('due-1', 'due-2', 'due-3') "
      "FOR UPDATE");

  auto pool = db.MakePool(2);
  FakeClock clock;
  Sweeper sweeper(*pool, Options(50), clock);
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<SweepResult> result = sweeper.SweepOnce();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  REQUIRE(result.ok());
  CHECK(result->reservations_expired == 197);
  CHECK(seconds < 2.0);  // lock_timeout is 5 s: waiting would have shown here
  CHECK(CountState(db, "due-", "held") == 3);

  // The Convert commits first: its outcome stands, the next sweep sees 'converted'.
  convert.exec_params(
      "UPDATE reservations SET state = 'converted', end_reason = 'converted', ended_at = now(), "
      "ended_by = 'shop', service_id = $1 WHERE idempotency_key IN ('due-1', 'due-2', 'due-3')",
      org.service_id);
  convert.commit();
  result = sweeper.SweepOnce();
  REQUIRE(result.ok());
  CHECK(result->reservations_expired == 0);
  CHECK(CountState(db, "due-", "converted") == 3);
  CHECK(CountState(db, "due-", "expired") == 197);
}

TEST_CASE("a stop request ends a sweep before the next batch and records no success") {
  TestDatabase db;
  auto conn = db.Connect();
  const HoldsOrg org = SeedHoldsOrg(*conn, "acme");
  InsertReservations(*conn, org, 30, "held", -1, "due-");
  auto pool = db.MakePool(2);
  FakeClock clock;
  Sweeper sweeper(*pool, Options(10), clock);
  sweeper.RequestStop();
  absl::StatusOr<SweepResult> result = sweeper.SweepOnce();
  REQUIRE(result.ok());
  CHECK_FALSE(result->complete);
  CHECK(result->reservations_expired == 0);
  CHECK(CountState(db, "due-", "held") == 30);
  CHECK(db.Count("SELECT count(*) FROM sweeper_status") == 0);
}

TEST_CASE("a sweep that fails while the database answers is recorded as the last failure") {
  TestDatabase db;
  auto conn = db.Connect();
  const HoldsOrg org = SeedHoldsOrg(*conn, "acme");
  InsertReservations(*conn, org, 20, "held", -1, "due-");
  // Every expired row costs 50 ms; the statement timeout is 200 ms: the first batch fails.
  db.Exec(R"sql(
CREATE FUNCTION slow_down() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_sleep(0.05); RETURN NEW; END $$;
CREATE TRIGGER slow_down BEFORE UPDATE ON reservations
  FOR EACH ROW EXECUTE FUNCTION slow_down();
)sql");
  DbOptions options;
  options.url = db.service_url();
  options.pool_size = 2;
  options.statement_timeout_ms = 200;
  DbPool pool(options);
  FakeClock clock;
  Sweeper sweeper(pool, Options(20), clock);
  absl::StatusOr<SweepResult> result = sweeper.SweepOnce();
  REQUIRE_FALSE(result.ok());
  CHECK(sweeper.sweeps_failed() == 1);
  CHECK(CountState(db, "due-", "held") == 20);  // the failed batch left nothing behind
  const pqxx::row status = db.Exec(
      "SELECT last_success_at IS NULL, last_failure_at IS NOT NULL, coalesce(last_error, '') "
      "FROM sweeper_status WHERE name = 'test'")[0];
  CHECK(status[0].as<bool>());
  CHECK(status[1].as<bool>());
  const std::string error = status[2].as<std::string>();
  INFO(error);
  CHECK_FALSE(error.empty());
  CHECK(error.find("reservations") == std::string::npos);  // no driver or SQL text
  CHECK(error.find("statement") == std::string::npos);
}

TEST_CASE("the daemon loop sleeps one interval between sweeps until asked to stop") {
  TestDatabase db;
  auto conn = db.Connect();
  const HoldsOrg org = SeedHoldsOrg(*conn, "acme");
  InsertReservations(*conn, org, 5, "held", -1, "first-");
  InsertReservations(*conn, org, 3, "held", 600, "later-");
  auto pool = db.MakePool(2);
  FakeClock clock;
  Sweeper sweeper(*pool, Options(100), clock);
  clock.on_sleep = [&](int sleeps) {
    if (sleeps == 1) {
      // Between the first and the second sweep a hold lapses.
      db.Exec("UPDATE reservations SET expires_at = now() - interval '1 second' "
              "WHERE idempotency_key = 'later-1'");
      InsertReservations(*db.Connect(), org, 4, "held", -1, "second-");
    }
    if (sleeps == 3) sweeper.RequestStop();
  };
  sweeper.Run();
  CHECK(sweeper.sweeps_succeeded() == 3);
  CHECK(sweeper.sweeps_failed() == 0);
  REQUIRE(clock.sleeps.size() == 3);
  for (absl::Duration sleep : clock.sleeps) CHECK(sleep == absl::Seconds(7));
  CHECK(CountState(db, "first-", "expired") == 5);
  CHECK(CountState(db, "second-", "expired") == 4);
  CHECK(CountState(db, "later-", "expired") == 1);
  CHECK(CountState(db, "later-", "held") == 2);
}

TEST_CASE("a sweep that fails on a lost database is retried at the next interval") {
  TestDatabase db;
  auto conn = db.Connect();
  const HoldsOrg org = SeedHoldsOrg(*conn, "acme");
  InsertReservations(*conn, org, 25, "held", -1, "due-");
  conn.reset();
  auto set_allow = [&](bool allow) {
    pqxx::connection admin(testing::AdminConnInfo());
    pqxx::nontransaction tx(admin);
    tx.exec("ALTER DATABASE " + db.name() + " ALLOW_CONNECTIONS " + (allow ? "true" : "false"));
    if (!allow) {
      tx.exec_params("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1",
                     db.name());
    }
  };
  auto pool = db.MakePool(2);
  FakeClock clock;
  Sweeper sweeper(*pool, Options(10), clock);
  set_allow(false);
  clock.on_sleep = [&](int sleeps) {
    if (sleeps == 2) set_allow(true);  // the database is back after two failed sweeps
    if (sleeps == 3) sweeper.RequestStop();
  };
  sweeper.Run();
  CHECK(sweeper.sweeps_failed() == 2);
  CHECK(sweeper.sweeps_succeeded() == 1);
  CHECK(clock.sleeps.size() == 3);
  CHECK(CountState(db, "due-", "expired") == 25);
}

TEST_CASE("client request ids past their retention are deleted in batches; younger ones stay") {
  TestDatabase db;
  auto conn = db.Connect();
  const HoldsOrg org = SeedHoldsOrg(*conn, "acme");
  conn.reset();
  // 23 ids from eight days ago, 4 from six days ago, all completed.
  db.Exec("INSERT INTO client_requests (org_id, request_id, rpc, params_sha256, response, "
          "created_at) SELECT '" + org.org_id + "', 'old-' || n, '/dcl.v1.InventoryService/"
          "CreateSite', sha256('x'), '', now() - interval '8 days' FROM generate_series(1, 23) n");
  db.Exec("INSERT INTO client_requests (org_id, request_id, rpc, params_sha256, response, "
          "created_at) SELECT '" + org.org_id + "', 'young-' || n, '/dcl.v1.InventoryService/"
          "CreateSite', sha256('x'), '', now() - interval '6 days' FROM generate_series(1, 4) n");
  auto pool = db.MakePool(2);
  FakeClock clock;
  SweeperOptions options = Options(10);
  options.request_retention = absl::Hours(7 * 24);
  Sweeper sweeper(*pool, options, clock);
  absl::StatusOr<SweepResult> result = sweeper.SweepOnce();
  REQUIRE(result.ok());
  CHECK(result->requests_deleted == 23);
  CHECK(result->batches == 3);
  CHECK(db.Count("SELECT count(*) FROM client_requests WHERE request_id LIKE 'old-%'") == 0);
  CHECK(db.Count("SELECT count(*) FROM client_requests WHERE request_id LIKE 'young-%'") == 4);
}

double Metric(const std::string& series) {
  return testing::ValueOr0(testing::ParseSamples(MetricsRegistry::Default().Render()), series);
}

TEST_CASE("with a pace, a sweep pauses after each full batch for that batch's share of a second") {
  TestDatabase db;
  auto conn = db.Connect();
  const HoldsOrg org = SeedHoldsOrg(*conn, "acme");
  InsertReservations(*conn, org, 25, "held", -1, "due-");
  auto pool = db.MakePool(2);
  FakeClock clock;
  SweeperOptions options = Options(10);
  options.max_rows_per_second = 40;  // a batch of 10 rows is a quarter of a second's share
  Sweeper sweeper(*pool, options, clock);
  absl::StatusOr<SweepResult> result = sweeper.SweepOnce();
  REQUIRE(result.ok());
  CHECK(result->reservations_expired == 25);
  // Batches of 10, 10 and 5: a pause after each full one; the short one ends the pass.
  CHECK(clock.sleeps == std::vector<absl::Duration>{absl::Milliseconds(250),
                                                    absl::Milliseconds(250)});
  CHECK(CountState(db, "due-", "expired") == 25);
}

TEST_CASE("the sweeper's metrics count the rows it ended, its sweeps and its last success") {
  TestDatabase db;
  auto conn = db.Connect();
  const HoldsOrg org = SeedHoldsOrg(*conn, "acme");
  InsertReservations(*conn, org, 25, "held", -1, "due-");
  const std::string rack = testing::InsertRack(*conn, org, "R1");
  for (int unit = 1; unit <= 3; ++unit) {
    testing::InsertBooking(*conn, org, rack, "reservation", unit, unit, -30);
  }
  db.Exec("INSERT INTO client_requests (org_id, request_id, rpc, params_sha256, response, "
          "created_at) SELECT '" + org.org_id + "', 'old-' || n, '/dcl.v1.InventoryService/"
          "CreateSite', sha256('x'), '', now() - interval '8 days' FROM generate_series(1, 7) n");
  const double expired_before = Metric("dcl_sweeper_reservations_expired_total");
  const double released_before = Metric("dcl_sweeper_bookings_released_total");
  const double deleted_before = Metric("dcl_sweeper_client_requests_deleted_total");
  const double success_before = Metric("dcl_sweeper_sweeps_total{outcome=\"success\"}");
  const double failure_before = Metric("dcl_sweeper_sweeps_total{outcome=\"failure\"}");

  auto pool = db.MakePool(2);
  FakeClock clock;
  Sweeper sweeper(*pool, Options(10), clock);
  REQUIRE(sweeper.SweepOnce().ok());
  CHECK(Metric("dcl_sweeper_reservations_expired_total") - expired_before == 25);
  CHECK(Metric("dcl_sweeper_bookings_released_total") - released_before == 3);
  CHECK(Metric("dcl_sweeper_client_requests_deleted_total") - deleted_before == 7);
  CHECK(Metric("dcl_sweeper_sweeps_total{outcome=\"success\"}") - success_before == 1);
  CHECK(Metric("dcl_sweeper_sweeps_total{outcome=\"failure\"}") == failure_before);
  // By the sweeper's clock: when the sweep ended.
  CHECK(Metric("dcl_sweeper_last_success_timestamp_seconds") ==
        absl::ToUnixSeconds(clock.Now()));

  // A failed sweep counts as one and leaves the last success alone.
  const double last_success = Metric("dcl_sweeper_last_success_timestamp_seconds");
  pool->Close();
  absl::Notification never;
  clock.SleepUntil(clock.Now() + absl::Seconds(60), never);
  REQUIRE_FALSE(sweeper.SweepOnce().ok());
  CHECK(Metric("dcl_sweeper_sweeps_total{outcome=\"failure\"}") - failure_before == 1);
  CHECK(Metric("dcl_sweeper_last_success_timestamp_seconds") == last_success);
}

}  // namespace
}  // namespace dcl
