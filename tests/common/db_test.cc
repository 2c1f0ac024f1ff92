// The shared database runtime against a real PostgreSQL: constraint names from real violations,
// savepoints that keep the outer transaction alive, a pool that survives a restart, and what the
// pool tells the metrics (statements per thread, connections in use, waiters).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <atomic>
#include <fstream>
#include <mutex>
#include <set>
#include <optional>
#include <thread>
#include <vector>

#include "services/common/db.h"
#include "services/common/metrics.h"
#include "services/common/status.h"
#include "tests/support/child_process.h"
#include "tests/support/fixtures.h"
#include "tests/support/metrics_scrape.h"
#include "tests/support/test_db.h"

namespace dcl {
namespace {

using testing::TestDatabase;

// Asks tests/run to restart the PostgreSQL server (see DCL_TEST_PG_RESTART there) and waits.
bool RequestServerRestart(const std::string& request_dir) {
  const std::string base = request_dir + "/restart-" + std::to_string(getpid());
  std::ofstream(base + ".req") << "restart\n";
  for (int i = 0; i < 600; ++i) {
    if (std::ifstream(base + ".done").good()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

TEST_CASE("a real unique violation is reported by the violated constraint's name") {
  TestDatabase db;
  const std::string org = testing::CreateOrg(db, "acme");
  auto pool = db.MakePool(2);
  absl::StatusOr<GuardedResult> result = pool->Transact([&](pqxx::work& tx) {
    GuardedResult r = GuardedExec(
        tx, "INSERT INTO sites (org_id, name) VALUES ($1[1]::uuid, $1[2]) RETURNING id::text",
        {org, "FRA1"});
    REQUIRE_FALSE(r.violated());
    REQUIRE(r.returned.has_value());
    r = GuardedExec(
        tx, "INSERT INTO sites (org_id, name) VALUES ($1[1]::uuid, $1[2]) RETURNING id::text",
        {org, "FRA1"});
    return absl::StatusOr<GuardedResult>(r);
  });
  REQUIRE(result.ok());
  CHECK(result->violated());
  CHECK(result->violated_sqlstate == "23505");
  CHECK(result->violated_constraint == "sites_org_name_uq");
  CHECK_FALSE(result->returned.has_value());
}

TEST_CASE("a real check violation is reported by the violated constraint's name") {
  TestDatabase db;
  const std::string org = testing::CreateOrg(db, "acme");
  const std::string site = testing::CreateSite(db, org, "FRA1");
  auto pool = db.MakePool(2);
  absl::StatusOr<GuardedResult> result = pool->Transact([&](pqxx::work& tx) {
    return absl::StatusOr<GuardedResult>(GuardedExec(
        tx,
        "INSERT INTO racks (org_id, site_id, name, first_unit, unit_count, numbering, has_rear) "
        "VALUES ($1[1]::uuid, $1[2]::uuid, 'R1', 1, 0, 'ascending', true) RETURNING id",
        {org, site}));
  });
  REQUIRE(result.ok());
  CHECK(result->violated_sqlstate == "23514");
  CHECK(result->violated_constraint == "racks_unit_count_positive");
}

TEST_CASE("the constraint name comes from the error field, never from the message text") {
  TestDatabase db;
  auto pool = db.MakePool(1);
  // Only the C locale is installed here, so a translated message cannot be shown; instead the
  // error's field and its text disagree on purpose, and the field must win.
  absl::StatusOr<GuardedResult> result = pool->Transact([&](pqxx::work& tx) {
    tx.exec(
        "CREATE FUNCTION pg_temp.raise_mismatch() RETURNS text LANGUAGE plpgsql AS $$ BEGIN "
        "RAISE EXCEPTION USING ERRCODE = 'unique_violation', CONSTRAINT = 'sites_org_name_uq', "
        "MESSAGE = 'doppelter Schlüsselwert verletzt Unique-Constraint \"racks_site_name_uq\"'; "
        "END $$");
    return absl::StatusOr<GuardedResult>(
        GuardedExec(tx, "SELECT pg_temp.raise_mismatch()", {}));
  });
  REQUIRE(result.ok());
  CHECK(result->violated_sqlstate == "23505");
  CHECK(result->violated_constraint == "sites_org_name_uq");
}

TEST_CASE("the outer transaction survives a unique violation inside a savepoint") {
  TestDatabase db;
  const std::string org = testing::CreateOrg(db, "acme");
  auto pool = db.MakePool(1);
  absl::Status status = pool->Transact([&](pqxx::work& tx) -> absl::Status {
    tx.exec_params("INSERT INTO sites (org_id, name) VALUES ($1, 'A')", org);
    bool violated = false;
    {
      Savepoint savepoint(tx, "attempt");
      try {
        // exec_params first: exactly the case in which pqxx::subtransaction sends no SAVEPOINT.
        tx.exec_params("INSERT INTO sites (org_id, name) VALUES ($1, 'A')", org);
        savepoint.Release();
      } catch (const pqxx::unique_violation&) {
        violated = true;
        savepoint.Rollback();
      }
    }
    REQUIRE(violated);
    tx.exec_params("INSERT INTO sites (org_id, name) VALUES ($1, 'B')", org);
    return absl::OkStatus();
  });
  REQUIRE(status.ok());
  CHECK(db.Count("SELECT count(*) FROM sites") == 2);
}

TEST_CASE("without a savepoint the same violation aborts the transaction (the trap is real)") {
  TestDatabase db;
  const std::string org = testing::CreateOrg(db, "acme");
  auto pool = db.MakePool(1);
  absl::Status status = pool->Transact([&](pqxx::work& tx) -> absl::Status {
    tx.exec_params("INSERT INTO sites (org_id, name) VALUES ($1, 'A')", org);
    pqxx::subtransaction sub(tx, "lazy");
    try {
      sub.exec_params("INSERT INTO sites (org_id, name) VALUES ($1, 'A')", org);
    } catch (const pqxx::unique_violation&) {
    }
    tx.exec_params("INSERT INTO sites (org_id, name) VALUES ($1, 'B')", org);
    return absl::OkStatus();
  });
  CHECK_FALSE(status.ok());
  CHECK(db.Count("SELECT count(*) FROM sites") == 0);
}

TEST_CASE("a data exception maps to INVALID_ARGUMENT without driver text") {
  TestDatabase db;
  auto pool = db.MakePool(1);
  absl::Status status = pool->Transact([&](pqxx::work& tx) -> absl::Status {
    tx.exec_params("SELECT $1::uuid", std::string("not-a-uuid"));
    return absl::OkStatus();
  });
  CHECK(status.code() == absl::StatusCode::kInvalidArgument);
  CHECK(ReasonOf(status) == v1::INVALID_INPUT);
  CHECK(std::string(status.message()).find("uuid") == std::string::npos);
}

TEST_CASE("a serialization failure maps to ABORTED") {
  TestDatabase db;
  auto pool = db.MakePool(1);
  absl::Status status = pool->Transact([&](pqxx::work& tx) -> absl::Status {
    tx.exec("DO $$ BEGIN RAISE EXCEPTION USING ERRCODE = 'serialization_failure'; END $$");
    return absl::OkStatus();
  });
  CHECK(status.code() == absl::StatusCode::kAborted);
  CHECK(ReasonOf(status) == v1::RETRY_TRANSACTION);
}

TEST_CASE("the pool reconnects after a terminated backend: the next call succeeds") {
  TestDatabase db;
  auto pool = db.MakePool(2);
  REQUIRE(pool->Ping().ok());
  db.Exec("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
          "WHERE datname = current_database() AND pid <> pg_backend_pid()");
  CHECK(pool->Ping().ok());
}

TEST_CASE("the pool survives pg_ctl restart: the next call succeeds", "[restart]") {
  const char* restart = std::getenv("DCL_TEST_PG_RESTART");
  REQUIRE(restart != nullptr);
  TestDatabase db;
  auto pool = db.MakePool(4);
  // Warm several connections so that every idle one is dead after the restart.
  {
    auto a = pool->Acquire();
    auto b = pool->Acquire();
    REQUIRE(a.ok());
    REQUIRE(b.ok());
  }
  REQUIRE(pool->Ping().ok());
  REQUIRE(RequestServerRestart(restart));
  CHECK(pool->Ping().ok());
  absl::StatusOr<int64_t> count = pool->Transact([](pqxx::work& tx) -> absl::StatusOr<int64_t> {
    return tx.exec1("SELECT count(*) FROM organizations")[0].as<int64_t>();
  });
  CHECK(count.ok());
}

TEST_CASE("settings on every pooled connection bound statements and lock waits") {
  TestDatabase db;
  DbOptions options;
  options.url = db.url();
  options.pool_size = 1;
  options.statement_timeout_ms = 200;
  DbPool pool(options);
  absl::Status status = pool.Transact([](pqxx::work& tx) -> absl::Status {
    tx.exec("SELECT pg_sleep(2)");
    return absl::OkStatus();
  });
  CHECK(status.code() == absl::StatusCode::kDeadlineExceeded);
  absl::StatusOr<std::string> lock_timeout =
      pool.Transact([](pqxx::work& tx) -> absl::StatusOr<std::string> {
        return tx.exec1("SHOW lock_timeout")[0].as<std::string>();
      });
  REQUIRE(lock_timeout.ok());
  CHECK(*lock_timeout == "5s");
}

TEST_CASE("through a transaction pooler every transaction carries its own pool's limits") {
  // Two pools with different limits share PgBouncer's few server connections (tests/run starts
  // it in transaction mode with 5 per database). A session-level SET would stay on whichever
  // server connection ran it and show up in the other pool's transactions; SET LOCAL at the
  // start of each transaction holds whatever connection PgBouncer hands out.
  TestDatabase db;
  auto make_pool = [&](int statement_ms, int lock_ms, int idle_ms) {
    DbOptions options;
    options.url = db.PgBouncerUrl();
    options.pool_size = 6;
    options.statement_timeout_ms = statement_ms;
    options.lock_timeout_ms = lock_ms;
    options.idle_in_transaction_timeout_ms = idle_ms;
    options.transaction_pooler = true;
    return std::make_unique<DbPool>(options);
  };
  auto first = make_pool(1111, 1222, 13333);
  auto second = make_pool(2111, 2222, 23333);
  std::atomic<int> mismatches{0}, failures{0};
  std::set<int64_t> backends;
  std::mutex backends_mu;
  auto run = [&](DbPool& pool, const std::string& expected) {
    for (int i = 0; i < 150; ++i) {
      absl::StatusOr<std::string> seen =
          pool.Transact([&](pqxx::work& tx) -> absl::StatusOr<std::string> {
            pqxx::row row = tx.exec1(
                "SELECT current_setting('statement_timeout') || ' ' || "
                "current_setting('lock_timeout') || ' ' || "
                "current_setting('idle_in_transaction_session_timeout'), pg_backend_pid()");
            std::lock_guard<std::mutex> lock(backends_mu);
            backends.insert(row[1].as<int64_t>());
            return row[0].as<std::string>();
          });
      if (!seen.ok()) {
        ++failures;
      } else if (*seen != expected) {
        ++mismatches;
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back(run, std::ref(*first), "1111ms 1222ms 13333ms");
    threads.emplace_back(run, std::ref(*second), "2111ms 2222ms 23333ms");
  }
  for (std::thread& thread : threads) thread.join();
  CHECK(failures.load() == 0);
  CHECK(mismatches.load() == 0);
  // 12 client connections over at most 5 server connections: they really were shared.
  CHECK(backends.size() <= 5);

  // The limit is enforced, not only visible.
  absl::Status slow = first->Transact([](pqxx::work& tx) -> absl::Status {
    tx.exec("SELECT pg_sleep(3)");
    return absl::OkStatus();
  });
  CHECK(slow.code() == absl::StatusCode::kDeadlineExceeded);
}

TEST_CASE("autocommit statements are cut off by the pool's limits too, through a transaction "
          "pooler as well") {
  // Without a pooler the limits are the session's and hold for autocommit statements; behind
  // PgBouncer in transaction mode SET LOCAL applied to explicit transactions only, and a Reserve
  // (one autocommit statement) could wait on a key's advisory lock without end.
  const bool through_pooler = GENERATE(false, true);
  INFO((through_pooler ? "through PgBouncer" : "direct"));
  TestDatabase db;
  db.Exec("CREATE TABLE autocommit_probe (x int PRIMARY KEY)");
  db.Exec("GRANT SELECT, INSERT ON autocommit_probe TO dcl_app");
  DbOptions options;
  options.url = through_pooler ? db.PgBouncerUrl() : db.service_url();
  options.pool_size = 2;
  options.statement_timeout_ms = 400;
  options.lock_timeout_ms = 300;
  options.transaction_pooler = through_pooler;
  DbPool pool(options);

  absl::StatusOr<std::string> seen =
      pool.AutocommitIdempotent([](pqxx::nontransaction& tx) -> absl::StatusOr<std::string> {
        return tx.exec1("SELECT current_setting('statement_timeout') || ' ' || "
                        "current_setting('lock_timeout')")[0]
            .as<std::string>();
      });
  REQUIRE(seen.ok());
  CHECK(*seen == "400ms 300ms");

  // A slow statement: cut off, DEADLINE_EXCEEDED.
  const auto started = std::chrono::steady_clock::now();
  absl::Status slow = pool.AutocommitIdempotent([](pqxx::nontransaction& tx) -> absl::Status {
    tx.exec("SELECT pg_sleep(4)");
    return absl::OkStatus();
  });
  CHECK(slow.code() == absl::StatusCode::kDeadlineExceeded);
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(3));

  // A wait on an advisory lock another session holds (as a Reserve waits on its key's): cut off
  // by lock_timeout, ABORTED. The holder lets go after 4 s at the latest, so that a pool without
  // the limit answers (wrongly) instead of hanging the test.
  auto holder_conn = db.Connect();
  pqxx::work holder(*holder_conn);
  holder.exec("SELECT pg_advisory_xact_lock(4242)");
  std::atomic<bool> answered{false};
  absl::Status waited;
  std::thread waiter([&] {
    waited = pool.AutocommitIdempotent([](pqxx::nontransaction& tx) -> absl::Status {
      tx.exec("SELECT pg_advisory_xact_lock(4242)");
      return absl::OkStatus();
    });
    answered = true;
  });
  for (int i = 0; i < 40 && !answered; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const bool answered_while_held = answered.load();
  holder.commit();
  waiter.join();
  CHECK(answered_while_held);
  CHECK(waited.code() == absl::StatusCode::kAborted);

  // The connections went back clean, and autocommit work still commits as it runs: a write is
  // seen by another session at once, and a callback that goes on after a failed statement
  // (RestartAfterFailedStatement) writes what comes after.
  REQUIRE(pool.AutocommitIdempotent([](pqxx::nontransaction& tx) -> absl::Status {
                tx.exec("INSERT INTO autocommit_probe VALUES (1)");
                return absl::OkStatus();
              })
              .ok());
  CHECK(db.Count("SELECT count(*) FROM autocommit_probe WHERE x = 1") == 1);
  absl::Status went_on = pool.AutocommitIdempotent([](pqxx::nontransaction& tx) -> absl::Status {
    try {
      tx.exec("INSERT INTO autocommit_probe VALUES (1)");
    } catch (const pqxx::unique_violation&) {
      RestartAfterFailedStatement(tx);
    }
    tx.exec("INSERT INTO autocommit_probe VALUES (2)");
    return absl::OkStatus();
  });
  CHECK(went_on.ok());
  CHECK(db.Count("SELECT count(*) FROM autocommit_probe") == 2);
  for (int i = 0; i < 4; ++i) {
    absl::StatusOr<int64_t> ok =
        pool.AutocommitIdempotent([](pqxx::nontransaction& tx) -> absl::StatusOr<int64_t> {
          return tx.exec1("SELECT count(*) FROM autocommit_probe")[0].as<int64_t>();
        });
    CHECK(ok.ok());
  }
}

// ExecCached (db.h): a named prepared statement where the pool's connections are the session's
// own, a plain parameterised statement behind a transaction pooler and outside a pool's callback.
TEST_CASE("ExecCached prepares on a pool's own connections, and nowhere else") {
  TestDatabase db;
  const std::string sql = "SELECT $1::int + 1";
  const std::string name = PreparedStatementName(sql);
  // Runs the statement, then asks the same session whether it now holds a statement by that name.
  auto run = [&](pqxx::transaction_base& tx) {
    CHECK(ExecCached1(tx, sql, 41)[0].as<int>() == 42);
    return tx.exec_params1("SELECT count(*) FROM pg_prepared_statements WHERE name = $1", name)[0]
        .as<int>();
  };
  auto direct = db.MakePool(1);
  CHECK(direct->Transact([&](pqxx::work& tx) -> absl::StatusOr<int> { return run(tx); }).value() ==
        1);
  CHECK(direct
            ->AutocommitIdempotent(
                [&](pqxx::nontransaction& tx) -> absl::StatusOr<int> { return run(tx); })
            .value() == 1);
  CHECK_FALSE(PreparedStatementsOnThisThread());  // the scope ended with the callback

  DbOptions pooled;
  pooled.url = db.service_url();
  pooled.pool_size = 1;
  pooled.transaction_pooler = true;  // as configured behind PgBouncer
  DbPool marked(pooled);
  CHECK(marked.Transact([&](pqxx::work& tx) -> absl::StatusOr<int> { return run(tx); }).value() ==
        0);

  auto conn = db.Connect();
  pqxx::work outside(*conn);
  CHECK(run(outside) == 0);
  outside.abort();

  // Through the real PgBouncer (transaction mode, 5 server connections): a prepared statement
  // would reach server connections that never saw it; the plain statement always runs.
  pooled.url = db.PgBouncerUrl();
  pooled.pool_size = 6;
  DbPool bouncer(pooled);
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 30; ++i) {
        absl::StatusOr<int> r = bouncer.Transact([&](pqxx::work& tx) -> absl::StatusOr<int> {
          return ExecCached1(tx, sql, i)[0].as<int>();
        });
        if (!r.ok() || *r != i + 1) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(failures == 0);
}

TEST_CASE("statements are counted on their thread: BEGIN, each statement, COMMIT or ROLLBACK") {
  TestDatabase db;
  auto pool = db.MakePool(2);
  // The first unit of work opens the connection; its setup (SETs, registration) is not counted.
  uint64_t before = DbStatementsOnThisThread();
  absl::Status status = pool->Transact([](pqxx::work& tx) -> absl::Status {
    tx.exec("SELECT 1");
    tx.exec_params("SELECT $1::int", 2);
    return absl::OkStatus();
  });
  REQUIRE(status.ok());
  CHECK(DbStatementsOnThisThread() - before == 4);

  // A failing statement counts, and so does the ROLLBACK after it.
  before = DbStatementsOnThisThread();
  status = pool->Transact([](pqxx::work& tx) -> absl::Status {
    tx.exec("SELECT 1/0");
    return absl::OkStatus();
  });
  CHECK(status.code() == absl::StatusCode::kInvalidArgument);
  CHECK(DbStatementsOnThisThread() - before == 3);

  // A refusal rolls back: BEGIN, the statement, ROLLBACK.
  before = DbStatementsOnThisThread();
  status = pool->Transact([](pqxx::work& tx) -> absl::Status {
    tx.exec("SELECT 1");
    return absl::FailedPreconditionError("no");
  });
  CHECK(status.code() == absl::StatusCode::kFailedPrecondition);
  CHECK(DbStatementsOnThisThread() - before == 3);

  // Statements of another thread are that thread's.
  before = DbStatementsOnThisThread();
  uint64_t other_thread = 0;
  std::thread([&] {
    const uint64_t start = DbStatementsOnThisThread();
    REQUIRE(pool->Ping().ok());
    other_thread = DbStatementsOnThisThread() - start;
  }).join();
  CHECK(other_thread == 3);
  CHECK(DbStatementsOnThisThread() - before == 0);
}

TEST_CASE("the pool gauges follow the pool: size, leases, idle connections and waiters") {
  auto gauge = [](const std::string& name) {
    return testing::ValueOr0(testing::ParseSamples(MetricsRegistry::Default().Render()), name);
  };
  TestDatabase db;
  const double max_before = gauge("dcl_db_pool_connections_max");
  const double in_use_before = gauge("dcl_db_pool_connections_in_use");
  const double idle_before = gauge("dcl_db_pool_connections_idle");
  const double waiters_before = gauge("dcl_db_pool_waiters");
  {
    DbOptions options;
    options.url = db.url();
    options.pool_size = 1;
    DbPool pool(options);
    CHECK(gauge("dcl_db_pool_connections_max") - max_before == 1);
    {
      absl::StatusOr<DbPool::Lease> acquired = pool.Acquire();
      REQUIRE(acquired.ok());
      std::optional<DbPool::Lease> lease(std::move(*acquired));
      CHECK(gauge("dcl_db_pool_connections_in_use") - in_use_before == 1);
      // A second caller waits for the one connection (Acquire waits up to 5 s).
      bool waiter_ok = false;
      std::thread waiter([&] { waiter_ok = pool.Ping().ok(); });
      CHECK(testing::WaitUntil(
          [&] { return gauge("dcl_db_pool_waiters") - waiters_before == 1; },
          std::chrono::seconds(4)));
      lease.reset();  // back to the pool: the waiter takes it
      waiter.join();
      CHECK(waiter_ok);
    }
    CHECK(gauge("dcl_db_pool_waiters") == waiters_before);
    CHECK(gauge("dcl_db_pool_connections_in_use") == in_use_before);
    CHECK(gauge("dcl_db_pool_connections_idle") - idle_before == 1);
  }
  // A destroyed pool takes its share with it.
  CHECK(gauge("dcl_db_pool_connections_max") == max_before);
  CHECK(gauge("dcl_db_pool_connections_idle") == idle_before);
}

}  // namespace
}  // namespace dcl
