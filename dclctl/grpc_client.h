// Where dclctl's gRPC calls go and with which token: one target and token for all services
// (--target/--dcl_token_file, DCL_TARGET/DCL_TOKEN) with an override per service
// (--occupancy_target/--occupancy_token_file, DCL_OCCUPANCY_TARGET/DCL_OCCUPANCY_TOKEN, and the
// same for reservation and moves), so that one command line reaches servers on three ports and a
// commerce token can sit beside a dc-operator token. A token is never an argument: every user of
// the machine reads the command line (ps), so it comes from the environment or a file.
// Plaintext unless a CA is given (TLS), with an optional client certificate (mutual TLS).
#ifndef DCL_DCLCTL_GRPC_CLIENT_H_
#define DCL_DCLCTL_GRPC_CLIENT_H_

#include <functional>
#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace dcl::admin {

enum class Service { kReservation, kOccupancy, kMoves };

// "reservation", "occupancy", "moves": the word in the per-service flags and variables.
const char* ServiceWord(Service service);
// The embedded default's address of each service (docs/operations.md): 127.0.0.1:50051, 50052, 50053.
const char* DefaultTarget(Service service);

// What the command line said; empty = not given. The tokens are those of the files it named
// (ReadTokenFile).
struct ClientFlags {
  std::string target, token;
  std::string reservation_target, reservation_token;
  std::string occupancy_target, occupancy_token;
  std::string moves_target, moves_token;
  std::string tls_ca, tls_client_cert, tls_client_key;
  int deadline_seconds = 15;
};

struct Endpoint {
  std::string target;
  std::string token;  // empty: no authorization header (the server then refuses)
};

struct ClientOptions {
  Endpoint reservation, occupancy, moves;
  std::string tls_ca_file, tls_client_cert_file, tls_client_key_file;
  absl::Duration deadline = absl::Seconds(15);
  const Endpoint& For(Service service) const;
};

// Flags before the environment (what is typed now beats what was exported earlier); within
// each, the per-service setting before the shared one; then the default target.
//   target: --occupancy_target, --target, $DCL_OCCUPANCY_TARGET, $DCL_TARGET, 127.0.0.1:50052
//   token:  --occupancy_token_file, --dcl_token_file, $DCL_OCCUPANCY_TOKEN, $DCL_TOKEN, none
// `getenv` is std::getenv outside tests.
ClientOptions ResolveClientOptions(const ClientFlags& flags,
                                   const std::function<const char*(const char*)>& getenv);

// The token in the file `path` names (for the message: `flag`, e.g. "--dcl_token_file"): its one
// line, surrounding whitespace dropped. INVALID_ARGUMENT when it cannot be read, is empty, or
// holds more than one word.
absl::StatusOr<std::string> ReadTokenFile(const std::string& flag, const std::string& path);

// A channel to `target`: TLS when options name a CA file (with the client certificate and key
// when given), else plaintext. INVALID_ARGUMENT when a certificate file cannot be read.
absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(const ClientOptions& options,
                                                           const std::string& target);

// A context with the service's bearer token; unary calls get the deadline, streams none.
std::unique_ptr<grpc::ClientContext> MakeContext(const ClientOptions& options, Service service,
                                                 bool stream = false);

}  // namespace dcl::admin

#endif  // DCL_DCLCTL_GRPC_CLIENT_H_
