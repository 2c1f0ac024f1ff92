// PostgreSQL access shared by every dcl binary: a bounded connection pool that survives a
// database restart, one transaction helper, savepoints that are really sent, and the guarded
// statement that names the constraint a write violated.
//
// libpqxx exceptions stop here: Transact() classifies them into absl::Status (db_errors.h), so
// stores and domain code never catch driver exceptions themselves.
#ifndef DCL_SERVICES_COMMON_DB_H_
#define DCL_SERVICES_COMMON_DB_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <pqxx/pqxx>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "services/common/db_errors.h"

namespace dcl {

struct DbOptions {
  std::string url;
  int pool_size = 16;
  absl::Duration acquire_timeout = absl::Seconds(5);
  // Server-side deadlines set on every pooled connection: no call waits forever on a lock or
  // a slow statement, and no forgotten transaction pins rows.
  int statement_timeout_ms = 10000;
  int lock_timeout_ms = 5000;
  int idle_in_transaction_timeout_ms = 30000;
  // Behind a transaction-pooling PgBouncer a session-level SET reaches whichever server
  // connection runs it and stays there, not with this client: the limits above are then sent
  // as SET LOCAL at the start of every transaction (one round trip more per transaction)
  // instead of once per connection, and autocommit work runs in a short transaction of its own
  // to carry them (DbPool::AutocommitIdempotent).
  bool transaction_pooler = false;
};

// How many statements PostgreSQL has answered on this thread, over connections of any DbPool:
// every result libpq receives counts one (BEGIN and COMMIT included, a failed statement too; a
// string of several statements counts each). The RPC gate subtracts two readings to learn what
// one call cost. libpqxx 6 has no statement hook, so this is libpq's own result event
// (PGEVT_RESULTCREATE), registered on each pooled connection when it is opened; statements on
// connections of no pool (WatchMove's listener, migrate) are not counted.
uint64_t DbStatementsOnThisThread();

// Statements parsed and planned once per connection. Where the connection is the session's own
// (no transaction-pooling PgBouncer in between), ExecCached runs `sql` as a named prepared
// statement of the connection, named after its text: PostgreSQL parses and plans it on the
// connection's first call only (libpqxx sends the PREPARE with the first execution), which for
// short statements is most of their cost. Behind a transaction pooler the next transaction may
// reach a server connection that never saw the PREPARE (PgBouncer 1.18 does not carry
// protocol-level prepared statements), so there, and outside a DbPool callback, it runs as a
// plain parameterised statement. DbPool::Transact and AutocommitIdempotent set which applies
// (PreparedStatementScope) while their callback runs on the calling thread.
// Only for SQL texts fixed at compile or start-up time: each distinct text becomes one prepared
// statement on every connection that runs it.
class PreparedStatementScope {
 public:
  explicit PreparedStatementScope(bool prepared);
  ~PreparedStatementScope();
  PreparedStatementScope(const PreparedStatementScope&) = delete;
  PreparedStatementScope& operator=(const PreparedStatementScope&) = delete;

 private:
  const bool previous_;
};
bool PreparedStatementsOnThisThread();
// The statement's name on every connection: "dcl_" and a hash of its text.
std::string PreparedStatementName(const std::string& sql);

template <typename... Args>
pqxx::result ExecCached(pqxx::transaction_base& tx, const std::string& sql, Args&&... args) {
  if (!PreparedStatementsOnThisThread()) return tx.exec_params(sql, std::forward<Args>(args)...);
  const std::string name = PreparedStatementName(sql);
  tx.conn().prepare(name, sql);  // the same definition again is a no-op
  return tx.exec_prepared(name, std::forward<Args>(args)...);
}

// ExecCached for a statement that answers exactly one row (as exec_params1).
template <typename... Args>
pqxx::row ExecCached1(pqxx::transaction_base& tx, const std::string& sql, Args&&... args) {
  pqxx::result r = ExecCached(tx, sql, std::forward<Args>(args)...);
  if (r.size() != 1) {
    throw pqxx::unexpected_rows("expected 1 row, got " + std::to_string(r.size()) + ": " + sql);
  }
  return r[0];
}

// Whether `url` is a connection string libpq can read at all (key=value pairs or a
// postgresql:// URI), without connecting: a malformed one is a configuration error the caller
// reports as such, not an unreachable database to retry. INVALID_ARGUMENT with libpq's reason.
absl::Status CheckConnectionString(const std::string& url);

class DbPool {
 public:
  explicit DbPool(DbOptions options);
  DbPool(const DbPool&) = delete;
  DbPool& operator=(const DbPool&) = delete;
  ~DbPool();

