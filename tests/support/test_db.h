// A fresh PostgreSQL database per test, cloned from the migrated template that tests/run
// prepares (DCL_TEST_CONNINFO, DCL_TEST_TEMPLATE), and dropped afterwards. Tests are independent
// and may run in parallel. Without those variables a test fails: run it through tests/run.
#ifndef DCL_TESTS_SUPPORT_TEST_DB_H_
#define DCL_TESTS_SUPPORT_TEST_DB_H_

#include <memory>
#include <pqxx/pqxx>
#include <string>
#include <utility>
#include <vector>

#include "services/common/db.h"

namespace dcl::testing {

class TestDatabase {
 public:
  // Cloned from the migrated template, or empty (no schema) for migrator tests.
  explicit TestDatabase(bool empty = false);
  TestDatabase(const TestDatabase&) = delete;
  TestDatabase& operator=(const TestDatabase&) = delete;
  ~TestDatabase();

  // As the owner of every table (the migrating role): for fixtures, migrations and audits.
  const std::string& url() const { return url_; }
  // As the services connect: a member of dcl_app that owns nothing (migration 0009), so the
  // tests run the services with the privileges they have in production.
  const std::string& service_url() const { return service_url_; }
  // The same database through the test run's PgBouncer in transaction mode
  // (DCL_TEST_PGBOUNCER_CONNINFO, started by tests/run), as the services' role; throws when
  // there is none.
  std::string PgBouncerUrl() const;
  const std::string& name() const { return name_; }

  // A pool as a service has it: connected with service_url().
  std::unique_ptr<DbPool> MakePool(int size = 16) const;
  std::unique_ptr<pqxx::connection> Connect() const;

  // Runs one statement in its own transaction; returns the result.
  pqxx::result Exec(const std::string& sql) const;
  // The single value of a single-row, single-column query, as text ("" for NULL).
  std::string Scalar(const std::string& sql) const;
  int64_t Count(const std::string& sql) const;

 private:
  std::string name_;
  std::string url_;
  std::string service_url_;
};

// The admin connection string (database "postgres") of the test cluster.
std::string AdminConnInfo();

// The statements of the installed function `function` (its source as pg_proc holds it) that
// match `pattern` (ECMAScript), in order, with runs of whitespace made one space and each
// `replacements` pair applied (a PL/pgSQL variable and the parameter that stands for it, or
// " INTO v" and ""), so that a test can PREPARE and EXPLAIN them as the function runs them.
std::vector<std::string> FunctionStatements(
    const TestDatabase& db, const std::string& function, const std::string& pattern,
    const std::vector<std::pair<std::string, std::string>>& replacements);

}  // namespace dcl::testing

#endif  // DCL_TESTS_SUPPORT_TEST_DB_H_
