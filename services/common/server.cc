#include "services/common/server.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/impl/server_builder_option.h>
#include <grpcpp/impl/server_builder_plugin.h>
#include <grpcpp/support/server_interceptor.h>
#include <signal.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "services/common/file_util.h"
#include "services/common/grpc_status.h"
#include "services/common/status.h"

namespace dcl {

namespace {

using grpc::experimental::InterceptionHookPoints;

// A request the gRPC runtime cannot parse (invalid UTF-8 in a proto3 string field, truncated
// bytes) is answered by the runtime itself, before any handler or the gate runs: INTERNAL with
// no message and no details. It is bad input, and the caller is told so: INVALID_ARGUMENT /
// INVALID_INPUT with the usual details. Nothing was read or written.
class UnparsableRequestInterceptor final : public grpc::experimental::Interceptor {
 public:
  explicit UnparsableRequestInterceptor(grpc::experimental::ServerRpcInfo* info) : info_(info) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    // The runtime hands interceptors no message when deserialization failed.
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_MESSAGE) &&
        methods->GetRecvMessage() == nullptr && !received_) {
      unparsable_ = true;
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_MESSAGE)) {
      received_ = true;
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS) &&
        unparsable_ && methods->GetSendStatus().error_code() == grpc::StatusCode::INTERNAL) {
      methods->ModifySendStatus(
          ToGrpcStatus(InvalidInput("request",
                                    "cannot be parsed: a string field is not valid UTF-8, or the "
                                    "message is malformed")));
      spdlog::info("rpc={} org=- role=- code=INVALID_ARGUMENT reason=INVALID_INPUT unparsable",
                   info_->method());
    }
    methods->Proceed();
  }

 private:
  grpc::experimental::ServerRpcInfo* const info_;
  bool received_ = false;
  bool unparsable_ = false;
};

class UnparsableRequestInterceptorFactory final
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    return new UnparsableRequestInterceptor(info);
  }
};

// Linking grpc++_reflection registers its plugin for every ServerBuilder of the process (a
// static initializer), so "off" has to take the plugin out of the builder again.
class WithoutReflection final : public grpc::ServerBuilderOption {
 public:
  void UpdateArguments(grpc::ChannelArguments*) override {}
  void UpdatePlugins(std::vector<std::unique_ptr<grpc::ServerBuilderPlugin>>* plugins) override {
    plugins->erase(std::remove_if(plugins->begin(), plugins->end(),
                                  [](const std::unique_ptr<grpc::ServerBuilderPlugin>& plugin) {
                                    return plugin->name() == "proto_server_reflection";
                                  }),
                   plugins->end());
  }
};

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> Credentials(const ServerConfig& config) {
  if (config.tls_cert_file.empty() && config.tls_key_file.empty()) {
    if (!config.tls_client_ca_file.empty()) {
      return absl::InvalidArgumentError("a client CA needs a server certificate and key");
    }
    return grpc::InsecureServerCredentials();
  }
  if (config.tls_cert_file.empty() || config.tls_key_file.empty()) {
    return absl::InvalidArgumentError("TLS needs both a certificate and a key");
  }
  absl::StatusOr<std::string> cert = ReadFileToString(config.tls_cert_file);
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadFileToString(config.tls_key_file);
  if (!key.ok()) return key.status();
  grpc::SslServerCredentialsOptions options;
  options.pem_key_cert_pairs.push_back({*key, *cert});
  if (!config.tls_client_ca_file.empty()) {
    absl::StatusOr<std::string> ca = ReadFileToString(config.tls_client_ca_file);
    if (!ca.ok()) return ca.status();
    options.pem_root_certs = *ca;
    options.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(options);
}

}  // namespace

ServerRuntime::ServerRuntime(const ServerConfig& config, DbPool* pool)
    : config_(config), pool_(pool) {}

absl::StatusOr<std::unique_ptr<ServerRuntime>> ServerRuntime::Start(
    const ServerConfig& config, DbPool* pool, const std::vector<NamedService>& services) {
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials = Credentials(config);
  if (!credentials.ok()) return credentials.status();

  std::unique_ptr<ServerRuntime> runtime(new ServerRuntime(config, pool));
  grpc::EnableDefaultHealthCheckService(true);
  if (config.reflection) grpc::reflection::InitProtoReflectionServerBuilderPlugin();

  grpc::ServerBuilder builder;
  // The synchronous server runs each call on a thread and, by default, lets a thread that
  // finishes a call exit when more than 2 are idle: under concurrent calls nearly every call
  // started a thread and ended one (clone3, the stack's unmapping and its TLB shootdowns, and
  // every thread_local made again, in a profile of the reservation benchmark). Up to
  // kMaxIdleCallThreads stay for the next calls instead. Three rounds, 32 clients: a gRPC call
  // refused by the gate cost the server and its client 0.124 / 0.140 / 0.126 → 0.094 / 0.095 /
  // 0.101 ms of CPU; a Reserve 0.296 / 0.296 / 0.279 → 0.263 / 0.273 / 0.287 ms.
  constexpr int kMaxIdleCallThreads = 64;
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS,
                              kMaxIdleCallThreads);
  if (!config.reflection) builder.SetOption(std::make_unique<WithoutReflection>());
  builder.AddListeningPort(config.listen_address, *credentials, &runtime->port_);
  builder.SetMaxReceiveMessageSize(config.max_receive_message_bytes);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 60 * 1000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 20 * 1000);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 10 * 1000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(std::make_unique<UnparsableRequestInterceptorFactory>());
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  runtime->service_names_.push_back("");  // "" is the server as a whole
  for (const NamedService& named : services) {
    builder.RegisterService(named.service);
    runtime->service_names_.push_back(named.full_name);
  }
  runtime->server_ = builder.BuildAndStart();
  if (runtime->server_ == nullptr || runtime->port_ == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", config.listen_address));
  }
  runtime->ProbeDatabase();  // first status before anyone asks
  runtime->probe_ = std::thread([r = runtime.get()] {
    while (!r->stop_probe_.WaitForNotificationWithTimeout(r->config_.health_probe_interval)) {
      r->ProbeDatabase();
    }
  });
  return runtime;
}

std::shared_ptr<grpc::Channel> ServerRuntime::InProcessChannel() {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(config_.max_receive_message_bytes);
  return server_->InProcessChannel(args);
}

void ServerRuntime::ProbeDatabase() {
  const bool serving = pool_ == nullptr || pool_->Ping().ok();
  grpc::HealthCheckServiceInterface* health = server_->GetHealthCheckService();
  if (health == nullptr) return;
  for (const std::string& name : service_names_) health->SetServingStatus(name, serving);
}

void ServerRuntime::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  stop_probe_.Notify();
  if (probe_.joinable()) probe_.join();
  if (grpc::HealthCheckServiceInterface* health = server_->GetHealthCheckService()) {
    health->Shutdown();  // NOT_SERVING for everyone, and stays so
  }
  spdlog::info("draining: refusing new calls, waiting up to {} for in-flight ones",
               absl::FormatDuration(config_.shutdown_grace));
  server_->Shutdown(std::chrono::system_clock::now() +
                    absl::ToChronoMilliseconds(config_.shutdown_grace));
  server_->Wait();
  if (pool_ != nullptr) pool_->Close();
  spdlog::info("server stopped");
}

ServerRuntime::~ServerRuntime() { Shutdown(); }

void TurnOffMutexDeadlockDetection() {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
}

void BlockTerminationSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

int WaitForTerminationSignal() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  int signal_number = 0;
  sigwait(&set, &signal_number);
  return signal_number;
}

}  // namespace dcl
