// Authentication: a bearer token resolves to a principal (principal.h: organization, role).
// Tokens are stored only as SHA-256 digests; a token is printed once, when it is created. The
// digest is computed in this process: no statement sent to the database carries a token.
#ifndef DCL_SERVICES_COMMON_AUTH_H_
#define DCL_SERVICES_COMMON_AUTH_H_

#include <string>

#include "absl/status/statusor.h"
#include "services/common/db.h"
#include "services/common/principal.h"
#include "services/common/rpc_catalog.h"

namespace dcl {

// The token from an "authorization: Bearer <token>" value; "" when malformed.
std::string BearerToken(const std::string& authorization);

class TokenCache;  // token_cache.h

// The token's SHA-256, as api_tokens stores it and the token cache keys it (32 bytes).
std::string TokenDigest(const std::string& token);

// Looks a token up by digest; unknown or revoked → UNAUTHENTICATED. With a cache, a token it
// holds costs no statement; either way a revocation takes effect on the next call (the cache is
// emptied before the revocation returns, token_cache.h). A refused token is refused from the
// cache for a few seconds (its negative entries, token_cache.h), never accepted from it.
absl::StatusOr<Principal> Authenticate(DbPool& pool, const std::string& token,
                                       TokenCache* cache = nullptr);

struct IssuedToken {
  std::string id;
  std::string token;  // the clear text: shown once, never stored
};

// Creates a token for (org, role, subject); `org` is an organization id or name.
absl::StatusOr<IssuedToken> CreateToken(DbPool& pool, const std::string& org, Role role,
                                        const std::string& subject, const std::string& label);

// Revokes a token by id; revoking twice is harmless. Returns once no server's token cache holds
// it any more (ChangeAuthFacts, token_cache.h).
absl::Status RevokeToken(DbPool& pool, const std::string& token_id);

}  // namespace dcl

#endif  // DCL_SERVICES_COMMON_AUTH_H_
