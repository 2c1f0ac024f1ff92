// Transport security with certificates generated in the test: a client without the server's CA
// fails, one with it succeeds; with mutual TLS a client without a certificate is refused.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

#include <grpcpp/grpcpp.h>

#include "grpc/health/v1/health.grpc.pb.h"
#include "services/common/file_util.h"
#include "services/common/server.h"
#include "tests/support/grpc_harness.h"

namespace dcl {
namespace {

// A CA, a server certificate for "localhost" and a client certificate, all signed by the CA.
struct Pki {
  std::string dir;
  std::string ca_cert() const { return dir + "/ca.pem"; }
  std::string server_cert() const { return dir + "/server.pem"; }
  std::string server_key() const { return dir + "/server.key"; }
  std::string client_cert() const { return dir + "/client.pem"; }
  std::string client_key() const { return dir + "/client.key"; }
};

Pki MakePki(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  Pki pki{std::string(tmp != nullptr ? tmp : "/tmp") + "/pki-" + name};
  const std::string d = pki.dir;
  const std::string script =
      "set -e; rm -rf " + d + "; mkdir -p " + d + "; cd " + d + ";"
      "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=dcl-test-ca "
      "  -keyout ca.key -out ca.pem 2>/dev/null;"
      "printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\n' > san.ext;"
      "openssl req -newkey rsa:2048 -nodes -subj /CN=localhost -keyout server.key "
      "  -out server.csr 2>/dev/null;"
      "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 "
      "  -extfile san.ext -out server.pem 2>/dev/null;"
      "openssl req -newkey rsa:2048 -nodes -subj /CN=dcl-client -keyout client.key "
      "  -out client.csr 2>/dev/null;"
      "openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 "
      "  -out client.pem 2>/dev/null;";
  REQUIRE(std::system(("/bin/sh -c \"" + script + "\"").c_str()) == 0);
  return pki;
}

std::string Read(const std::string& path) {
  auto content = ReadFileToString(path);
  REQUIRE(content.ok());
  return *content;
}

grpc::Status Check(const std::string& address,
                   const std::shared_ptr<grpc::ChannelCredentials>& credentials) {
  grpc::ChannelArguments args;
  args.SetSslTargetNameOverride("localhost");
  auto channel = grpc::CreateCustomChannel(address, credentials, args);
  auto stub = grpc::health::v1::Health::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  grpc::health::v1::HealthCheckRequest request;
  grpc::health::v1::HealthCheckResponse response;
  return stub->Check(&context, request, &response);
}

TEST_CASE("with TLS a client that trusts the server's CA connects and one that does not fails") {
  const Pki pki = MakePki("tls");
  const Pki stranger = MakePki("stranger");
  ServerConfig config;
  config.tls_cert_file = pki.server_cert();
  config.tls_key_file = pki.server_key();
  testing::InProcessServer server(nullptr, {}, config);

  grpc::SslCredentialsOptions trusting;
  trusting.pem_root_certs = Read(pki.ca_cert());
  CHECK(Check(server.address(), grpc::SslCredentials(trusting)).ok());

  grpc::SslCredentialsOptions distrusting;
  distrusting.pem_root_certs = Read(stranger.ca_cert());
  CHECK(Check(server.address(), grpc::SslCredentials(distrusting)).error_code() ==
        grpc::StatusCode::UNAVAILABLE);
  CHECK_FALSE(Check(server.address(), grpc::InsecureChannelCredentials()).ok());
}

TEST_CASE("with mutual TLS a client without a certificate is refused, one with it is served") {
  const Pki pki = MakePki("mtls");
  ServerConfig config;
  config.tls_cert_file = pki.server_cert();
  config.tls_key_file = pki.server_key();
  config.tls_client_ca_file = pki.ca_cert();
  testing::InProcessServer server(nullptr, {}, config);

  grpc::SslCredentialsOptions anonymous;
  anonymous.pem_root_certs = Read(pki.ca_cert());
  CHECK_FALSE(Check(server.address(), grpc::SslCredentials(anonymous)).ok());

  grpc::SslCredentialsOptions identified = anonymous;
  identified.pem_cert_chain = Read(pki.client_cert());
  identified.pem_private_key = Read(pki.client_key());
  CHECK(Check(server.address(), grpc::SslCredentials(identified)).ok());
}

TEST_CASE("a TLS configuration with a certificate but no key is refused at start") {
  ServerConfig config;
  config.tls_cert_file = "/nonexistent/server.pem";
  config.listen_address = "127.0.0.1:0";
  auto runtime = ServerRuntime::Start(config, nullptr, {});
  CHECK(runtime.status().code() == absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace dcl
