#include "services/common/auth.h"

#include <openssl/rand.h>
#include <openssl/sha.h>

#include "absl/strings/escaping.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "services/common/status.h"
#include "services/common/token_cache.h"
#include "services/common/validation.h"

namespace dcl {

namespace {

absl::Status Unauthenticated(const std::string& message) {
  return Error(absl::StatusCode::kUnauthenticated, v1::UNAUTHENTICATED_CALLER, message);
}

}  // namespace

std::string TokenDigest(const std::string& token) {
  unsigned char sha[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), sha);
  return std::string(reinterpret_cast<const char*>(sha), sizeof(sha));
}

std::string BearerToken(const std::string& authorization) {
  constexpr absl::string_view kPrefix = "Bearer ";
  if (!absl::StartsWith(authorization, kPrefix)) return "";
  std::string token(
      absl::StripAsciiWhitespace(absl::string_view(authorization).substr(kPrefix.size())));
  if (token.empty() || token.size() > 256) return "";
  return token;
}

absl::StatusOr<Principal> Authenticate(DbPool& pool, const std::string& token,
                                       TokenCache* cache) {
  if (token.empty()) return Unauthenticated("missing bearer token");
  // The digest is computed here, never by the database: a statement carries only the digest,
  // so statement logging, pg_stat_activity and a pooler's logs never see a token.
  const std::string digest = TokenDigest(token);
  uint64_t generation = 0;
  if (cache != nullptr) {
    if (std::optional<Principal> held = cache->Find(digest)) return *held;
    if (cache->HeldUnknown(digest)) return Unauthenticated("unknown or revoked token");
    generation = cache->Generation();
  }
  bool unknown = false;  // the database answered: no such unrevoked token
  static const char kTokenLookupSql[] =
      "SELECT t.id, t.org_id, t.role, t.subject, "
      "       coalesce((SELECT enabled FROM feature_settings WHERE feature = 'datacenter'), "
      "                false) "
      "   AND coalesce((SELECT enabled FROM organization_feature_settings s "
      "                 WHERE s.org_id = t.org_id AND s.feature = 'datacenter'), false) "
      "FROM api_tokens t "
      "WHERE t.token_sha256 = $1 AND t.revoked_at IS NULL";
  // One statement in autocommit: one round trip (no BEGIN/COMMIT around a read), for a call
  // whose token is in no cache. Planned once per connection
  // where the connection is the session's own (ExecCached; measured with pgbench on one client:
  // 0.17-0.37 ms prepared against 1.1-1.6 ms as a plain statement on the loaded 2-core machine).
  absl::StatusOr<Principal> principal =
      pool.AutocommitIdempotent([&](pqxx::nontransaction& tx) -> absl::StatusOr<Principal> {
    pqxx::result rows = ExecCached(tx, kTokenLookupSql, pqxx::binarystring(digest));
    if (rows.empty()) {
      unknown = true;
      return Unauthenticated("unknown or revoked token");
    }
    unknown = false;
    Principal principal;
    principal.token_id = rows[0][0].as<std::string>();
    principal.org_id = rows[0][1].as<std::string>();
    if (!ParseRole(rows[0][2].as<std::string>(), &principal.role)) {
      return Internal("token has an unknown role");
    }
    principal.subject = rows[0][3].as<std::string>();
    principal.module_enabled = rows[0][4].as<bool>();
    return principal;
  });
  if (cache != nullptr && principal.ok()) cache->Store(digest, *principal, generation);
  if (cache != nullptr && unknown) cache->StoreUnknown(digest, generation);
  return principal;
}

absl::StatusOr<IssuedToken> CreateToken(DbPool& pool, const std::string& org, Role role,
                                        const std::string& subject, const std::string& label) {
  if (role == Role::kCustomer && subject.empty()) {
    // An empty subject would match no customer, or (in a careless query) every one.
    return InvalidInput("subject", "a customer token needs the customer it speaks for");
  }
  unsigned char random[32];
  if (RAND_bytes(random, sizeof(random)) != 1) return Internal("no randomness for a token");
  IssuedToken issued;
  issued.token = "dcl_" + absl::BytesToHexString(
                              absl::string_view(reinterpret_cast<char*>(random), sizeof(random)));
  const std::string org_column = IsUuid(org) ? "id::text" : "name";
  auto id = pool.Transact([&](pqxx::work& tx) -> absl::StatusOr<std::string> {
    pqxx::result rows = tx.exec_params(
        "INSERT INTO api_tokens (org_id, role, subject, label, token_sha256) "
        "SELECT id, $2, $3, $4, $5 FROM organizations "
        "WHERE " + org_column + " = $1 RETURNING id",
        org, RoleName(role), subject, label, pqxx::binarystring(TokenDigest(issued.token)));
    if (rows.empty()) return NotFound("organization", org);
    return rows[0][0].as<std::string>();
  });
  if (!id.ok()) return id.status();
  issued.id = *id;
  return issued;
}

absl::Status RevokeToken(DbPool& pool, const std::string& token_id) {
  if (absl::Status valid = CheckId("token_id", token_id); !valid.ok()) return valid;
  return ChangeAuthFacts(pool, [&](pqxx::work& tx) -> absl::Status {
    pqxx::result rows = tx.exec_params(
        "UPDATE api_tokens SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1 "
        "RETURNING id",
        token_id);
    if (rows.empty()) return NotFound("token", token_id);
    return absl::OkStatus();
  });
}

}  // namespace dcl
