// The HTTP endpoint Prometheus scrapes: GET /metrics answers the registry in the text format
// 0.0.4; every other path is 404, every other method 405.
//
// Served by civetweb (Debian's libcivetweb1, the embedded server prometheus-cpp uses) on two
// threads of its own, apart from the gRPC server: a scrape never waits for an RPC thread and an
// RPC never waits for a scrape, except that rendering reads each family under its mutex.
#ifndef DCL_SERVICES_COMMON_METRICS_HTTP_H_
#define DCL_SERVICES_COMMON_METRICS_HTTP_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "services/common/metrics.h"

struct mg_connection;
struct mg_context;

namespace dcl {

class MetricsHttpServer {
 public:
  // Serves on `listen`, "IPV4_ADDRESS:PORT" (port 0: any free port, see port()). A malformed
  // address is INVALID_ARGUMENT, one that cannot be bound (in use, not local) UNAVAILABLE.
  static absl::StatusOr<std::unique_ptr<MetricsHttpServer>> Start(
      const std::string& listen, MetricsRegistry& registry = MetricsRegistry::Default());
  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;
  // Stops serving; waits for a scrape in progress.
  ~MetricsHttpServer();

  // The port bound (the real one when asked for port 0).
  int port() const { return port_; }

 private:
  explicit MetricsHttpServer(MetricsRegistry& registry) : registry_(registry) {}
  static int Handle(::mg_connection* connection, void* self);

  MetricsRegistry& registry_;
  ::mg_context* context_ = nullptr;
  int port_ = 0;
};

}  // namespace dcl

#endif  // DCL_SERVICES_COMMON_METRICS_HTTP_H_
