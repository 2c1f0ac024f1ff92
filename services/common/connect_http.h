// Every RPC over HTTP/1.1 by the Connect protocol (connect_protocol.h), and the console's static
// files, on a port of its own beside the gRPC port.
//
// A thin translation, never a second copy of a rule: a request's body becomes the RPC's request
// message by the service's descriptors, and the call goes through a gRPC channel to the same
// server — in process for the services this process serves, to another process's gRPC port for
// the ones it routes to — carrying the caller's "authorization" header as metadata. The gate
// (rpc_gate.h: token, role, module switch, limits, request ids and replays), the interceptors
// and ToGrpcStatus run exactly as for a gRPC client; the answer and its status are only
// re-spelled: the message in protobuf's JSON mapping (or binary), the status as Connect's JSON
// error, metadata as headers (`dcl-replay: true` on a replayed write).
//
// No cookies are read or set: the bearer token is the only credential, so a page of another
// site cannot make a browser call with the user's rights (no CSRF surface). Cross-origin calls
// are refused by browsers unless an origin is configured (cors_origins).
//
// Served by civetweb on `threads` threads; a server-streaming call (WatchMove) holds one of them
// for as long as it runs, at most max_stream (then it ends with deadline_exceeded and the client
// watches again; a client that went away is noticed at the next message).
#ifndef DCL_SERVICES_COMMON_CONNECT_HTTP_H_
#define DCL_SERVICES_COMMON_CONNECT_HTTP_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/channel.h>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

struct mg_connection;
struct mg_context;

namespace dcl {

struct ConnectHttpConfig {
  std::string listen;       // "IPV4_ADDRESS:PORT"; port 0 = any free port (see port())
  std::string console_dir;  // the console's built files; empty = no static files served
  // Origins ("https://tools.example.com") allowed to call cross-origin; empty = none.
  std::vector<std::string> cors_origins;
  int threads = 16;
  int max_request_bytes = 4 * 1024 * 1024;
  // A unary call without Connect-Timeout-Ms gets this deadline; a shorter header wins.
  absl::Duration max_unary = absl::Seconds(60);
  absl::Duration max_stream = absl::Minutes(10);
};

// Which gRPC channel reaches each service, by full name ("dcl.v1.MoveService").
using ConnectRoutes = std::map<std::string, std::shared_ptr<grpc::Channel>>;

class ConnectHttpServer {
 public:
  // Serves. A malformed listen address is INVALID_ARGUMENT, one that cannot be bound
  // UNAVAILABLE, a route to a service this binary has no descriptors for INVALID_ARGUMENT.
  static absl::StatusOr<std::unique_ptr<ConnectHttpServer>> Start(const ConnectHttpConfig& config,
                                                                   ConnectRoutes routes);
  ConnectHttpServer(const ConnectHttpServer&) = delete;
  ConnectHttpServer& operator=(const ConnectHttpServer&) = delete;
  // Stops serving and waits for the requests in progress (streams end when the gRPC server
  // they reach shuts down, so stop that one first).
  ~ConnectHttpServer();

  int port() const { return port_; }

 private:
  ConnectHttpServer(ConnectHttpConfig config, ConnectRoutes routes)
      : config_(std::move(config)), routes_(std::move(routes)) {}
  static int Handle(::mg_connection* connection, void* self);
  int HandleRpc(::mg_connection* connection, const std::string& path);
  int HandleStatic(::mg_connection* connection, const std::string& path);
  // CORS headers for an allowed Origin; false when the request has none or another one.
  bool AllowedOrigin(::mg_connection* connection, std::string* origin) const;

  const ConnectHttpConfig config_;
  const ConnectRoutes routes_;
  ::mg_context* context_ = nullptr;
  int port_ = 0;
};

// The address check shared with the metrics endpoint: one IPv4 address and a port.
absl::Status CheckHttpListenAddress(const std::string& what, const std::string& listen);

}  // namespace dcl

#endif  // DCL_SERVICES_COMMON_CONNECT_HTTP_H_
