// The shared flags of every dcl binary that opens the database, servers or not (the servers, the
// sweeper, the migrator, dclctl's database commands): --database_url, the pool and its
// server-side timeouts, --log_format, each with an environment variable fallback. The servers'
// own shared flags (listen, TLS, metrics, HTTP) are service_main.h's; command_line.h names the
// groups a binary reads.
#ifndef DCL_SERVICES_COMMON_SHARED_FLAGS_H_
#define DCL_SERVICES_COMMON_SHARED_FLAGS_H_

#include <string>

#include "absl/status/statusor.h"
#include "services/common/db.h"

namespace dcl {

// `value` if non-empty, else the environment variable `env`, else `fallback`.
std::string FlagOrEnv(const std::string& value, const char* env, const std::string& fallback);

// The database options from --database_url/DCL_DATABASE_URL and the pool/timeouts flags.
DbOptions DbOptionsFromFlags();
// The connection string from --database_url/DCL_DATABASE_URL, or the configuration error a
// binary exits 2 with: none given, or one libpq cannot parse (an unreachable database is not
// a configuration error: that is found out by connecting).
absl::StatusOr<std::string> DatabaseUrlFromFlags();
// --log_format (text|json).
std::string LogFormatFromFlags();

}  // namespace dcl

#endif  // DCL_SERVICES_COMMON_SHARED_FLAGS_H_