  // One connection for one unit of work; goes back to the pool when the lease ends, unless it
  // was marked broken, in which case it is closed and a new one is opened on demand.
  class Lease {
   public:
    Lease(DbPool* pool, std::unique_ptr<pqxx::connection> conn);
    Lease(Lease&& other) noexcept;
    Lease& operator=(Lease&&) = delete;
    ~Lease();
    pqxx::connection& conn() { return *conn_; }
    void MarkBroken() { broken_ = true; }

   private:
    DbPool* pool_;
    std::unique_ptr<pqxx::connection> conn_;
    bool broken_ = false;
  };

  // Waits up to acquire_timeout for a free slot. `fresh` skips idle connections and opens a
  // new one (used to retry after a broken connection, when the idle ones may be dead too).
  absl::StatusOr<Lease> Acquire(bool fresh = false);

  // Runs fn(pqxx::work&) in one READ COMMITTED transaction; commits when fn returns OK,
  // rolls back otherwise. fn returns absl::Status or absl::StatusOr<T>. A connection found
  // broken before the commit is replaced and fn runs once more on a new one; a failure during
  // the commit itself is reported (in doubt), never retried.
  template <typename Fn>
  std::invoke_result_t<Fn, pqxx::work&> Transact(Fn&& fn);

  // Runs fn(pqxx::nontransaction&) in autocommit: each statement is its own transaction, and a
  // one-statement call is one round trip (no BEGIN, no COMMIT). For work that is a single
  // statement, typically a server-side function. A connection found broken is replaced and fn
  // runs once more on a new one even though the first statement may have committed, so fn must
  // be idempotent (Reserve is: its key replays the hold).
  // Behind a transaction pooler the limits cannot stay on the session, and SET LOCAL outside a
  // transaction does nothing: there fn's statements run in one transaction opened by
  // "BEGIN; SET LOCAL ..." (one message) and committed after fn, two round trips more, so that
  // they too are cut off by statement_timeout and lock_timeout. A callback that goes on after a
  // failed statement calls RestartAfterFailedStatement first.
  template <typename Fn>
  std::invoke_result_t<Fn, pqxx::nontransaction&> AutocommitIdempotent(Fn&& fn);

  // SELECT 1 on a fresh-enough connection; used by the health probe.
  absl::Status Ping();

  // Closes idle connections and refuses new leases (shutdown).
  void Close();

  const DbOptions& options() const { return options_; }

  // The SET LOCAL statements of every transaction with transaction_pooler; empty otherwise. A
  // transaction opened on a lease outside Transact sends them first.
  const std::string& per_transaction_settings() const { return per_transaction_settings_; }

 private:
  std::unique_ptr<pqxx::connection> Connect();
  void Return(std::unique_ptr<pqxx::connection> conn, bool broken);
  // Brings the process's pool gauges (metrics.h) in line with this pool's state: each pool adds
  // what changed since its last report, so the gauges hold the sum over the process's pools.
  void ReportGauges() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const DbOptions options_;
  const std::string per_transaction_settings_;
  // "BEGIN; " and the settings above: how autocommit work starts behind a pooler; empty otherwise.
  const std::string autocommit_block_start_;
  absl::Mutex mu_;
  std::vector<std::unique_ptr<pqxx::connection>> idle_ ABSL_GUARDED_BY(mu_);
  int leased_ ABSL_GUARDED_BY(mu_) = 0;
  int waiters_ ABSL_GUARDED_BY(mu_) = 0;  // callers of Acquire waiting for a free slot
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  // What ReportGauges reported last.
  int reported_idle_ ABSL_GUARDED_BY(mu_) = 0;
  int reported_leased_ ABSL_GUARDED_BY(mu_) = 0;
  int reported_waiters_ ABSL_GUARDED_BY(mu_) = 0;
};

// Inside an AutocommitIdempotent callback, after one of its statements failed and before the
// callback sends another: behind a transaction pooler the callback's statements share one
// transaction (for its limits), which the failure aborted, so this rolls it back and opens a new
// one with the same limits (one round trip). Elsewhere each statement was its own transaction
// and this sends nothing.
void RestartAfterFailedStatement(pqxx::transaction_base& tx);

// Set by AutocommitIdempotent while its callback runs behind a pooler: what
// RestartAfterFailedStatement sends after its ROLLBACK ("" elsewhere).
class AutocommitBlockScope {
 public:
  explicit AutocommitBlockScope(const std::string& block_start);
  ~AutocommitBlockScope();
  AutocommitBlockScope(const AutocommitBlockScope&) = delete;
  AutocommitBlockScope& operator=(const AutocommitBlockScope&) = delete;

