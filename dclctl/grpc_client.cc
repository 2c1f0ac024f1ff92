#include "dclctl/grpc_client.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "services/common/file_util.h"

namespace dcl::admin {

const char* ServiceWord(Service service) {
  switch (service) {
    case Service::kReservation:
      return "reservation";
    case Service::kOccupancy:
      return "occupancy";
    case Service::kMoves:
      return "moves";
  }
  return "";
}

const char* DefaultTarget(Service service) {
  switch (service) {
    case Service::kReservation:
      return "127.0.0.1:50051";
    case Service::kOccupancy:
      return "127.0.0.1:50052";
    case Service::kMoves:
      return "127.0.0.1:50053";
  }
  return "";
}

const Endpoint& ClientOptions::For(Service service) const {
  switch (service) {
    case Service::kReservation:
      return reservation;
    case Service::kOccupancy:
      return occupancy;
    case Service::kMoves:
      break;
  }
  return moves;
}

namespace {

std::string FirstSet(std::initializer_list<std::string> candidates) {
  for (const std::string& candidate : candidates) {
    if (!candidate.empty()) return candidate;
  }
  return "";
}

}  // namespace

ClientOptions ResolveClientOptions(const ClientFlags& flags,
                                   const std::function<const char*(const char*)>& getenv) {
  auto env = [&](const std::string& name) -> std::string {
    const char* value = getenv(name.c_str());
    return value != nullptr ? value : "";
  };
  auto endpoint = [&](Service service, const std::string& target_flag,
                      const std::string& token_flag) {
    const std::string upper = absl::AsciiStrToUpper(ServiceWord(service));
    return Endpoint{FirstSet({target_flag, flags.target, env("DCL_" + upper + "_TARGET"),
                              env("DCL_TARGET"), DefaultTarget(service)}),
                    FirstSet({token_flag, flags.token, env("DCL_" + upper + "_TOKEN"),
                              env("DCL_TOKEN")})};
  };
  ClientOptions options;
  options.reservation =
      endpoint(Service::kReservation, flags.reservation_target, flags.reservation_token);
  options.occupancy = endpoint(Service::kOccupancy, flags.occupancy_target, flags.occupancy_token);
  options.moves = endpoint(Service::kMoves, flags.moves_target, flags.moves_token);
  options.tls_ca_file = flags.tls_ca;
  options.tls_client_cert_file = flags.tls_client_cert;
  options.tls_client_key_file = flags.tls_client_key;
  options.deadline = absl::Seconds(flags.deadline_seconds);
  return options;
}

absl::StatusOr<std::string> ReadTokenFile(const std::string& flag, const std::string& path) {
  absl::StatusOr<std::string> text = ReadFileToString(path);
  if (!text.ok()) return absl::InvalidArgumentError(absl::StrCat(flag, ": cannot read ", path));
  const std::string token(absl::StripAsciiWhitespace(*text));
  if (token.empty() || std::any_of(token.begin(), token.end(), [](char c) {
        return absl::ascii_isspace(static_cast<unsigned char>(c));
      })) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " ", path, " must hold one token, nothing else"));
  }
  return token;
}

absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(const ClientOptions& options,
                                                           const std::string& target) {
  if (options.tls_ca_file.empty()) {
    if (!options.tls_client_cert_file.empty()) {
      return absl::InvalidArgumentError("--tls_client_cert needs --tls_ca (TLS)");
    }
    return grpc::CreateChannel(target, grpc::InsecureChannelCredentials());
  }
  grpc::SslCredentialsOptions ssl;
  auto read = [](const std::string& flag, const std::string& path,
                 std::string* out) -> absl::Status {
    absl::StatusOr<std::string> text = ReadFileToString(path);
    if (!text.ok()) return absl::InvalidArgumentError(absl::StrCat(flag, ": cannot read ", path));
    *out = *text;
    return absl::OkStatus();
  };
  if (absl::Status s = read("--tls_ca", options.tls_ca_file, &ssl.pem_root_certs); !s.ok()) {
    return s;
  }
  if (options.tls_client_cert_file.empty() != options.tls_client_key_file.empty()) {
    return absl::InvalidArgumentError("--tls_client_cert and --tls_client_key go together");
  }
  if (!options.tls_client_cert_file.empty()) {
    if (absl::Status s = read("--tls_client_cert", options.tls_client_cert_file, &ssl.pem_cert_chain);
        !s.ok()) {
      return s;
    }
    if (absl::Status s = read("--tls_client_key", options.tls_client_key_file, &ssl.pem_private_key);
        !s.ok()) {
      return s;
    }
  }
  return grpc::CreateChannel(target, grpc::SslCredentials(ssl));
}

std::unique_ptr<grpc::ClientContext> MakeContext(const ClientOptions& options, Service service,
                                                 bool stream) {
  auto context = std::make_unique<grpc::ClientContext>();
  const std::string& token = options.For(service).token;
  if (!token.empty()) context->AddMetadata("authorization", "Bearer " + token);
  if (!stream) context->set_deadline(absl::ToChronoTime(absl::Now() + options.deadline));
  return context;
}

}  // namespace dcl::admin
