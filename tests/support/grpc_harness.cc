#include "tests/support/grpc_harness.h"

#include <chrono>
#include <stdexcept>

#include "absl/strings/str_cat.h"

namespace dcl::testing {

InProcessServer::InProcessServer(DbPool* pool, const std::vector<NamedService>& services,
                                 ServerConfig config) {
  config.listen_address = "127.0.0.1:0";
  auto runtime = ServerRuntime::Start(config, pool, services);
  if (!runtime.ok()) throw std::runtime_error(runtime.status().ToString());
  runtime_ = std::move(*runtime);
}

InProcessServer::~InProcessServer() { runtime_->Shutdown(); }

std::string InProcessServer::address() const { return absl::StrCat("127.0.0.1:", port()); }

std::shared_ptr<grpc::Channel> InProcessServer::Channel() const {
  return grpc::CreateChannel(address(), grpc::InsecureChannelCredentials());
}

std::unique_ptr<grpc::ClientContext> ContextWithToken(const std::string& token) {
  auto context = std::make_unique<grpc::ClientContext>();
  if (!token.empty()) context->AddMetadata("authorization", "Bearer " + token);
  context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  return context;
}

}  // namespace dcl::testing
