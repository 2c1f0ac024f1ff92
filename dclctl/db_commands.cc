#include "dclctl/db_commands.h"

#include <cstdio>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "dclctl/format/cli_format.h"
#include "services/common/auth.h"
#include "services/common/db.h"
#include "services/common/shared_flags.h"
#include "services/common/token_cache.h"
#include "services/common/status.h"
#include "services/common/validation.h"

ABSL_DECLARE_FLAG(std::string, database_url);
ABSL_FLAG(std::string, org, "", "token create, module: organization id or name");
ABSL_FLAG(std::string, role, "", "token create: commerce, dc-operator, customer or admin");
ABSL_FLAG(std::string, subject, "", "token create, role customer: the customer it speaks for");
ABSL_FLAG(std::string, label, "", "token create: a note to recognise the token by");
ABSL_FLAG(std::string, id, "", "token revoke: the token's id");
ABSL_FLAG(std::string, name, "", "org create, site create, rack create: its name");

namespace dcl::admin {
namespace {

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "dclctl: %s\n", std::string(status.message()).c_str());
  return ExitCodeFor(static_cast<grpc::StatusCode>(status.code()));
}

int TokenCreate(DbPool& pool) {
  Role role;
  if (!ParseRole(absl::GetFlag(FLAGS_role), &role)) {
    std::fprintf(stderr, "dclctl: --role must be commerce, dc-operator, customer or admin\n");
    return kExitUsage;
  }
  auto issued = CreateToken(pool, absl::GetFlag(FLAGS_org), role, absl::GetFlag(FLAGS_subject),
                            absl::GetFlag(FLAGS_label));
  if (!issued.ok()) return Fail(issued.status());
  std::printf("token id: %s\ntoken:    %s\n(the token is shown only now; it is stored hashed)\n",
              issued->id.c_str(), issued->token.c_str());
  return kExitOk;
}

int TokenRevoke(DbPool& pool) {
  absl::Status status = RevokeToken(pool, absl::GetFlag(FLAGS_id));
  if (!status.ok()) return Fail(status);
  std::printf("token %s revoked\n", absl::GetFlag(FLAGS_id).c_str());
  return kExitOk;
}

int SetModule(DbPool& pool, bool enabled) {
  const std::string org = absl::GetFlag(FLAGS_org);
  // Through ChangeAuthFacts: a module switched off is refused on the next call of every server.
  absl::Status status = ChangeAuthFacts(pool, [&](pqxx::work& tx) -> absl::Status {
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
  return kExitOk;
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
  return kExitOk;
}

}  // namespace

int RunDatabaseCommand(const std::string& noun, const std::string& verb) {
  // None given, or one libpq cannot parse, is a configuration error (exit 2), not a database
  // to retry.
  absl::StatusOr<std::string> url = DatabaseUrlFromFlags();
  if (!url.ok()) {
    std::fprintf(stderr, "dclctl: %s\n", std::string(url.status().message()).c_str());
    return kExitUsage;
  }
  DbOptions options;
  options.url = *url;
  options.pool_size = 1;
  DbPool pool(options);
  if (noun == "token" && verb == "create") return TokenCreate(pool);
  if (noun == "token" && verb == "revoke") return TokenRevoke(pool);
  if (noun == "module") return SetModule(pool, verb == "enable");
  return OrgCreate(pool);
}

}  // namespace dcl::admin
