// Applies schema/migrations/NNNN_name.sql in order. A PostgreSQL advisory lock serialises
// concurrent migrators; schema_migrations records version and checksum; an applied migration
// whose text changed is refused; re-running is a no-op.
//
// Online-safe by construction (docs/day-two.md): every statement waits at most
// MigrateOptions::lock_timeout for a lock, so writers queued behind a DDL's lock request wait at
// most that long; a migration whose lock wait times out is rolled back and tried again after a
// growing pause, a bounded number of times.
//   - A migration runs in one transaction, its lock_timeout set by SET LOCAL; a lock timeout
//     (or deadlock) retries the whole transaction.
//   - A migration whose first line is "-- dcl:no-transaction" runs statement by statement in
//     autocommit: for what PostgreSQL refuses inside a transaction (CREATE INDEX CONCURRENTLY)
//     and for what must not share a transaction with the strong lock before it (VALIDATE
//     CONSTRAINT after ADD ... NOT VALID). Each statement is retried on its own, so each must be
//     safe to run again (IF NOT EXISTS; tools/squawk/lint-migrations checks it). A CREATE INDEX
//     CONCURRENTLY that fails leaves an INVALID index behind; the migrator drops it before the
//     next attempt and before reporting a failure, and checks the index is valid once built.
//     schema_migrations records the migration once every statement has succeeded.
#ifndef DCL_SCHEMA_MIGRATOR_H_
#define DCL_SCHEMA_MIGRATOR_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

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
  bool transactional = true;  // false: first line "-- dcl:no-transaction"
};

// The marker line that makes a migration run statement by statement outside a transaction.
inline constexpr char kNoTransactionMarker[] = "-- dcl:no-transaction";

// The statements of `sql`, split at semicolons outside comments, quoted strings, quoted
// identifiers and dollar-quoted bodies; each trimmed, comment-only pieces dropped. An
// unterminated string, identifier, comment or dollar quote is INVALID_ARGUMENT. Escape strings
// with a backslash-escaped quote (E'it\'s') are not understood: write 'it''s'.
absl::StatusOr<std::vector<std::string>> SplitStatements(const std::string& sql);

// The migrations compiled into this binary (schema/migrations/*.sql).
const std::vector<MigrationFile>& EmbeddedMigrationFiles();

// Versions from file names, sorted; duplicate or malformed names are an error.
absl::StatusOr<std::vector<Migration>> ParseMigrations(const std::vector<MigrationFile>& files);

struct MigrateOptions {
  // The longest any statement waits for a lock (lock_timeout); zero: unbounded (PostgreSQL's
  // default, for comparison in tests only).
  absl::Duration lock_timeout = absl::Milliseconds(500);
  // Tries of one transaction (or one no-transaction statement) before the migrator gives up.
  int max_attempts = 30;
  // The pause after the first lock timeout; it doubles after each one, up to max_backoff, with
  // up to a quarter added at random so that two retrying migrators do not fall into step.
  absl::Duration first_backoff = absl::Milliseconds(200);
  absl::Duration max_backoff = absl::Seconds(5);
};

struct MigrateResult {
  int applied = 0;        // migrations applied by this call
  int already_applied = 0;
  int lock_timeouts = 0;  // attempts given up for a lock (or deadlock) and retried
  int invalid_indexes_dropped = 0;  // left behind by failed CREATE INDEX CONCURRENTLY
};

// Brings the database at `database_url` up to date. A migration that still cannot get its locks
// after max_attempts is ABORTED (nothing of it recorded; a no-transaction migration may have run
// some of its statements, which run again next time); any other SQL error is INTERNAL, a broken
// connection UNAVAILABLE.
absl::StatusOr<MigrateResult> Migrate(const std::string& database_url,
                                      const std::vector<Migration>& migrations,
                                      const MigrateOptions& options = {});

}  // namespace dcl

#endif  // DCL_SCHEMA_MIGRATOR_H_
