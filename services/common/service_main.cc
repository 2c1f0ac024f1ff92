#include "services/common/service_main.h"

#include <spdlog/spdlog.h>

#include "absl/flags/flag.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "services/common/logging.h"

ABSL_FLAG(std::string, listen, "", "host:port to serve on (default: per binary, or its env)");
ABSL_FLAG(std::string, token_cache_database_url, "",
          "a direct PostgreSQL session (never a transaction-pooling PgBouncer) on which the "
          "token cache listens for revocations; empty: no cache, every call reads its token "
          "(default: $DCL_TOKEN_CACHE_DATABASE_URL)");
ABSL_FLAG(std::string, tls_cert, "", "PEM certificate chain; with --tls_key turns TLS on");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls_cert");
ABSL_FLAG(std::string, tls_client_ca, "",
          "PEM CA bundle; when set, clients must present a certificate it signed (mTLS)");
ABSL_FLAG(bool, reflection, true, "serve gRPC server reflection (for grpcurl)");
ABSL_FLAG(int, max_receive_message_bytes, 4 * 1024 * 1024, "largest request accepted");
ABSL_FLAG(int, shutdown_grace_seconds, 10, "how long in-flight calls may finish on SIGTERM");
ABSL_FLAG(std::string, metrics_listen, "",
          "IPV4_ADDRESS:PORT to serve Prometheus metrics on (GET /metrics; port 0 = any free "
          "port, logged); empty = no metrics endpoint");

ABSL_FLAG(std::string, http_listen, "",
          "IPV4_ADDRESS:PORT to serve every RPC over HTTP/JSON by the Connect protocol and the "
          "console on (port 0 = any free port, logged); empty = no HTTP (default: "
          "$DCL_HTTP_LISTEN)");
ABSL_FLAG(std::string, http_upstream, "",
          "services the HTTP listener forwards to another server's gRPC port (plaintext), "
          "comma-separated SERVICE=HOST:PORT, e.g. dcl.v1.MoveService=127.0.0.1:50053 "
          "(default: $DCL_HTTP_UPSTREAM)");
ABSL_FLAG(std::string, console_dir, "",
          "the console's built files, served by the HTTP listener; empty = none (default: "
          "$DCL_CONSOLE_DIR)");
ABSL_FLAG(std::string, http_cors_origins, "",
          "comma-separated origins allowed to call the HTTP API cross-origin; empty = none");
ABSL_FLAG(int, http_threads, 16,
          "HTTP worker threads; each open WatchMove stream over HTTP holds one");

