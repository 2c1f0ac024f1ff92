// migrate: brings a dcl database up to the schema compiled into this binary.
//   migrate --database_url=postgresql://...   (or DCL_DATABASE_URL)
//           [--ddl_lock_timeout_ms=500] [--ddl_attempts=30]
#include <cstdio>

#include "absl/flags/flag.h"

#include <spdlog/spdlog.h>

#include "services/common/command_line.h"
#include "schema/migrator.h"
#include "services/common/logging.h"
#include "services/common/shared_flags.h"

ABSL_FLAG(int, ddl_lock_timeout_ms, 500,
          "the longest a migration statement waits for a lock (writers queued behind it wait "
          "as long); a statement that times out is retried. 1..60000");
ABSL_FLAG(int, ddl_attempts, 30,
          "tries of a migration (or of one statement of a no-transaction migration) that times "
          "out on a lock, with a growing pause between them (0.2 s doubling up to 5 s); 1..1000");

int main(int argc, char** argv) {
  dcl::ParseCommandLineOrExit(
      argc, argv,
      {"migrate",
       "migrate: brings a dcl database up to the schema compiled into this binary (exit 0 = "
       "up to date, 1 = failed, 2 = bad configuration).\n  migrate --database_url=CONNINFO "
       "[--ddl_lock_timeout_ms=500] [--ddl_attempts=30]",
       __FILE__, {dcl::SharedFlags::kDatabaseUrl, dcl::SharedFlags::kLogFormat}});
  dcl::InitLogging("migrate", dcl::LogFormatFromFlags());
  absl::StatusOr<std::string> url = dcl::DatabaseUrlFromFlags();
  if (!url.ok()) {
    spdlog::critical("{}", std::string(url.status().message()));
    return dcl::kExitConfigurationError;
  }
  auto migrations = dcl::ParseMigrations(dcl::EmbeddedMigrationFiles());
  if (!migrations.ok()) {
    spdlog::critical("{}", migrations.status().ToString());
    return dcl::kExitConfigurationError;
  }
  const int lock_timeout_ms = absl::GetFlag(FLAGS_ddl_lock_timeout_ms);
  const int attempts = absl::GetFlag(FLAGS_ddl_attempts);
  if (lock_timeout_ms < 1 || lock_timeout_ms > 60000 || attempts < 1 || attempts > 1000) {
    spdlog::critical("--ddl_lock_timeout_ms must be 1..60000 and --ddl_attempts 1..1000");
    return dcl::kExitConfigurationError;
  }
  dcl::MigrateOptions options;
  options.lock_timeout = absl::Milliseconds(lock_timeout_ms);
  options.max_attempts = attempts;
  auto result = dcl::Migrate(*url, *migrations, options);
  if (!result.ok()) {
    spdlog::critical("{}", result.status().ToString());
    return 1;
  }
  spdlog::info(
      "schema up to date: {} applied now, {} already applied, {} lock timeouts retried, {} "
      "invalid indexes dropped",
      result->applied, result->already_applied, result->lock_timeouts,
      result->invalid_indexes_dropped);
  return 0;
}
