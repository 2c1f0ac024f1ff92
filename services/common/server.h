// The gRPC server bootstrap every dcl binary uses: health checking (NOT_SERVING while the
// database is unreachable and while draining), reflection, TLS/mTLS, message-size and
// keepalive limits, and graceful shutdown on SIGTERM/SIGINT.
#ifndef DCL_SERVICES_COMMON_SERVER_H_
#define DCL_SERVICES_COMMON_SERVER_H_

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "services/common/db.h"

namespace dcl {

struct ServerConfig {
  std::string listen_address = "127.0.0.1:0";
  // TLS: both set = TLS; plus client_ca_file = mutual TLS (client certificates required).
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_client_ca_file;
  bool reflection = true;
  int max_receive_message_bytes = 4 * 1024 * 1024;
  absl::Duration shutdown_grace = absl::Seconds(10);
  absl::Duration health_probe_interval = absl::Seconds(2);
};

// A service to serve, with its full name for per-service health ("dcl.v1.MoveService").
struct NamedService {
  std::string full_name;
  grpc::Service* service;  // not owned; must outlive the runtime
};

class ServerRuntime {
 public:
  // Starts serving. The pool may be null (no database: health is then always SERVING).
  static absl::StatusOr<std::unique_ptr<ServerRuntime>> Start(
      const ServerConfig& config, DbPool* pool, const std::vector<NamedService>& services);
  ServerRuntime(const ServerRuntime&) = delete;
  ServerRuntime& operator=(const ServerRuntime&) = delete;
  ~ServerRuntime();

  int port() const { return port_; }

  // A channel to this server inside the process (the HTTP listener's way in): calls on it pass
  // through the same interceptors, services and gate as calls from the network.
  std::shared_ptr<grpc::Channel> InProcessChannel();

  // Health turns NOT_SERVING, new calls are refused, in-flight calls get up to shutdown_grace
  // to finish (then are cancelled), and the pool is closed. Idempotent.
  void Shutdown();

 private:
  ServerRuntime(const ServerConfig& config, DbPool* pool);
  void ProbeDatabase();

  const ServerConfig config_;
  DbPool* const pool_;
  std::vector<std::string> service_names_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  absl::Notification stop_probe_;
  std::thread probe_;
  bool shut_down_ = false;
};

// absl::Mutex without its deadlock detector, as abseil's release builds have it. Debian builds
// abseil without NDEBUG, which leaves the detector on: every lock and unlock then updates a
// process-wide graph of lock ids under one global lock (GraphCycles in a profile of the
// reservation benchmark). Off, a gRPC call refused by the gate cost the server and its client
// 0.137 → 0.123 ms of CPU (two rounds, 32 clients) and a Reserve 0.347 → 0.312 ms. For the
// long-running processes (RunServiceMain, the sweeper) and the benchmarks; the tests keep the
// detector, which reports a lock-order inversion the first time the inverted order is taken.
void TurnOffMutexDeadlockDetection();

// Blocks SIGTERM and SIGINT in the calling thread and every thread it creates later; call first
// thing in main(), before any thread exists, then WaitForTerminationSignal() to wait for one.
void BlockTerminationSignals();
int WaitForTerminationSignal();

}  // namespace dcl

#endif  // DCL_SERVICES_COMMON_SERVER_H_
