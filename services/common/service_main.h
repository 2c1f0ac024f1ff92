// What every dcl server binary's main() shares: the servers' flags (each with an environment
// variable fallback; the database and logging ones are shared_flags.h's), logging, the pool, the
// server runtime, and waiting for SIGTERM/SIGINT.
#ifndef DCL_SERVICES_COMMON_SERVICE_MAIN_H_
#define DCL_SERVICES_COMMON_SERVICE_MAIN_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "services/common/command_line.h"
#include "services/common/db.h"
#include "services/common/connect_http.h"
#include "services/common/metrics_http.h"
#include "services/common/server.h"
#include "services/common/shared_flags.h"
#include "services/common/token_cache.h"

namespace dcl {

// The server options from the TLS, reflection and limits flags; listen from --listen, else
// `listen_env`, else `default_listen`.
ServerConfig ServerConfigFromFlags(const char* listen_env, const std::string& default_listen);

// The Prometheus endpoint of --metrics_listen (metrics_http.h), started and its port logged
// ("metrics on port N"); null when the flag is empty (the default: no endpoint). A malformed
// address is INVALID_ARGUMENT, one that cannot be bound UNAVAILABLE: both are configuration
// errors at start-up.
absl::StatusOr<std::unique_ptr<MetricsHttpServer>> StartMetricsFromFlags();

// The HTTP/JSON listener of --http_listen (connect_http.h), reaching `services` in process and
// the --http_upstream ones over gRPC, serving --console_dir; its port logged ("http on port N").
// Null when no address is configured; a bad flag is INVALID_ARGUMENT, a port that cannot be
// bound UNAVAILABLE (configuration errors at start-up).
absl::StatusOr<std::unique_ptr<ConnectHttpServer>> StartConnectHttpFromFlags(
    ServerRuntime& runtime, const std::vector<NamedService>& services);

// The token cache of --token_cache_database_url (token_cache.h), listening from now on; null when
// the flag is empty; a malformed URL is INVALID_ARGUMENT.
absl::StatusOr<std::unique_ptr<TokenCache>> TokenCacheFromFlags();

// Owns whatever a binary's services need to stay alive (handler objects and their logic).
struct ServiceSet {
  std::vector<NamedService> services;
  std::vector<std::shared_ptr<void>> keep_alive;
};

// The shared flags a server binary reads (for ParseCommandLineOrExit).
std::vector<SharedFlags> ServerSharedFlags();

// main() of a server binary, after BlockTerminationSignals() and ParseCommandLineOrExit().
int RunServiceMain(const std::string& name, const char* listen_env,
                   const std::string& default_listen,
                   const std::function<ServiceSet(DbPool&, TokenCache*)>& make_services);

}  // namespace dcl

#endif  // DCL_SERVICES_COMMON_SERVICE_MAIN_H_
