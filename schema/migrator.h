// Applies schema/migrations/NNNN_name.sql in order. Each migration runs in its own transaction;
// a PostgreSQL advisory lock serialises concurrent migrators; schema_migrations records version
// and checksum; an applied migration whose text changed is refused; re-running is a no-op.
#ifndef DCL_SCHEMA_MIGRATOR_H_
#define DCL_SCHEMA_MIGRATOR_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace dcl {

struct MigrationFile {
  std::string file_name;  // "0001_base.sql"
  std::string sql;
};

struct Migration {
  int version = 0;
  std::string name;
  std::string sql;
  std::string checksum;  // SHA-256 of the text, hex
};

// The migrations compiled into this binary (schema/migrations/*.sql).
const std::vector<MigrationFile>& EmbeddedMigrationFiles();

// Versions from file names, sorted; duplicate or malformed names are an error.
absl::StatusOr<std::vector<Migration>> ParseMigrations(const std::vector<MigrationFile>& files);

struct MigrateResult {
  int applied = 0;        // migrations applied by this call
  int already_applied = 0;
};

// Brings the database at `database_url` up to date.
absl::StatusOr<MigrateResult> Migrate(const std::string& database_url,
                                      const std::vector<Migration>& migrations);

}  // namespace dcl

#endif  // DCL_SCHEMA_MIGRATOR_H_