namespace dcl {

absl::StatusOr<std::unique_ptr<TokenCache>> TokenCacheFromFlags() {
  const std::string url = FlagOrEnv(absl::GetFlag(FLAGS_token_cache_database_url),
                                    "DCL_TOKEN_CACHE_DATABASE_URL", "");
  if (url.empty()) return std::unique_ptr<TokenCache>();
  if (absl::Status valid = CheckConnectionString(url); !valid.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--token_cache_database_url (or DCL_TOKEN_CACHE_DATABASE_URL): ", valid.message()));
  }
  TokenCache::Options options;
  options.database_url = url;
  return std::make_unique<TokenCache>(options);
}

std::vector<SharedFlags> ServerSharedFlags() {
  return {SharedFlags::kDatabaseUrl, SharedFlags::kDatabasePool, SharedFlags::kLogFormat,
          SharedFlags::kServer, SharedFlags::kMetrics, SharedFlags::kHttp};
}

ServerConfig ServerConfigFromFlags(const char* listen_env, const std::string& default_listen) {
  ServerConfig config;
  config.listen_address = FlagOrEnv(absl::GetFlag(FLAGS_listen), listen_env, default_listen);
  config.tls_cert_file = absl::GetFlag(FLAGS_tls_cert);
  config.tls_key_file = absl::GetFlag(FLAGS_tls_key);
  config.tls_client_ca_file = absl::GetFlag(FLAGS_tls_client_ca);
  config.reflection = absl::GetFlag(FLAGS_reflection);
  config.max_receive_message_bytes = absl::GetFlag(FLAGS_max_receive_message_bytes);
  config.shutdown_grace = absl::Seconds(absl::GetFlag(FLAGS_shutdown_grace_seconds));
  return config;
}

absl::StatusOr<std::unique_ptr<MetricsHttpServer>> StartMetricsFromFlags() {
  const std::string listen = absl::GetFlag(FLAGS_metrics_listen);
  if (listen.empty()) return std::unique_ptr<MetricsHttpServer>();
  absl::StatusOr<std::unique_ptr<MetricsHttpServer>> server = MetricsHttpServer::Start(listen);
  if (server.ok()) spdlog::info("metrics on port {}", (*server)->port());
  return server;
}

absl::StatusOr<std::unique_ptr<ConnectHttpServer>> StartConnectHttpFromFlags(
    ServerRuntime& runtime, const std::vector<NamedService>& services) {
  ConnectHttpConfig config;
  config.listen = FlagOrEnv(absl::GetFlag(FLAGS_http_listen), "DCL_HTTP_LISTEN", "");
  if (config.listen.empty()) return std::unique_ptr<ConnectHttpServer>();
  config.console_dir = FlagOrEnv(absl::GetFlag(FLAGS_console_dir), "DCL_CONSOLE_DIR", "");
  config.threads = absl::GetFlag(FLAGS_http_threads);
  for (absl::string_view origin :
       absl::StrSplit(absl::GetFlag(FLAGS_http_cors_origins), ',', absl::SkipWhitespace())) {
    config.cors_origins.emplace_back(absl::StripAsciiWhitespace(origin));
  }
  ConnectRoutes routes;
  const std::shared_ptr<grpc::Channel> local = runtime.InProcessChannel();
  for (const NamedService& named : services) routes[named.full_name] = local;
  for (absl::string_view entry :
       absl::StrSplit(FlagOrEnv(absl::GetFlag(FLAGS_http_upstream), "DCL_HTTP_UPSTREAM", ""), ',',
                      absl::SkipWhitespace())) {
    std::vector<std::string> parts = absl::StrSplit(absl::StripAsciiWhitespace(entry), '=');
    if (parts.size() != 2 || parts[0].empty() || parts[1].empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--http_upstream entry '", entry, "' is not SERVICE=HOST:PORT"));
    }
    if (routes.count(parts[0]) > 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--http_upstream names ", parts[0], ", which this server serves itself"));
    }
    routes[parts[0]] = grpc::CreateChannel(parts[1], grpc::InsecureChannelCredentials());
  }
  absl::StatusOr<std::unique_ptr<ConnectHttpServer>> server =
      ConnectHttpServer::Start(config, std::move(routes));
  if (server.ok()) spdlog::info("http on port {}", (*server)->port());
  return server;
}

int RunServiceMain(const std::string& name, const char* listen_env,
                   const std::string& default_listen,
                   const std::function<ServiceSet(DbPool&, TokenCache*)>& make_services) {
  TurnOffMutexDeadlockDetection();
  InitLogging(name, LogFormatFromFlags());
  absl::StatusOr<std::string> url = DatabaseUrlFromFlags();
  if (!url.ok()) {
    spdlog::critical("{}", std::string(url.status().message()));
    return kExitConfigurationError;
  }
  DbOptions db_options = DbOptionsFromFlags();
  DbPool pool(db_options);
  absl::StatusOr<std::unique_ptr<TokenCache>> tokens = TokenCacheFromFlags();
  if (!tokens.ok()) {
    spdlog::critical("{}", std::string(tokens.status().message()));
    return kExitConfigurationError;
  }
  ServiceSet set = make_services(pool, tokens->get());
  absl::StatusOr<std::unique_ptr<ServerRuntime>> runtime =
      ServerRuntime::Start(ServerConfigFromFlags(listen_env, default_listen), &pool, set.services);
  if (!runtime.ok()) {
    spdlog::critical("cannot start: {}", runtime.status().ToString());
    return kExitConfigurationError;
  }
  spdlog::info("{} serving on port {}", name, (*runtime)->port());
  // After the gRPC port, so that a scrape finds a serving process; stopped last, so that the
  // drain stays visible.
  absl::StatusOr<std::unique_ptr<MetricsHttpServer>> metrics = StartMetricsFromFlags();
  if (!metrics.ok()) {
    spdlog::critical("cannot start: {}", metrics.status().ToString());
    (*runtime)->Shutdown();
    return kExitConfigurationError;
  }
  absl::StatusOr<std::unique_ptr<ConnectHttpServer>> http =
      StartConnectHttpFromFlags(**runtime, set.services);
  if (!http.ok()) {
    spdlog::critical("cannot start: {}", http.status().ToString());
    (*runtime)->Shutdown();
    return kExitConfigurationError;
  }
  const int signal_number = WaitForTerminationSignal();
  spdlog::info("signal {} received, shutting down", signal_number);
  // The gRPC server first: its drain ends the streams the HTTP listener relays, and then the
  // listener can stop without waiting on them.
  (*runtime)->Shutdown();
  http->reset();
  return 0;
}

}  // namespace dcl
