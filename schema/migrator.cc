#include "schema/migrator.h"

#include <openssl/sha.h>

#include <algorithm>
#include <map>

#include <pqxx/pqxx>
#include <spdlog/spdlog.h>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "services/common/db_errors.h"

namespace dcl {

namespace {

// Any constant works; it only has to be the same for every migrator.
constexpr int64_t kMigrationLockKey = 0x64636c6d6967;  // "dclmig"

std::string Sha256Hex(const std::string& text) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(digest), sizeof(digest)));
}

}  // namespace

absl::StatusOr<std::vector<Migration>> ParseMigrations(const std::vector<MigrationFile>& files) {
  std::vector<Migration> migrations;
  for (const MigrationFile& file : files) {
    const size_t underscore = file.file_name.find('_');
    Migration migration;
    if (underscore != 4 || file.file_name.size() < 10 ||
        file.file_name.substr(file.file_name.size() - 4) != ".sql" ||
        !std::all_of(file.file_name.begin(), file.file_name.begin() + 4, absl::ascii_isdigit) ||
        !absl::SimpleAtoi(file.file_name.substr(0, 4), &migration.version)) {
      return absl::InvalidArgumentError(
          absl::StrCat("migration file name ", file.file_name, " is not NNNN_name.sql"));
    }
    migration.name = file.file_name;
    migration.sql = file.sql;
    migration.checksum = Sha256Hex(file.sql);
    migrations.push_back(std::move(migration));
  }
  std::sort(migrations.begin(), migrations.end(),
            [](const Migration& a, const Migration& b) { return a.version < b.version; });
  for (size_t i = 1; i < migrations.size(); ++i) {
    if (migrations[i].version == migrations[i - 1].version) {
      return absl::InvalidArgumentError(absl::StrCat("two migrations have version ",
                                                     migrations[i].version));
    }
  }
  return migrations;
}

absl::StatusOr<MigrateResult> Migrate(const std::string& database_url,
                                      const std::vector<Migration>& migrations) {
  try {
    pqxx::connection conn(database_url);
    {
      // Session-level lock: held across the per-migration transactions, released on return
      // (or when the connection drops).
      pqxx::nontransaction lock(conn);
      lock.exec_params("SELECT pg_advisory_lock($1)", kMigrationLockKey);
      lock.exec(
          "CREATE TABLE IF NOT EXISTS schema_migrations ("
          "  version integer PRIMARY KEY,"
          "  name text NOT NULL,"
          "  checksum text NOT NULL,"
          "  applied_at timestamptz NOT NULL DEFAULT now())");
    }
    std::map<int, std::pair<std::string, std::string>> applied;  // version → (name, checksum)
    {
      pqxx::read_transaction tx(conn);
      for (const auto& row : tx.exec("SELECT version, name, checksum FROM schema_migrations")) {
        applied[row[0].as<int>()] = {row[1].as<std::string>(), row[2].as<std::string>()};
      }
    }
    MigrateResult result;
    for (const auto& [version, recorded] : applied) {
      auto it = std::find_if(migrations.begin(), migrations.end(),
                             [v = version](const Migration& m) { return m.version == v; });
      if (it == migrations.end()) {
        return absl::FailedPreconditionError(absl::StrCat(
            "the database has migration ", recorded.first,
            " which this binary does not know: it is older than the schema"));
      }
      if (it->checksum != recorded.second) {
        return absl::FailedPreconditionError(absl::StrCat(
            "migration ", it->name, " was changed after it was applied (recorded checksum ",
            recorded.second, ", file checksum ", it->checksum,
            "); add a new migration instead of editing an applied one"));
      }
      ++result.already_applied;
    }
    for (const Migration& migration : migrations) {
      if (applied.count(migration.version) > 0) continue;
      pqxx::work tx(conn);
      tx.exec(migration.sql);
      tx.exec_params("INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)",
                     migration.version, migration.name, migration.checksum);
      tx.commit();
      spdlog::info("applied migration {}", migration.name);
      ++result.applied;
    }
    pqxx::nontransaction unlock(conn);
    unlock.exec_params("SELECT pg_advisory_unlock($1)", kMigrationLockKey);
    return result;
  } catch (const pqxx::sql_error& e) {
    return absl::InternalError(absl::StrCat("migration failed (sqlstate ", e.sqlstate(),
                                            "): ", e.what()));
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("migration failed: ", e.what()));
  }
}

}  // namespace dcl
