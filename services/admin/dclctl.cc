// dclctl: the operator's admin command, talking straight to the database.
//   dclctl token create --org ORG --role ROLE [--subject S] [--label L]   prints the token once
//   dclctl token revoke --id TOKEN_ID
//   dclctl module enable|disable [--org ORG]      without --org: the global rollout switch
//   dclctl org create --name NAME
//   dclctl health check --target HOST:PORT [--service NAME]   exit 0 only when SERVING
// The database comes from --database_url or DCL_DATABASE_URL.
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/flags/flag.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "absl/flags/usage.h"
#include "services/common/auth.h"
#include "services/common/command_line.h"
#include "services/common/db.h"
#include "services/common/service_main.h"
#include "services/common/status.h"
#include "services/common/validation.h"

ABSL_FLAG(std::string, org, "", "organization id or name");
ABSL_FLAG(std::string, role, "", "commerce, dc-operator, customer or admin");
ABSL_FLAG(std::string, subject, "", "role customer: the customer the token speaks for");
ABSL_FLAG(std::string, label, "", "a note to recognise the token by");
ABSL_FLAG(std::string, id, "", "token id");
ABSL_FLAG(std::string, name, "", "organization name");
ABSL_FLAG(std::string, target, "", "health check: the server's host:port");
ABSL_FLAG(std::string, service, "", "health check: a service name (default: the whole server)");

namespace dcl {
namespace {

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "dclctl: %s\n", std::string(status.message()).c_str());
  return 1;
}

int Usage() {
  std::fprintf(stderr, "%s\n", std::string(absl::ProgramUsageMessage()).c_str());
  return 2;
}

int TokenCreate(DbPool& pool) {
  Role role;
  if (!ParseRole(absl::GetFlag(FLAGS_role), &role)) {
    std::fprintf(stderr, "dclctl: --role must be commerce, dc-operator, customer or admin\n");
    return 2;
  }
  auto issued = CreateToken(pool, absl::GetFlag(FLAGS_org), role, absl::GetFlag(FLAGS_subject),
                            absl::GetFlag(FLAGS_label));
  if (!issued.ok()) return Fail(issued.status());
  std::printf("token id: %s\ntoken:    %s\n(the token is shown only now; it is stored hashed)\n",
              issued->id.c_str(), issued->token.c_str());
  return 0;
}

int SetModule(DbPool& pool, bool enabled) {
  const std::string org = absl::GetFlag(FLAGS_org);
  absl::Status status = pool.Transact([&](pqxx::work& tx) -> absl::Status {
    if (org.empty()) {
      tx.exec_params("UPDATE feature_settings SET enabled = $1, updated_at = now() "
                     "WHERE feature = 'datacenter'",
                     enabled);
      return absl::OkStatus();
    }
    const std::string column = IsUuid(org) ? "id::text" : "name";
    pqxx::result rows = tx.exec_params(
        "INSERT INTO organization_feature_settings (org_id, feature, enabled) "
        "SELECT id, 'datacenter', $2 FROM organizations WHERE " + column + " = $1 "
        "ON CONFLICT (org_id, feature) DO UPDATE SET enabled = EXCLUDED.enabled, "
        "updated_at = now() RETURNING org_id",
        org, enabled);
    if (rows.empty()) return NotFound("organization", org);
    return absl::OkStatus();
  });
  if (!status.ok()) return Fail(status);
  std::printf("datacenter module %s for %s\n", enabled ? "enabled" : "disabled",
              org.empty() ? "everyone (global switch)" : org.c_str());
  return 0;
}

int OrgCreate(DbPool& pool) {
  const std::string name = absl::GetFlag(FLAGS_name);
  if (absl::Status valid = CheckText("name", name, kMaxNameLength, true); !valid.ok()) {
    return Fail(valid);
  }
  auto id = pool.Transact([&](pqxx::work& tx) -> absl::StatusOr<std::string> {
    return tx.exec_params1("INSERT INTO organizations (name) VALUES ($1) RETURNING id", name)[0]
        .as<std::string>();
  });
  if (!id.ok()) return Fail(id.status());
  std::printf("organization %s: %s\n", name.c_str(), id->c_str());
  return 0;
}

// A gRPC health check (plaintext), for scripts that wait for a server to come up.
int HealthCheck() {
  auto channel = grpc::CreateChannel(absl::GetFlag(FLAGS_target),
                                     grpc::InsecureChannelCredentials());
  auto stub = grpc::health::v1::Health::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(absl::GetFlag(FLAGS_service));
  grpc::health::v1::HealthCheckResponse response;
  grpc::Status status = stub->Check(&context, request, &response);
  if (!status.ok()) {
    std::fprintf(stderr, "dclctl: %s\n", status.error_message().c_str());
    return 1;
  }
  std::printf("%s\n", grpc::health::v1::HealthCheckResponse::ServingStatus_Name(
                          response.status()).c_str());
  return response.status() == grpc::health::v1::HealthCheckResponse::SERVING ? 0 : 1;
}

}  // namespace
}  // namespace dcl

using dcl::DbOptions;

int main(int argc, char** argv) {
  std::vector<char*> args = dcl::ParseCommandLineOrExit(
      argc, argv,
      {"dclctl",
       "dclctl token create --org ORG --role ROLE [--subject S] [--label L] | "
       "token revoke --id ID | module enable|disable [--org ORG] | org create --name NAME | "
       "health check --target HOST:PORT [--service NAME]",
       __FILE__, {dcl::SharedFlags::kDatabaseUrl}});
  if (args.size() == 3 && std::string(args[1]) == "health" && std::string(args[2]) == "check") {
    return dcl::HealthCheck();
  }
  absl::StatusOr<std::string> url = dcl::DatabaseUrlFromFlags();
  if (!url.ok()) {
    std::fprintf(stderr, "dclctl: %s\n", std::string(url.status().message()).c_str());
    return dcl::kExitConfigurationError;
  }
  DbOptions options;
  options.url = *url;
  options.pool_size = 1;
  if (args.size() != 3) return dcl::Usage();
  const std::string noun = args[1], verb = args[2];
  dcl::DbPool pool(options);
  if (noun == "token" && verb == "create") return dcl::TokenCreate(pool);
  if (noun == "token" && verb == "revoke") {
    absl::Status status = dcl::RevokeToken(pool, absl::GetFlag(FLAGS_id));
    if (!status.ok()) return dcl::Fail(status);
    std::printf("token %s revoked\n", absl::GetFlag(FLAGS_id).c_str());
    return 0;
  }
  if (noun == "module" && (verb == "enable" || verb == "disable")) {
    return dcl::SetModule(pool, verb == "enable");
  }
  if (noun == "org" && verb == "create") return dcl::OrgCreate(pool);
  return dcl::Usage();
}
