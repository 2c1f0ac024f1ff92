// The migrator's online-safety against a real PostgreSQL: a DDL blocked by a held lock gives up
// within lock_timeout and retries, while a writer on the same table keeps writing (and, as the
// comparison, stalls for the whole hold without a lock_timeout); retries are bounded; concurrent
// index builds apply under writes, and a failed one leaves no INVALID index behind; VALIDATE runs
// in its own step after NOT VALID. The statement splitter of no-transaction migrations is tested
// on its own.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>

#include "absl/synchronization/notification.h"
#include "schema/migrator.h"
#include "tests/support/child_process.h"
#include "tests/support/test_db.h"

namespace dcl {
namespace {

using Clock = std::chrono::steady_clock;

Migration Make(int version, const std::string& sql) {
  auto parsed = ParseMigrations({{absl::StrCat(version < 10 ? "000" : "00", version, "_test.sql"),
                                  sql}});
  REQUIRE(parsed.ok());
  REQUIRE(parsed->size() == 1);
  return (*parsed)[0];
}

const char kTable[] =
    "CREATE TABLE t (id bigserial PRIMARY KEY, v integer NOT NULL);"
    "INSERT INTO t (v) SELECT g FROM generate_series(1, 20000) g;";

// Fast retries, so the tests take a moment.
MigrateOptions QuickRetries(int lock_timeout_ms, int attempts) {
  MigrateOptions options;
  options.lock_timeout = absl::Milliseconds(lock_timeout_ms);
  options.max_attempts = attempts;
  options.first_backoff = absl::Milliseconds(20);
  options.max_backoff = absl::Milliseconds(200);
  return options;
}

// One client inserting into t in autocommit, one statement at a time, until stopped; the
// longest single INSERT is the longest a writer stalled.
class Writer {
 public:
  explicit Writer(const testing::TestDatabase& db) : conn_(db.Connect()) {
    thread_ = std::thread([this] {
      while (!stop_.load()) {
        const auto start = Clock::now();
        pqxx::nontransaction tx(*conn_);
        tx.exec("INSERT INTO t (v) VALUES (7)");
        const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
        longest_ms_ = std::max<int64_t>(longest_ms_.load(), took.count());
        ++writes_;
      }
    });
  }
  ~Writer() { Stop(); }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  int64_t longest_ms() const { return longest_ms_.load(); }
  int64_t writes() const { return writes_.load(); }

 private:
  std::unique_ptr<pqxx::connection> conn_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> longest_ms_{0};
  std::atomic<int64_t> writes_{0};
  std::thread thread_;
};

// A transaction that runs `statement` (taking its locks) and stays open until Release(), or
// for `hold` when given one.
class LockHolder {
 public:
  LockHolder(const testing::TestDatabase& db, const std::string& statement)
      : conn_(db.Connect()) {
    absl::Notification locked;
    thread_ = std::thread([this, statement, &locked] {
      pqxx::work tx(*conn_);
      tx.exec(statement);
      locked.Notify();
      release_.WaitForNotification();
      tx.commit();
    });
    locked.WaitForNotification();
  }
  ~LockHolder() { Release(); }
  void Release() {
    if (!release_.HasBeenNotified()) release_.Notify();
    if (thread_.joinable()) thread_.join();
  }
  // Releases after `delay`, from a thread of its own.
  std::thread ReleaseAfter(std::chrono::milliseconds delay) {
    return std::thread([this, delay] {
      std::this_thread::sleep_for(delay);
      release_.Notify();
    });
  }

