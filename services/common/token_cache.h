// The principals of tokens this process has seen, kept in memory so that a call spends no round
// trip on its token, and dropped the moment a fact of authentication changes.
//
// Without it every call's first statement is the token's SELECT (auth.h): a round trip and a
// statement per call, a quarter of the cheapest write's work. With it, a revocation must still be
// refused on the very next call. The protocol (schema/migrations/0036_auth_change_notify.sql):
//   * every statement changing api_tokens, feature_settings or organization_feature_settings
//     notifies dcl_auth_changed with its transaction id, delivered at COMMIT;
//   * the cache listens on its own session (not through a transaction-pooling PgBouncer, which
//     would lose the session's LISTEN), drops everything on each notification and answers on
//     dcl_auth_ack with the payload it received;
//   * the writer (ChangeAuthFacts below) waits after its commit until every listening cache has
//     answered; so when `dclctl token revoke` returns, no cache holds the token any more.
// A cache whose session is not listening (before it has connected, after its connection broke,
// while it reconnects) holds nothing and answers nothing: every call reads the database, as
// without a cache. Nor is it trusted while anything waits unread on that session's socket (a
// notification, the session's end). A principal read while a notification arrived is not kept
// (the generation).
//
// Two bounds beside the notifications:
//   * a held principal is trusted for at most `principal_ttl` (60 s) after it was stored, then
//     read again: the backstop for a notification that never arrives while the session still
//     looks alive (a server whose listening session hangs). A revocation is then refused within
//     the ttl even without its notice;
//   * a token the database does not know (unknown, or revoked) is refused from memory for
//     `unknown_ttl` (5 s), at most `max_unknown_entries` of them (10,000; a full set is
//     emptied): a client repeating a bad token costs one statement per 5 s, not one per call.
//     It only ever refuses: an entry is dropped by every notification like the rest, and its
//     expiry sends the token back to the database, which still refuses a revoked one. Creating
//     a token notifies nothing (0036), so a token refused before it existed (presented before
//     it was issued: never, for tokens dclctl prints after their commit) is accepted once its
//     refusal expires, within unknown_ttl.
#ifndef DCL_SERVICES_COMMON_TOKEN_CACHE_H_
#define DCL_SERVICES_COMMON_TOKEN_CACHE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "services/common/auth.h"
#include "services/common/db.h"

namespace dcl {

// The application_name a cache's listening session carries, set only once it listens: a writer
// waits for the answers of exactly these sessions.
inline constexpr char kTokenCacheApplicationName[] = "dcl-token-cache";

class TokenCache {
 public:
  struct Options {
    std::string database_url;  // a direct session, never a transaction pooler
    size_t max_entries = 10000;  // a full cache is emptied, not grown
    absl::Duration reconnect_delay = absl::Seconds(1);
    // How long a principal is trusted without a new read (the backstop, see above).
    absl::Duration principal_ttl = absl::Seconds(60);
    // How long, and how many, unknown or revoked tokens are refused without a statement.
    absl::Duration unknown_ttl = absl::Seconds(5);
    size_t max_unknown_entries = 10000;  // a full set is emptied, not grown
    // The clock of the two ttls (tests move it).
    std::function<absl::Time()> now = [] { return absl::Now(); };
  };

  // Starts the listening thread; until it listens, Find finds nothing.
  explicit TokenCache(Options options);
  ~TokenCache();
  TokenCache(const TokenCache&) = delete;
  TokenCache& operator=(const TokenCache&) = delete;

  // The principal of a token (by its SHA-256 digest), if held and within principal_ttl.
  std::optional<Principal> Find(const std::string& digest) const;
  // Whether the token (by digest) was found unknown or revoked within unknown_ttl.
  bool HeldUnknown(const std::string& digest) const;

  // Taken before reading a principal from the database and handed to Store (or StoreUnknown)
  // with it: a principal or a refusal read across a notification is stale and not kept.
  uint64_t Generation() const;
  void Store(const std::string& digest, const Principal& principal, uint64_t generation);
  // The database knows no unrevoked token of this digest.
  void StoreUnknown(const std::string& digest, uint64_t generation);

  // True while the session listens (the cache may hold principals).
  bool Listening() const { return listening_.load(std::memory_order_acquire); }
  // Waits up to `timeout` for Listening(); returns it (benchmarks and tests that must measure
  // or prove the cache in use, not the database path a cache takes while it connects).
  bool AwaitListening(absl::Duration timeout) const;
  // The listening session's backend pid, 0 when not listening (tests end it to prove recovery).
  int ListenerBackendPid() const { return listener_pid_.load(std::memory_order_acquire); }
  // Notifications received so far (tests wait on it).
  uint64_t Invalidations() const { return invalidations_.load(std::memory_order_acquire); }

 private:
  void Listen();
  void ListenOnce();
  void DropAll();
  bool Trusted() const;

  const Options options_;
  mutable absl::Mutex mu_;
  struct Held {
    Principal principal;
    absl::Time expires;
  };
  absl::flat_hash_map<std::string, Held> principals_ ABSL_GUARDED_BY(mu_);
  // Digests of tokens the database refused, with the time their refusal expires.
  absl::flat_hash_map<std::string, absl::Time> unknown_ ABSL_GUARDED_BY(mu_);
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  std::atomic<bool> listening_{false};
  std::atomic<bool> draining_{false};  // the listening thread is reading what arrived
  std::atomic<int> listener_pid_{0};
  std::atomic<int> listener_fd_{-1};
  std::atomic<uint64_t> invalidations_{0};
  std::atomic<bool> stopping_{false};
  std::thread listener_;
};

// Runs fn(pqxx::work&) — statements that change a fact of authentication — in one transaction,
// and after its commit waits up to `wait` until every token cache listening at that moment has
// dropped what it held. OK only when all answered; DEADLINE_EXCEEDED names the caches that did
// not (the change is committed all the same: those servers may go on accepting the old fact until
// they receive it). fn's own error rolls back and is returned.
absl::Status ChangeAuthFacts(DbPool& pool, const std::function<absl::Status(pqxx::work&)>& fn,
                             absl::Duration wait = absl::Seconds(5));

}  // namespace dcl

#endif  // DCL_SERVICES_COMMON_TOKEN_CACHE_H_
