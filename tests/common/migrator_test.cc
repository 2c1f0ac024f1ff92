// The migrator against real, empty databases.
#include <catch2/catch.hpp>

#include <thread>

#include "schema/migrator.h"
#include "tests/support/test_db.h"

namespace dcl {
namespace {

std::vector<Migration> Embedded() {
  auto migrations = ParseMigrations(EmbeddedMigrationFiles());
  REQUIRE(migrations.ok());
  REQUIRE(!migrations->empty());
  return *migrations;
}

TEST_CASE("applying the migrations twice is a no-op the second time") {
  testing::TestDatabase db(/*empty=*/true);
  const std::vector<Migration> migrations = Embedded();
  auto first = Migrate(db.url(), migrations);
  REQUIRE(first.ok());
  CHECK(first->applied == static_cast<int>(migrations.size()));
  auto second = Migrate(db.url(), migrations);
  REQUIRE(second.ok());
  CHECK(second->applied == 0);
  CHECK(second->already_applied == static_cast<int>(migrations.size()));
  CHECK(db.Count("SELECT count(*) FROM schema_migrations") ==
        static_cast<int64_t>(migrations.size()));
}

TEST_CASE("two concurrent migrators apply each migration exactly once") {
  testing::TestDatabase db(/*empty=*/true);
  const std::vector<Migration> migrations = Embedded();
  absl::StatusOr<MigrateResult> a, b;
  std::thread ta([&] { a = Migrate(db.url(), migrations); });
  std::thread tb([&] { b = Migrate(db.url(), migrations); });
  ta.join();
  tb.join();
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a->applied + b->applied == static_cast<int>(migrations.size()));
  CHECK(db.Count("SELECT count(*) FROM schema_migrations") ==
        static_cast<int64_t>(migrations.size()));
}

TEST_CASE("an applied migration whose text changed is refused with a clear error") {
  testing::TestDatabase db(/*empty=*/true);
  std::vector<MigrationFile> files = EmbeddedMigrationFiles();
  auto original = ParseMigrations(files);
  REQUIRE(original.ok());
  REQUIRE(Migrate(db.url(), *original).ok());
  files[0].sql += "\n-- edited after the fact\n";
  auto edited = ParseMigrations(files);
  REQUIRE(edited.ok());
  auto result = Migrate(db.url(), *edited);
  REQUIRE_FALSE(result.ok());
  CHECK(result.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(std::string(result.status().message()).find("was changed after it was applied") !=
        std::string::npos);
}

TEST_CASE("malformed or duplicate migration file names are refused") {
  CHECK_FALSE(ParseMigrations({{"base.sql", "SELECT 1"}}).ok());
  CHECK_FALSE(ParseMigrations({{"0001_a.sql", "SELECT 1"}, {"0001_b.sql", "SELECT 1"}}).ok());
  auto ok = ParseMigrations({{"0002_b.sql", "SELECT 2"}, {"0001_a.sql", "SELECT 1"}});
  REQUIRE(ok.ok());
  CHECK((*ok)[0].version == 1);
}

}  // namespace
}  // namespace dcl