 private:
  const std::string* const previous_;
};

// A savepoint sent with a plain exec() at once. (pqxx::subtransaction sends SAVEPOINT lazily
// and not at all before exec_params, so a violation would abort the outer transaction.)
// Rolls back to the savepoint on destruction unless Release() was called.
class Savepoint {
 public:
  Savepoint(pqxx::transaction_base& tx, std::string name);
  Savepoint(const Savepoint&) = delete;
  Savepoint& operator=(const Savepoint&) = delete;
  ~Savepoint();
  void Release();
  void Rollback();

 private:
  pqxx::transaction_base& tx_;
  const std::string name_;
  bool active_ = true;
};

// The outcome of a guarded statement (dcl_guarded_exec in the schema). On an integrity
// violation the statement's effects are undone, the outer transaction stays usable, and
// `violated_constraint` holds the constraint's name from the error's CONSTRAINT_NAME field.
struct GuardedResult {
  std::optional<std::string> returned;  // first column of the first row, if any
  int64_t affected = 0;
  std::string violated_constraint;
  std::string violated_sqlstate;
  bool violated() const { return !violated_sqlstate.empty(); }
};

// Runs `stmt` guarded. The statement reads its arguments as $1[1], $1[2], ... (text; cast them)
// and must return one column (INSERT/UPDATE ... RETURNING id).
GuardedResult GuardedExec(pqxx::transaction_base& tx, const std::string& stmt,
                          const std::vector<std::optional<std::string>>& args);

// The refusal for a violation no mapping expected: the constraint's name and SQLSTATE are
// logged, the caller hears only that `what` could not be written (no schema names leave).
absl::Status UnexpectedViolation(const std::string& what, const GuardedResult& result);

// A text[] literal for the given values (NULL for nullopt).
std::string TextArrayLiteral(const std::vector<std::optional<std::string>>& values);

template <typename Fn>
std::invoke_result_t<Fn, pqxx::work&> DbPool::Transact(Fn&& fn) {
  using Result = std::invoke_result_t<Fn, pqxx::work&>;
  for (int attempt = 0;; ++attempt) {
    absl::StatusOr<Lease> lease = Acquire(/*fresh=*/attempt > 0);
    if (!lease.ok()) return Result(lease.status());
    bool committing = false;
    try {
      pqxx::work tx(lease->conn());
      if (!per_transaction_settings().empty()) tx.exec(per_transaction_settings());
      PreparedStatementScope prepared(!options_.transaction_pooler);
      Result result = fn(tx);
      if (result.ok()) {
        committing = true;
        tx.commit();
      }
      return result;
    } catch (const pqxx::broken_connection& e) {
      lease->MarkBroken();
      if (attempt == 0 && !committing) continue;
      return Result(DbErrorToStatus(e));
    } catch (const pqxx::in_doubt_error& e) {
      lease->MarkBroken();
      return Result(DbErrorToStatus(e));
    } catch (const std::exception& e) {
      return Result(DbErrorToStatus(e));
    }
  }
}

// Rolls back the transaction AutocommitIdempotent opened behind a pooler; a connection on which
// that fails is marked broken.
void EndAutocommitBlock(DbPool::Lease& lease);

template <typename Fn>
std::invoke_result_t<Fn, pqxx::nontransaction&> DbPool::AutocommitIdempotent(Fn&& fn) {
  using Result = std::invoke_result_t<Fn, pqxx::nontransaction&>;
  for (int attempt = 0;; ++attempt) {
    absl::StatusOr<Lease> lease = Acquire(/*fresh=*/attempt > 0);
    if (!lease.ok()) return Result(lease.status());
    bool in_block = false;  // a transaction of ours is open on the connection
    try {
      pqxx::nontransaction tx(lease->conn());
      PreparedStatementScope prepared(!options_.transaction_pooler);
      AutocommitBlockScope block(autocommit_block_start_);
      if (!autocommit_block_start_.empty()) {
        tx.exec(autocommit_block_start_);
        in_block = true;
      }
      Result result = fn(tx);
      if (in_block) {
        // Whatever fn answered: in autocommit its statements would have committed as they ran
        // (and a transaction a failed statement aborted ends in a rollback here).
        tx.exec("COMMIT");
        in_block = false;
      }
      return result;
    } catch (const pqxx::broken_connection& e) {
      lease->MarkBroken();
      if (attempt == 0) continue;
      return Result(DbErrorToStatus(e));
    } catch (const std::exception& e) {
      // The connection goes back to the pool outside any transaction, or not at all.
      if (in_block) EndAutocommitBlock(*lease);
      return Result(DbErrorToStatus(e));
    }
  }
}

}  // namespace dcl

#endif  // DCL_SERVICES_COMMON_DB_H_
