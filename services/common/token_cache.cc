#include "services/common/token_cache.h"

#include <poll.h>

#include <set>
#include <vector>

#include <pqxx/pqxx>
#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "services/common/db_errors.h"
#include "services/common/status.h"

namespace dcl {

namespace {

constexpr char kChangedChannel[] = "dcl_auth_changed";
constexpr char kAckChannel[] = "dcl_auth_ack";

// Collects the payloads (and senders) of one channel's notifications as libpqxx delivers them;
// the owner acts on them after the delivering call returns (no statement runs inside it).
class Collector : public pqxx::notification_receiver {
 public:
  Collector(pqxx::connection_base& conn, const std::string& channel)
      : pqxx::notification_receiver(conn, channel) {}
  void operator()(const std::string& payload, int backend_pid) override {
    received.emplace_back(payload, backend_pid);
  }
  std::vector<std::pair<std::string, int>> received;
};

}  // namespace

TokenCache::TokenCache(Options options)
    : options_(std::move(options)), listener_([this] { Listen(); }) {}

TokenCache::~TokenCache() {
  stopping_.store(true);
  listener_.join();
}

bool TokenCache::Trusted() const {
  if (!listening_.load(std::memory_order_acquire) || draining_.load(std::memory_order_acquire)) {
    return false;
  }
  // Anything waiting on the listening session's socket (a notification the listening thread has
  // not read yet, or the end of the session) means the cache may be stale: not trusted until the
  // thread has acted on it. One poll() without waiting.
  pollfd socket{listener_fd_.load(std::memory_order_acquire), POLLIN, 0};
  return socket.fd >= 0 && ::poll(&socket, 1, 0) == 0;
}

std::optional<Principal> TokenCache::Find(const std::string& digest) const {
  if (!Trusted()) return std::nullopt;
  const absl::Time now = options_.now();
  absl::ReaderMutexLock lock(&mu_);
  auto it = principals_.find(digest);
  // An expired entry stays until it is replaced or the cache is emptied; it is never answered.
  if (it == principals_.end() || it->second.expires <= now) return std::nullopt;
  return it->second.principal;
}

bool TokenCache::HeldUnknown(const std::string& digest) const {
  if (!Trusted()) return false;
  const absl::Time now = options_.now();
  absl::ReaderMutexLock lock(&mu_);
  auto it = unknown_.find(digest);
  return it != unknown_.end() && it->second > now;
}

bool TokenCache::AwaitListening(absl::Duration timeout) const {
  const absl::Time give_up = absl::Now() + timeout;
  while (!Listening() && absl::Now() < give_up) absl::SleepFor(absl::Milliseconds(10));
  return Listening();
}

uint64_t TokenCache::Generation() const {
  absl::ReaderMutexLock lock(&mu_);
  return generation_;
}

void TokenCache::Store(const std::string& digest, const Principal& principal,
                       uint64_t generation) {
  if (!Trusted()) return;
  absl::MutexLock lock(&mu_);
  // Read before a notification this cache has since acted on: it may be the old fact.
  if (generation != generation_) return;
  if (principals_.size() >= options_.max_entries) principals_.clear();
  principals_[digest] = Held{principal, options_.now() + options_.principal_ttl};
  unknown_.erase(digest);
}

void TokenCache::StoreUnknown(const std::string& digest, uint64_t generation) {
  if (!Trusted()) return;
  absl::MutexLock lock(&mu_);
  // Read before a notification this cache has since acted on: the token may exist by now.
  if (generation != generation_) return;
  if (unknown_.size() >= options_.max_unknown_entries) unknown_.clear();
  unknown_[digest] = options_.now() + options_.unknown_ttl;
  principals_.erase(digest);
}

void TokenCache::DropAll() {
  absl::MutexLock lock(&mu_);
  principals_.clear();
  unknown_.clear();
  ++generation_;
}

void TokenCache::Listen() {
  while (!stopping_.load()) {
    try {
      ListenOnce();
    } catch (const std::exception& e) {
      spdlog::warn("token cache: listening session lost ({}); every call reads its token from "
                   "the database until it listens again",
                   e.what());
    }
    // Not listening (ListenOnce's guard said so before the session closed): hold nothing, so no
    // notification can be missed.
    DropAll();
    const absl::Time resume = absl::Now() + options_.reconnect_delay;
    while (!stopping_.load() && absl::Now() < resume) absl::SleepFor(absl::Milliseconds(20));
  }
}

void TokenCache::ListenOnce() {
  pqxx::connection conn(options_.database_url);
  // A silently re-established session would have missed the notifications in between.
  conn.inhibit_reactivation(true);
  const int pid = conn.backendpid();
  // Declared after the session, so destroyed before it: no caller polls a closed socket.
  struct NotListening {
    TokenCache* cache;
    ~NotListening() {
      cache->listening_.store(false, std::memory_order_release);
      cache->draining_.store(false, std::memory_order_release);
      cache->listener_pid_.store(0, std::memory_order_release);
      cache->listener_fd_.store(-1, std::memory_order_release);
    }
  } guard{this};
  {
    // Without the triggers of migration 0036 (not applied yet, or disabled) no change would ever
    // be notified: a cache would keep revoked tokens. Then there is no cache.
    pqxx::nontransaction tx(conn);
    const int64_t enabled =
        tx.exec("SELECT count(*) FROM pg_trigger WHERE tgenabled <> 'D' AND tgname IN "
                "('api_tokens_auth_changed', 'feature_settings_auth_changed', "
                "'organization_feature_settings_auth_changed')")[0][0]
            .as<int64_t>();
    if (enabled != 3) {
      throw std::runtime_error(
          "the schema does not notify changes of tokens and module switches (migration 0036 "
          "missing or its triggers disabled); no token cache");
    }
  }
  Collector changes(conn, kChangedChannel);  // LISTEN, now
  {
    // Named only now that it listens: a writer waits for the sessions carrying this name, and
    // each of them is sure to receive its notification.
    pqxx::nontransaction tx(conn);
    tx.exec(absl::StrCat("SET application_name = '", kTokenCacheApplicationName, "'"));
  }
  DropAll();
  listener_fd_.store(conn.sock(), std::memory_order_release);
  listener_pid_.store(pid, std::memory_order_release);
  listening_.store(true, std::memory_order_release);
  while (!stopping_.load()) {
    // Notifications that arrived while the answers below were sent are already read (libpqxx
    // delivers them after each statement): act on them at once.
    if (changes.received.empty()) {
      pollfd socket{conn.sock(), POLLIN, 0};
      if (::poll(&socket, 1, 200) <= 0) continue;
    }
    // Something arrived: untrusted from before it is read until it is acted on.
    draining_.store(true, std::memory_order_release);
    if (changes.received.empty()) {
      if (conn.get_notifs() == 0) {
        // Not a notification: a notice, a message cut short, or the FATAL of a session being
        // ended, which libpq reads as a notice before the end itself arrives. One round trip
        // tells them apart (an ended session throws, and the cache holds nothing until a new
        // one listens); until it has, the cache stays untrusted.
        pqxx::nontransaction(conn).exec("SELECT 1");
        if (changes.received.empty()) {
          draining_.store(false, std::memory_order_release);
          continue;
        }
      }
      if (conn.backendpid() != pid || !conn.is_open()) {
        throw std::runtime_error("the listening session was replaced");
      }
    }
    DropAll();
    invalidations_.fetch_add(changes.received.size(), std::memory_order_acq_rel);
    // Answer after dropping: the writer may return as soon as every answer is in.
    std::set<std::string> payloads;
    for (const auto& [payload, sender] : changes.received) payloads.insert(payload);
    changes.received.clear();
    pqxx::nontransaction tx(conn);
    for (const std::string& payload : payloads) {
      tx.exec_params("SELECT pg_notify($1, $2)", kAckChannel, payload);
    }
    draining_.store(false, std::memory_order_release);
  }
}

absl::Status ChangeAuthFacts(DbPool& pool, const std::function<absl::Status(pqxx::work&)>& fn,
                             absl::Duration wait) {
  absl::StatusOr<DbPool::Lease> lease = pool.Acquire();
  if (!lease.ok()) return lease.status();
  pqxx::connection& conn = lease->conn();
  std::string change;  // the payload the caches answer with: the changing transaction's id
  try {
    Collector acks(conn, kAckChannel);  // LISTEN before the change commits
    {
      pqxx::work tx(conn);
      // Behind a transaction pooler the limits travel with each transaction (DbPool::Transact).
      if (!pool.per_transaction_settings().empty()) tx.exec(pool.per_transaction_settings());
      absl::Status status = fn(tx);
      if (!status.ok()) return status;  // rolled back by the destructor
      const std::string txid = tx.exec("SELECT txid_current()::text")[0][0].as<std::string>();
      tx.commit();
      change = txid;  // set only once committed: the messages below say so
    }
    std::string committed_at;  // by the database's clock, just after the commit
    {
      pqxx::nontransaction tx(conn);
      committed_at = tx.exec("SELECT clock_timestamp()::text")[0][0].as<std::string>();
    }
    // The caches listening now received the change (they listened before it committed, or
    // they started after it and read only the new fact). Their answers may already be in.
    const absl::Time deadline = absl::Now() + wait;
    std::set<int> answered;
    std::set<int> waiting;
    for (;;) {
      {
        pqxx::nontransaction tx(conn);
        // Sessions that ended meanwhile need no answer: their caches hold nothing from the moment
        // the session's end reaches them. Nor do sessions opened after the commit: they listen
        // too late to receive the change, and read only the new fact. A session whose start this
        // role may not see (another role's, without pg_read_all_stats) must answer.
        waiting.clear();
        for (const pqxx::row& row : tx.exec_params(
                 "SELECT pid FROM pg_stat_activity "
                 "WHERE datname = current_database() AND application_name = $1 "
                 "AND (backend_start < $2::timestamptz OR backend_start IS NULL)",
                 kTokenCacheApplicationName, committed_at)) {
          waiting.insert(row[0].as<int>());
        }
      }
      for (const auto& [payload, sender] : acks.received) {
        if (payload == change) answered.insert(sender);
      }
      for (int pid : answered) waiting.erase(pid);
      if (waiting.empty()) return absl::OkStatus();
      if (absl::Now() >= deadline) break;
      conn.await_notification(0, 50000);
    }
    return Error(absl::StatusCode::kDeadlineExceeded, v1::DATABASE_UNAVAILABLE,
                 absl::StrCat("the change is committed, but ", waiting.size(),
                              " server token cache(s) did not confirm dropping the old fact "
                              "within ",
                              absl::FormatDuration(wait), " (listening sessions ",
                              absl::StrJoin(waiting, ", "),
                              "): those servers may accept it until they receive it"));
  } catch (const std::exception& e) {
    if (dynamic_cast<const pqxx::broken_connection*>(&e) != nullptr) lease->MarkBroken();
    if (change.empty()) return DbErrorToStatus(e);
    return Error(absl::StatusCode::kUnavailable, v1::DATABASE_UNAVAILABLE,
                 absl::StrCat("the change is committed, but the wait for the token caches' "
                              "confirmation broke off: ",
                              e.what()));
  }
}

}  // namespace dcl
