// Released migrations do not change: every file listed in schema/migrations.sum still has its
// checksum (the rolling upgrade found 0028 edited in a comment after release, which made the new
// migrate refuse every database the previous release had migrated). A database that recorded
// 0028's earlier text is accepted; any other checksum is still refused.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "schema/migrator.h"
#include "tests/support/test_db.h"

namespace dcl {
namespace {

std::map<std::string, std::string> FrozenChecksums() {
  const char* root = std::getenv("TEST_SRCDIR");
  REQUIRE(root != nullptr);
  std::ifstream in(std::string(root) + "/dcl/schema/migrations.sum");
  REQUIRE(in.good());
  std::map<std::string, std::string> sums;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string name, sum;
    fields >> name >> sum;
    REQUIRE(sum.size() == 64);
    sums[name] = sum;
  }
  return sums;
}

TEST_CASE("every released migration still has the checksum it was released with") {
  const std::map<std::string, std::string> frozen = FrozenChecksums();
  REQUIRE(frozen.size() >= 20);
  auto migrations = ParseMigrations(EmbeddedMigrationFiles());
  REQUIRE(migrations.ok());
  std::map<std::string, std::string> now;
  for (const Migration& m : *migrations) now[m.name] = m.checksum;
  for (const auto& [name, sum] : frozen) {
    INFO(name << ": a released migration was edited; revert it and add a new migration");
    REQUIRE(now.count(name) == 1);
    CHECK(now.at(name) == sum);
  }
}

TEST_CASE("a database that applied 0028's earlier text is up to date; another checksum is not") {
  testing::TestDatabase db(/*empty=*/true);
  auto migrations = ParseMigrations(EmbeddedMigrationFiles());
  REQUIRE(migrations.ok());
  REQUIRE(Migrate(db.url(), *migrations).ok());
  // As the previous release (before 2eb5e8b reworded 0028's header) recorded it.
  db.Exec("UPDATE schema_migrations SET checksum = "
          "'b1ee025fe4883323d7fd523cfd44ef80a35c680af55169aa17d81822a8c8caf5' WHERE version = 28");
  auto again = Migrate(db.url(), *migrations);
  INFO(again.status().ToString());
  REQUIRE(again.ok());
  CHECK(again->applied == 0);
  db.Exec("UPDATE schema_migrations SET checksum = repeat('0', 64) WHERE version = 28");
  auto edited = Migrate(db.url(), *migrations);
  REQUIRE_FALSE(edited.ok());
  CHECK(edited.status().code() == absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace dcl
