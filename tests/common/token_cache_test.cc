// The token cache (services/common/token_cache.h) against a real PostgreSQL: a held token costs no
// statement, and every change of an authentication fact is refused or seen on the very next call
// of every cache: revocation, the module switch, a cache whose session ended, a writer whose
// cache never answers.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

#include "services/common/auth.h"
#include "services/common/token_cache.h"
#include "tests/support/fixtures.h"
#include "tests/support/test_db.h"

namespace dcl {
namespace {

struct Fixture {
  testing::TestDatabase db;
  std::unique_ptr<DbPool> pool = db.MakePool(4);
  std::string org = testing::CreateOrg(db, "acme");

  std::unique_ptr<TokenCache> StartCache(TokenCache::Options options = {}) const {
    options.database_url = db.service_url();
    options.reconnect_delay = absl::Milliseconds(100);
    auto cache = std::make_unique<TokenCache>(options);
    REQUIRE(cache->AwaitListening(absl::Seconds(5)));
    return cache;
  }

  static bool WaitFor(const std::function<bool()>& condition) {
    for (int i = 0; i < 500; ++i) {
      if (condition()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
};

// Authenticates until the cache holds the token. A notification that reaches a cache after it
// began listening but was committed just before (the fixture's own changes) empties it once more,
// and a listening thread still finishing its last notification (a loaded machine) keeps it
// untrusted a moment longer: both only delay the refill.
bool Hold(DbPool& pool, const std::string& token, TokenCache& cache) {
  for (int attempt = 0; attempt < 200; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    // A session that reconnects holds nothing until it listens again.
    cache.AwaitListening(absl::Seconds(3));
    if (!Authenticate(pool, token, &cache).ok()) return false;
    if (cache.Find(TokenDigest(token)).has_value()) return true;
  }
  return false;
}

// Statements this thread sent for one Authenticate.
uint64_t StatementsOf(const std::function<void()>& call) {
  const uint64_t before = DbStatementsOnThisThread();
  call();
  return DbStatementsOnThisThread() - before;
}

// A clock the test moves: the cache's ttls read it (TokenCache::Options::now).
struct TestClock {
  std::atomic<int64_t> ahead_seconds{0};
  void Advance(absl::Duration d) { ahead_seconds += absl::ToInt64Seconds(d); }
  std::function<absl::Time()> Now() {
    return [this] { return absl::Now() + absl::Seconds(ahead_seconds.load()); };
  }
};

// Authenticates `token` until it is refused without a statement (from the cache's negative
// entries); like Hold, a late notification of the fixture's own changes only delays it.
bool RefusedFromMemory(DbPool& pool, const std::string& token, TokenCache& cache) {
  for (int attempt = 0; attempt < 200; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    cache.AwaitListening(absl::Seconds(3));
    absl::StatusOr<Principal> refused;
    const uint64_t statements = StatementsOf([&] { refused = Authenticate(pool, token, &cache); });
    if (refused.status().code() != absl::StatusCode::kUnauthenticated) return false;
    if (statements == 0) return true;
  }
  return false;
}

TEST_CASE("a token the cache holds costs no statement") {
  Fixture f;
  auto cache = f.StartCache();
  const std::string token = testing::CreateTokenFor(f.db, f.org, Role::kCommerce);
  absl::StatusOr<Principal> first;
  CHECK(StatementsOf([&] { first = Authenticate(*f.pool, token, cache.get()); }) >= 1);
  REQUIRE(first.ok());
  REQUIRE(Hold(*f.pool, token, *cache));
  absl::StatusOr<Principal> second;
  CHECK(StatementsOf([&] { second = Authenticate(*f.pool, token, cache.get()); }) == 0);
  REQUIRE(second.ok());
  CHECK(second->token_id == first->token_id);
  CHECK(second->org_id == f.org);
  CHECK(second->role == Role::kCommerce);
  CHECK(second->module_enabled);
}

TEST_CASE("an unknown token is refused from memory for unknown_ttl at most; created meanwhile, it "
          "is accepted once that refusal expires") {
  Fixture f;
  TestClock clock;
  TokenCache::Options options;
  options.now = clock.Now();
  auto cache = f.StartCache(options);
  const std::string token = "dcl_not_issued_yet";
  absl::StatusOr<Principal> first;
  CHECK(StatementsOf([&] { first = Authenticate(*f.pool, token, cache.get()); }) >= 1);
  CHECK(first.status().code() == absl::StatusCode::kUnauthenticated);
  REQUIRE(RefusedFromMemory(*f.pool, token, *cache));
  CHECK(cache->HeldUnknown(TokenDigest(token)));

  // Past unknown_ttl (5 s) the database is asked again.
  clock.Advance(options.unknown_ttl + absl::Seconds(1));
  CHECK_FALSE(cache->HeldUnknown(TokenDigest(token)));
  absl::StatusOr<Principal> again;
  CHECK(StatementsOf([&] { again = Authenticate(*f.pool, token, cache.get()); }) >= 1);
  CHECK(again.status().code() == absl::StatusCode::kUnauthenticated);
  REQUIRE(RefusedFromMemory(*f.pool, token, *cache));

  // The token comes into existence. An INSERT into api_tokens notifies nothing (migration 0036:
  // a new token was in no cache), so the refusal held from before stands until it expires.
  f.db.Exec("INSERT INTO api_tokens (org_id, role, subject, label, token_sha256) VALUES ('" +
            f.org + "', 'dc-operator', '', 'late', sha256(convert_to('" + token + "', 'UTF8')))");
  CHECK(Authenticate(*f.pool, token, cache.get()).status().code() ==
        absl::StatusCode::kUnauthenticated);
  clock.Advance(options.unknown_ttl + absl::Seconds(1));
  absl::StatusOr<Principal> accepted = Authenticate(*f.pool, token, cache.get());
  REQUIRE(accepted.ok());
  CHECK(accepted->role == Role::kDcOperator);
}

TEST_CASE("a revoked token stays refused: from memory, then from the database, however many "
          "unknown tokens pass") {
  Fixture f;
  TestClock clock;
  TokenCache::Options options;
  options.now = clock.Now();
  options.max_unknown_entries = 3;
  auto cache = f.StartCache(options);
  auto issued = CreateToken(*f.pool, f.org, Role::kCommerce, "", "to revoke");
  REQUIRE(issued.ok());
  REQUIRE(Hold(*f.pool, issued->token, *cache));
  REQUIRE(RevokeToken(*f.pool, issued->id).ok());
  REQUIRE(RefusedFromMemory(*f.pool, issued->token, *cache));
  CHECK_FALSE(cache->Find(TokenDigest(issued->token)).has_value());
  // More unknown tokens than the set holds: it is emptied, and the revoked one read again.
  for (int i = 0; i < 5; ++i) {
    CHECK(Authenticate(*f.pool, "dcl_stranger_" + std::to_string(i), cache.get()).status().code() ==
          absl::StatusCode::kUnauthenticated);
    CHECK(Authenticate(*f.pool, issued->token, cache.get()).status().code() ==
          absl::StatusCode::kUnauthenticated);
  }
  clock.Advance(options.unknown_ttl + absl::Seconds(1));
  CHECK(Authenticate(*f.pool, issued->token, cache.get()).status().code() ==
        absl::StatusCode::kUnauthenticated);
  CHECK_FALSE(cache->Find(TokenDigest(issued->token)).has_value());
}

TEST_CASE("a held principal is trusted for principal_ttl at most: a revocation whose notice "
          "never arrives is refused after it") {
  Fixture f;
  // Issued before the cache listens: no notification of it can arrive later and empty the cache.
  auto issued = CreateToken(*f.pool, f.org, Role::kCommerce, "", "notice lost");
  REQUIRE(issued.ok());
  TestClock clock;
  TokenCache::Options options;
  options.now = clock.Now();
  auto cache = f.StartCache(options);
  REQUIRE(Hold(*f.pool, issued->token, *cache));
  // The notice is lost: the trigger is off while the token is revoked (the cache checks the
  // triggers only when its session starts).
  f.db.Exec("ALTER TABLE api_tokens DISABLE TRIGGER api_tokens_auth_changed");
  f.db.Exec("UPDATE api_tokens SET revoked_at = now() WHERE id = '" + issued->id + "'");
  // Within the ttl the cache still answers (what the ttl bounds)...
  clock.Advance(options.principal_ttl - absl::Seconds(5));
  CHECK(Authenticate(*f.pool, issued->token, cache.get()).ok());
  // ...and past it the database is asked, and refuses.
  clock.Advance(absl::Seconds(6));
  CHECK(Authenticate(*f.pool, issued->token, cache.get()).status().code() ==
        absl::StatusCode::kUnauthenticated);
}

TEST_CASE("a revocation returns only when no cache of any server holds the token any more") {
  // Two caches stand for two replicas. Each round: both hold a fresh token, the token is revoked
  // through the real path, and the very next lookup in either is refused. Without the writer's
  // wait for the caches' answers this fails within a few rounds: the revocation returns while
  // the notification is still on its way to the listening threads.
  Fixture f;
  auto replica_a = f.StartCache();
  auto replica_b = f.StartCache();
  for (int round = 0; round < 40; ++round) {
    auto issued = CreateToken(*f.pool, f.org, Role::kCommerce, "", "round");
    REQUIRE(issued.ok());
    REQUIRE(Hold(*f.pool, issued->token, *replica_a));
    REQUIRE(Hold(*f.pool, issued->token, *replica_b));

    REQUIRE(RevokeToken(*f.pool, issued->id).ok());

    INFO("round " << round);
    CHECK(Authenticate(*f.pool, issued->token, replica_a.get()).status().code() ==
          absl::StatusCode::kUnauthenticated);
    CHECK(Authenticate(*f.pool, issued->token, replica_b.get()).status().code() ==
          absl::StatusCode::kUnauthenticated);
  }
}

TEST_CASE("switching the module off for an organization is seen on the next call") {
  Fixture f;
  auto cache = f.StartCache();
  const std::string token = testing::CreateTokenFor(f.db, f.org, Role::kCommerce);
  REQUIRE(Hold(*f.pool, token, *cache));
  REQUIRE(cache->Find(TokenDigest(token))->module_enabled);
  REQUIRE(ChangeAuthFacts(*f.pool, [&](pqxx::work& tx) -> absl::Status {
            tx.exec_params("UPDATE organization_feature_settings SET enabled = false "
                           "WHERE org_id = $1",
                           f.org);
            return absl::OkStatus();
          })
              .ok());
  absl::StatusOr<Principal> after = Authenticate(*f.pool, token, cache.get());
  REQUIRE(after.ok());
  CHECK_FALSE(after->module_enabled);
}

TEST_CASE("a principal read before a change the cache has acted on is not kept") {
  Fixture f;
  auto cache = f.StartCache();
  const std::string token = testing::CreateTokenFor(f.db, f.org, Role::kCommerce);
  absl::StatusOr<Principal> read = Authenticate(*f.pool, token);  // from the database
  REQUIRE(read.ok());
  const uint64_t generation = cache->Generation();
  const uint64_t invalidations = cache->Invalidations();
  // A change by a writer that does not wait (plain SQL, another tool): the notification alone.
  f.db.Exec("UPDATE api_tokens SET label = 'relabelled'");
  REQUIRE(Fixture::WaitFor([&] { return cache->Invalidations() > invalidations; }));
  cache->Store(TokenDigest(token), *read, generation);
  CHECK_FALSE(cache->Find(TokenDigest(token)).has_value());
  // Read afresh, it is kept.
  CHECK(Hold(*f.pool, token, *cache));
}

TEST_CASE("a cache whose session ends holds nothing, and listens again") {
  Fixture f;
  auto cache = f.StartCache();
  auto issued = CreateToken(*f.pool, f.org, Role::kCommerce, "", "kept");
  REQUIRE(issued.ok());
  REQUIRE(Hold(*f.pool, issued->token, *cache));
  const int pid = cache->ListenerBackendPid();
  REQUIRE(pid > 0);
  f.db.Exec("SELECT pg_terminate_backend(" + std::to_string(pid) + ")");
  // Revoked while nothing listens: the writer waits for nobody, and the token is refused at once
  // (the ended session's socket is readable, so the cache is not trusted even before its thread
  // has noticed).
  REQUIRE(RevokeToken(*f.pool, issued->id).ok());
  CHECK_FALSE(cache->Find(TokenDigest(issued->token)).has_value());
  CHECK(Authenticate(*f.pool, issued->token, cache.get()).status().code() ==
        absl::StatusCode::kUnauthenticated);
  // A new session, and the cache works again.
  REQUIRE(Fixture::WaitFor([&] {
    return cache->Listening() && cache->ListenerBackendPid() != pid;
  }));
  const std::string token = testing::CreateTokenFor(f.db, f.org, Role::kCommerce);
  REQUIRE(Hold(*f.pool, token, *cache));
  CHECK(StatementsOf([&] { REQUIRE(Authenticate(*f.pool, token, cache.get()).ok()); }) == 0);
}

TEST_CASE("without the schema's notifications there is no cache: every call reads its token") {
  Fixture f;
  f.db.Exec("ALTER TABLE api_tokens DISABLE TRIGGER api_tokens_auth_changed");
  TokenCache::Options options;
  options.database_url = f.db.service_url();
  options.reconnect_delay = absl::Milliseconds(50);
  TokenCache cache(options);
  const std::string token = testing::CreateTokenFor(f.db, f.org, Role::kCommerce);
  for (int i = 0; i < 20; ++i) {
    CHECK(StatementsOf([&] { REQUIRE(Authenticate(*f.pool, token, &cache).ok()); }) >= 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  CHECK_FALSE(cache.Listening());
  // With the trigger back, the cache listens and holds.
  f.db.Exec("ALTER TABLE api_tokens ENABLE TRIGGER api_tokens_auth_changed");
  REQUIRE(cache.AwaitListening(absl::Seconds(5)));
  CHECK(Hold(*f.pool, token, cache));
}

TEST_CASE("a writer whose cache never answers says so, and its change stands") {
  Fixture f;
  // A session that claims to be a token cache and listens, but never answers: a hung server.
  auto silent = f.db.Connect();
  pqxx::nontransaction(*silent).exec(std::string("LISTEN dcl_auth_changed; SET application_name = '") +
                                     kTokenCacheApplicationName + "'");
  auto issued = CreateToken(*f.pool, f.org, Role::kCommerce, "", "to revoke");
  REQUIRE(issued.ok());
  absl::Status status = ChangeAuthFacts(
      *f.pool,
      [&](pqxx::work& tx) -> absl::Status {
        tx.exec_params("UPDATE api_tokens SET revoked_at = now() WHERE id = $1", issued->id);
        return absl::OkStatus();
      },
      absl::Milliseconds(300));
  CHECK(status.code() == absl::StatusCode::kDeadlineExceeded);
  CHECK_THAT(std::string(status.message()),
             Catch::Contains("the change is committed") &&
                 Catch::Contains(std::to_string(silent->backendpid())));
  CHECK(f.db.Count("SELECT count(*) FROM api_tokens WHERE revoked_at IS NOT NULL AND id = '" +
                   issued->id + "'") == 1);
  // A refused change (the writer's own error) rolls back and waits for nobody.
  absl::Status refused = ChangeAuthFacts(*f.pool, [&](pqxx::work& tx) -> absl::Status {
    tx.exec("UPDATE api_tokens SET label = 'never'");
    return absl::NotFoundError("the writer's own refusal");
  });
  CHECK(refused.code() == absl::StatusCode::kNotFound);
  CHECK(f.db.Count("SELECT count(*) FROM api_tokens WHERE label = 'never'") == 0);
}

}  // namespace
}  // namespace dcl
