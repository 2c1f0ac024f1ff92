// An in-process gRPC server on 127.0.0.1:0 for tests, built with the real server runtime, and
// client-side helpers (bearer token, error detail).
#ifndef DCL_TESTS_SUPPORT_GRPC_HARNESS_H_
#define DCL_TESTS_SUPPORT_GRPC_HARNESS_H_

#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "services/common/server.h"

namespace dcl::testing {

class InProcessServer {
 public:
  InProcessServer(DbPool* pool, const std::vector<NamedService>& services,
                  ServerConfig config = {});
  ~InProcessServer();
  int port() const { return runtime_->port(); }
  std::string address() const;
  std::shared_ptr<grpc::Channel> Channel() const;
  ServerRuntime& runtime() { return *runtime_; }

 private:
  std::unique_ptr<ServerRuntime> runtime_;
};

// A client context carrying "authorization: Bearer <token>" (none when token is empty) and a
// generous deadline.
std::unique_ptr<grpc::ClientContext> ContextWithToken(const std::string& token);

}  // namespace dcl::testing

#endif  // DCL_TESTS_SUPPORT_GRPC_HARNESS_H_
