#include "services/common/shared_flags.h"

#include <cstdlib>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"

ABSL_FLAG(std::string, database_url, "",
          "PostgreSQL connection string (default: $DCL_DATABASE_URL)");
ABSL_FLAG(std::string, log_format, "", "text or json (default: $DCL_LOG_FORMAT, else text)");
ABSL_FLAG(int, pool_size, 16, "database connections per process");
ABSL_FLAG(int, statement_timeout_ms, 10000, "server-side deadline of every statement");
ABSL_FLAG(int, lock_timeout_ms, 5000, "server-side limit on waiting for a lock");
ABSL_FLAG(int, idle_in_transaction_timeout_ms, 30000,
          "a transaction idle this long is ended by the database");
ABSL_FLAG(std::string, database_pooler, "",
          "none, or transaction when --database_url goes through a transaction-pooling PgBouncer: "
          "the timeouts are then set per transaction (default: $DCL_DATABASE_POOLER, else none)");

namespace dcl {

std::string FlagOrEnv(const std::string& value, const char* env, const std::string& fallback) {
  if (!value.empty()) return value;
  if (const char* from_env = std::getenv(env); from_env != nullptr && *from_env != '\0') {
    return from_env;
  }
  return fallback;
}

DbOptions DbOptionsFromFlags() {
  DbOptions options;
  options.url = FlagOrEnv(absl::GetFlag(FLAGS_database_url), "DCL_DATABASE_URL", "");
  options.pool_size = absl::GetFlag(FLAGS_pool_size);
  options.statement_timeout_ms = absl::GetFlag(FLAGS_statement_timeout_ms);
  options.lock_timeout_ms = absl::GetFlag(FLAGS_lock_timeout_ms);
  options.idle_in_transaction_timeout_ms = absl::GetFlag(FLAGS_idle_in_transaction_timeout_ms);
  options.transaction_pooler =
      FlagOrEnv(absl::GetFlag(FLAGS_database_pooler), "DCL_DATABASE_POOLER", "none") ==
      "transaction";
  return options;
}

absl::StatusOr<std::string> DatabaseUrlFromFlags() {
  const std::string url = FlagOrEnv(absl::GetFlag(FLAGS_database_url), "DCL_DATABASE_URL", "");
  if (url.empty()) {
    return absl::InvalidArgumentError("no database: set --database_url or DCL_DATABASE_URL");
  }
  if (absl::Status valid = CheckConnectionString(url); !valid.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--database_url (or DCL_DATABASE_URL): ", valid.message()));
  }
  const std::string pooler =
      FlagOrEnv(absl::GetFlag(FLAGS_database_pooler), "DCL_DATABASE_POOLER", "none");
  if (pooler != "none" && pooler != "transaction") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--database_pooler (or DCL_DATABASE_POOLER) must be none or transaction, not '", pooler,
        "'"));
  }
  return url;
}

std::string LogFormatFromFlags() {
  return FlagOrEnv(absl::GetFlag(FLAGS_log_format), "DCL_LOG_FORMAT", "text");
}

}  // namespace dcl