 private:
  std::unique_ptr<pqxx::connection> conn_;
  absl::Notification release_;
  std::thread thread_;
};

int64_t InvalidIndexes(const testing::TestDatabase& db) {
  return db.Count("SELECT count(*) FROM pg_index WHERE NOT indisvalid");
}

TEST_CASE("a DDL blocked by a held lock times out and retries while a writer keeps writing") {
  testing::TestDatabase db(/*empty=*/true);
  REQUIRE(Migrate(db.url(), {Make(1, kTable)}).ok());
  Writer writer(db);
  // A reader in a long transaction: its ACCESS SHARE lock conflicts with ALTER TABLE's ACCESS
  // EXCLUSIVE; every INSERT after the ALTER's lock request would queue behind that request.
  LockHolder reader(db, "SELECT count(*) FROM t");
  std::thread release = reader.ReleaseAfter(std::chrono::milliseconds(2000));
  const int64_t writes_before = writer.writes();
  const auto start = Clock::now();
  auto result = Migrate(db.url(), {Make(1, kTable), Make(2, "ALTER TABLE t ADD COLUMN note text")},
                        QuickRetries(100, 200));
  const auto took = Clock::now() - start;
  release.join();
  writer.Stop();
  INFO(result.status().ToString());
  REQUIRE(result.ok());
  CHECK(result->applied == 1);
  CHECK(result->lock_timeouts >= 3);
  CHECK(took >= std::chrono::milliseconds(1900));
  CHECK(db.Count("SELECT count(*) FROM information_schema.columns "
                 "WHERE table_name = 't' AND column_name = 'note'") == 1);
  // Writes went on during the two seconds of the hold, none waited long.
  CHECK(writer.writes() - writes_before > 20);
  CHECK(writer.longest_ms() < 1000);
}

TEST_CASE("without a lock_timeout the same DDL stalls the writer for the whole hold") {
  // What every migration did before: the measurement above can see a stall.
  testing::TestDatabase db(/*empty=*/true);
  REQUIRE(Migrate(db.url(), {Make(1, kTable)}).ok());
  Writer writer(db);
  LockHolder reader(db, "SELECT count(*) FROM t");
  std::thread release = reader.ReleaseAfter(std::chrono::milliseconds(2000));
  auto result = Migrate(db.url(), {Make(1, kTable), Make(2, "ALTER TABLE t ADD COLUMN note text")},
                        QuickRetries(0, 1));
  release.join();
  writer.Stop();
  REQUIRE(result.ok());
  CHECK(result->lock_timeouts == 0);
  CHECK(writer.longest_ms() >= 1500);
}

TEST_CASE("retries are bounded: a lock held for good aborts the migration, nothing recorded") {
  testing::TestDatabase db(/*empty=*/true);
  REQUIRE(Migrate(db.url(), {Make(1, kTable)}).ok());
  LockHolder reader(db, "SELECT count(*) FROM t");
  const auto start = Clock::now();
  auto result = Migrate(db.url(), {Make(1, kTable), Make(2, "ALTER TABLE t ADD COLUMN note text")},
                        QuickRetries(50, 4));
  const auto took = Clock::now() - start;
  reader.Release();
  REQUIRE_FALSE(result.ok());
  CHECK(result.status().code() == absl::StatusCode::kAborted);
  CHECK(std::string(result.status().message()).find("could not get its locks in 4 attempts") !=
        std::string::npos);
  CHECK(took < std::chrono::seconds(5));
  CHECK(db.Count("SELECT count(*) FROM schema_migrations WHERE version = 2") == 0);
  CHECK(db.Count("SELECT count(*) FROM information_schema.columns "
                 "WHERE table_name = 't' AND column_name = 'note'") == 0);
}

TEST_CASE("a migration chosen as a deadlock's victim is rolled back and tried again") {
  testing::TestDatabase db(/*empty=*/true);
  const Migration tables = Make(1, "CREATE TABLE a (v integer); CREATE TABLE b (v integer);");
  REQUIRE(Migrate(db.url(), {tables}).ok());
  // A writer holds b and, once the migration (holding a) waits for b, writes to a: a deadlock.
  // The migration waited first, so its deadlock check (deadlock_timeout, 1 s) fires first and
  // it is the victim (libpqxx 6 throws deadlock_detected, which is no sql_error).
  auto writer_conn = db.Connect();
  absl::Notification holding_b;
  std::thread writer([&] {
    pqxx::work tx(*writer_conn);
    tx.exec("INSERT INTO b VALUES (1)");
    holding_b.Notify();
    auto watcher = db.Connect();
    testing::WaitUntil(
        [&] {
          pqxx::nontransaction read(*watcher);
          return read.exec("SELECT 1 FROM pg_locks l JOIN pg_class c ON c.oid = l.relation "
                           "WHERE c.relname = 'b' AND NOT l.granted")
                     .size() > 0;
        },
        std::chrono::seconds(10));
    tx.exec("INSERT INTO a VALUES (1)");
    tx.commit();
  });
  holding_b.WaitForNotification();
  auto result = Migrate(db.url(),
                        {tables, Make(2, "ALTER TABLE a ADD COLUMN w integer;"
                                         "ALTER TABLE b ADD COLUMN w integer;")},
                        QuickRetries(10000, 5));
  writer.join();
  INFO(result.status().ToString());
  REQUIRE(result.ok());
  CHECK(result->lock_timeouts >= 1);
  CHECK(db.Count("SELECT count(*) FROM a") == 1);
}

TEST_CASE("a concurrent index build applies while a writer keeps writing") {
  testing::TestDatabase db(/*empty=*/true);
  REQUIRE(Migrate(db.url(), {Make(1, kTable)}).ok());
  db.Exec("INSERT INTO t (v) SELECT g FROM generate_series(1, 300000) g");
  const Migration build = Make(2,
                               "-- dcl:no-transaction\n"
                               "-- the index the listing needs\n"
                               "CREATE INDEX CONCURRENTLY IF NOT EXISTS t_v_idx ON t (v);\n");
  CHECK_FALSE(build.transactional);
  Writer writer(db);
  auto result = Migrate(db.url(), {Make(1, kTable), build}, QuickRetries(500, 30));
  writer.Stop();
  INFO(result.status().ToString());
  REQUIRE(result.ok());
  CHECK(result->applied == 1);
  CHECK(db.Count("SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                 "WHERE c.relname = 't_v_idx' AND i.indisvalid") == 1);
  CHECK(writer.longest_ms() < 1000);
  CHECK(writer.writes() > 0);
}

TEST_CASE("a concurrent build whose wait times out is retried cleanly: one valid index, no "
          "invalid one") {
  testing::TestDatabase db(/*empty=*/true);
  REQUIRE(Migrate(db.url(), {Make(1, kTable)}).ok());
  // An open writing transaction: CREATE INDEX CONCURRENTLY waits for it after it has entered
  // the (invalid) index into the catalog, so each timed-out attempt leaves one behind.
  LockHolder writer(db, "INSERT INTO t (v) VALUES (1)");
  std::thread release = writer.ReleaseAfter(std::chrono::milliseconds(1500));
  auto result =
      Migrate(db.url(),
              {Make(1, kTable),
               Make(2, "-- dcl:no-transaction\nCREATE INDEX CONCURRENTLY IF NOT EXISTS t_v_idx "
                       "ON t (v);")},
              QuickRetries(100, 200));
  release.join();
  INFO(result.status().ToString());
  REQUIRE(result.ok());
  CHECK(result->lock_timeouts >= 1);
  CHECK(result->invalid_indexes_dropped >= 1);
  CHECK(db.Count("SELECT count(*) FROM pg_class WHERE relname = 't_v_idx'") == 1);
  CHECK(InvalidIndexes(db) == 0);
}

TEST_CASE("a unique concurrent build that fails on duplicates leaves no invalid index, and "
          "applies once they are gone") {
  testing::TestDatabase db(/*empty=*/true);
  REQUIRE(Migrate(db.url(), {Make(1, kTable)}).ok());
  db.Exec("INSERT INTO t (v) VALUES (5)");  // 5 twice
  const std::vector<Migration> migrations = {
      Make(1, kTable),
      Make(2, "-- dcl:no-transaction\nCREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS t_v_uq "
              "ON t (v);")};
  auto failed = Migrate(db.url(), migrations, QuickRetries(500, 5));
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.status().code() == absl::StatusCode::kInternal);
  CHECK(std::string(failed.status().message()).find("23505") != std::string::npos);
  CHECK(db.Count("SELECT count(*) FROM pg_class WHERE relname = 't_v_uq'") == 0);
  CHECK(InvalidIndexes(db) == 0);
  CHECK(db.Count("SELECT count(*) FROM schema_migrations WHERE version = 2") == 0);

  db.Exec("DELETE FROM t WHERE id = (SELECT max(id) FROM t WHERE v = 5)");
  auto applied = Migrate(db.url(), migrations, QuickRetries(500, 5));
  INFO(applied.status().ToString());
  REQUIRE(applied.ok());
  CHECK(db.Count("SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                 "WHERE c.relname = 't_v_uq' AND i.indisvalid") == 1);
}

TEST_CASE("an invalid index left by a crashed build is rebuilt, not taken for done by IF NOT "
          "EXISTS") {
  testing::TestDatabase db(/*empty=*/true);
  REQUIRE(Migrate(db.url(), {Make(1, kTable)}).ok());
  db.Exec("INSERT INTO t (v) VALUES (5)");
  {
    // What a migrator killed mid-build (or an operator's failed attempt) leaves behind.
    auto conn = db.Connect();
    pqxx::nontransaction tx(*conn);
    CHECK_THROWS(tx.exec("CREATE UNIQUE INDEX CONCURRENTLY t_v_uq ON t (v)"));
  }
  REQUIRE(InvalidIndexes(db) == 1);
  db.Exec("DELETE FROM t WHERE id = (SELECT max(id) FROM t WHERE v = 5)");
  auto result = Migrate(
      db.url(),
      {Make(1, kTable),
       Make(2, "-- dcl:no-transaction\nCREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS t_v_uq "
               "ON t (v);")},
      QuickRetries(500, 5));
  INFO(result.status().ToString());
  REQUIRE(result.ok());
  CHECK(result->invalid_indexes_dropped == 1);
  CHECK(InvalidIndexes(db) == 0);
  CHECK(db.Count("SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                 "WHERE c.relname = 't_v_uq' AND i.indisvalid") == 1);
}

TEST_CASE("a constraint added NOT VALID is validated in a step of its own under writes") {
  testing::TestDatabase db(/*empty=*/true);
  REQUIRE(Migrate(db.url(), {Make(1, kTable)}).ok());
  db.Exec("INSERT INTO t (v) SELECT g FROM generate_series(1, 200000) g");
  Writer writer(db);
  auto result = Migrate(
      db.url(),
      {Make(1, kTable),
       Make(2, "ALTER TABLE t ADD CONSTRAINT t_v_positive CHECK (v > 0) NOT VALID;"),
       Make(3, "-- dcl:no-transaction\nALTER TABLE t VALIDATE CONSTRAINT t_v_positive;")},
      QuickRetries(500, 30));
  writer.Stop();
  INFO(result.status().ToString());
  REQUIRE(result.ok());
  CHECK(result->applied == 2);
  CHECK(db.Count("SELECT count(*) FROM pg_constraint WHERE conname = 't_v_positive' AND "
                 "convalidated") == 1);
  CHECK(writer.longest_ms() < 1000);
}

TEST_CASE("the marker must be the first line") {
  CHECK_FALSE(Make(2, "-- dcl:no-transaction\nSELECT 1;").transactional);
  CHECK_FALSE(Make(2, "-- dcl:no-transaction  \r\nSELECT 1;").transactional);
  CHECK(Make(2, "-- an index\n-- dcl:no-transaction\nSELECT 1;").transactional);
  CHECK(Make(2, "-- dcl:no-transactions\nSELECT 1;").transactional);
}

TEST_CASE("statements split at semicolons outside comments, strings and dollar quotes") {
  auto split = SplitStatements(
      "-- a comment; not a statement\n"
      "CREATE INDEX CONCURRENTLY IF NOT EXISTS a ON t (v);\n"
      "/* block; comment */ COMMENT ON TABLE t IS 'it''s; fine';\n"
      "CREATE FUNCTION f() RETURNS int LANGUAGE sql AS $body$ SELECT 1; $body$;\n"
      "DO $$ BEGIN PERFORM 1; END $$;\n"
      "SELECT \"odd;name\" FROM t WHERE v = $1;;\n"
      "-- trailing comment\n");
  REQUIRE(split.ok());
  REQUIRE(split->size() == 5);
  CHECK((*split)[0] == "-- a comment; not a statement\nCREATE INDEX CONCURRENTLY IF NOT EXISTS a "
                       "ON t (v)");
  CHECK((*split)[1] == "/* block; comment */ COMMENT ON TABLE t IS 'it''s; fine'");
  CHECK((*split)[2] == "CREATE FUNCTION f() RETURNS int LANGUAGE sql AS $body$ SELECT 1; $body$");
  CHECK((*split)[3] == "DO $$ BEGIN PERFORM 1; END $$");
  CHECK((*split)[4] == "SELECT \"odd;name\" FROM t WHERE v = $1");
  for (const char* broken : {"SELECT 'open", "SELECT \"open", "/* open", "DO $x$ open $y$"}) {
    INFO(broken);
    CHECK(SplitStatements(broken).status().code() == absl::StatusCode::kInvalidArgument);
  }
  auto empty = SplitStatements("-- only a comment\n;\n");
  REQUIRE(empty.ok());
  CHECK(empty->empty());
}

}  // namespace
}  // namespace dcl
