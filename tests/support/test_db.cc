#include "tests/support/test_db.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <random>
#include <regex>
#include <stdexcept>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace dcl::testing {

namespace {

std::string RequiredEnv(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') {
    throw std::runtime_error(absl::StrCat(
        name, " is not set: database tests run through tests/run, which starts PostgreSQL"));
  }
  return value;
}

std::string UniqueName() {
  static std::atomic<int> counter{0};
  std::random_device random;
  return absl::StrCat("t_", getpid(), "_", counter++, "_", random() % 1000000);
}

}  // namespace

std::string AdminConnInfo() { return RequiredEnv("DCL_TEST_CONNINFO") + " dbname=postgres"; }

std::vector<std::string> FunctionStatements(
    const TestDatabase& db, const std::string& function, const std::string& pattern,
    const std::vector<std::pair<std::string, std::string>>& replacements) {
  const std::string source =
      db.Scalar(absl::StrCat("SELECT prosrc FROM pg_proc WHERE proname = '", function, "'"));
  std::vector<std::string> statements;
  const std::regex statement(pattern);
  for (auto it = std::sregex_iterator(source.begin(), source.end(), statement);
       it != std::sregex_iterator(); ++it) {
    const std::string sql = std::regex_replace((*it)[0].str(), std::regex(R"(\s+)"), " ");
    statements.push_back(absl::StrReplaceAll(sql, replacements));
  }
  return statements;
}

TestDatabase::TestDatabase(bool empty) : name_(UniqueName()) {
  const std::string base = RequiredEnv("DCL_TEST_CONNINFO");
  const std::string source = empty ? "template0" : RequiredEnv("DCL_TEST_TEMPLATE");
  pqxx::connection admin(AdminConnInfo());
  pqxx::nontransaction tx(admin);
  tx.exec(absl::StrCat("CREATE DATABASE ", name_, " TEMPLATE ", source));
  url_ = absl::StrCat(base, " dbname=", name_);
  // libpq takes the last of repeated keywords: this user replaces the base's.
  service_url_ = absl::StrCat(url_, " user=", RequiredEnv("DCL_TEST_SERVICE_ROLE"));
}

TestDatabase::~TestDatabase() {
  try {
    pqxx::connection admin(AdminConnInfo());
    pqxx::nontransaction tx(admin);
    tx.exec(absl::StrCat("DROP DATABASE IF EXISTS ", name_, " WITH (FORCE)"));
  } catch (const std::exception&) {
    // A leftover database in a throwaway cluster is harmless.
  }
}

std::string TestDatabase::PgBouncerUrl() const {
  return absl::StrCat(RequiredEnv("DCL_TEST_PGBOUNCER_CONNINFO"), " dbname=", name_, " user=",
                      RequiredEnv("DCL_TEST_SERVICE_ROLE"));
}

std::unique_ptr<DbPool> TestDatabase::MakePool(int size) const {
  DbOptions options;
  options.url = service_url_;
  options.pool_size = size;
  options.acquire_timeout = absl::Seconds(30);
  return std::make_unique<DbPool>(options);
}

std::unique_ptr<pqxx::connection> TestDatabase::Connect() const {
  return std::make_unique<pqxx::connection>(url_);
}

pqxx::result TestDatabase::Exec(const std::string& sql) const {
  pqxx::connection conn(url_);
  pqxx::work tx(conn);
  pqxx::result result = tx.exec(sql);
  tx.commit();
  return result;
}

std::string TestDatabase::Scalar(const std::string& sql) const {
  pqxx::result result = Exec(sql);
  if (result.size() != 1 || result.columns() != 1) {
    throw std::runtime_error("Scalar: expected one value from: " + sql);
  }
  return result[0][0].is_null() ? "" : result[0][0].as<std::string>();
}

int64_t TestDatabase::Count(const std::string& sql) const {
  return std::stoll(Scalar(sql));
}

}  // namespace dcl::testing
