#include "services/common/db.h"

#include <functional>

#include <postgresql/libpq-events.h>
#include <postgresql/libpq-fe.h>
#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"
#include "services/common/metrics.h"
#include "services/common/status.h"

namespace dcl {

namespace {
// Set by PreparedStatementScope (DbPool, while it runs a callback on this thread).
thread_local bool t_prepared_statements = false;
}  // namespace

PreparedStatementScope::PreparedStatementScope(bool prepared)
    : previous_(t_prepared_statements) {
  t_prepared_statements = prepared;
}

PreparedStatementScope::~PreparedStatementScope() { t_prepared_statements = previous_; }

bool PreparedStatementsOnThisThread() { return t_prepared_statements; }

namespace {
// Set by AutocommitBlockScope (AutocommitIdempotent behind a pooler, while its callback runs).
thread_local const std::string* t_autocommit_block_start = nullptr;
}  // namespace

AutocommitBlockScope::AutocommitBlockScope(const std::string& block_start)
    : previous_(t_autocommit_block_start) {
  t_autocommit_block_start = block_start.empty() ? nullptr : &block_start;
}

AutocommitBlockScope::~AutocommitBlockScope() { t_autocommit_block_start = previous_; }

void RestartAfterFailedStatement(pqxx::transaction_base& tx) {
  if (t_autocommit_block_start == nullptr) return;
  tx.exec(absl::StrCat("ROLLBACK; ", *t_autocommit_block_start));
}

void EndAutocommitBlock(DbPool::Lease& lease) {
  try {
    pqxx::nontransaction(lease.conn()).exec("ROLLBACK");
  } catch (const std::exception& e) {
    spdlog::warn("closing a database connection: its transaction did not roll back ({})",
                 e.what());
    lease.MarkBroken();
  }
}

std::string PreparedStatementName(const std::string& sql) {
  // 64 bits of hash: a collision would need two of the program's few hundred texts to meet, and
  // libpqxx would then refuse the second definition under the same name rather than run it.
  return absl::StrCat("dcl_", absl::Hex(std::hash<std::string>{}(sql), absl::kZeroPad16));
}
namespace {

thread_local uint64_t statements_on_this_thread = 0;

// libpq calls this on the thread that reads the result, i.e. the one running the statement.
int CountResults(PGEventId event, void* /*info*/, void* /*pass_through*/) {
  if (event == PGEVT_RESULTCREATE) ++statements_on_this_thread;
  return 1;  // success: libpq goes on
}

// libpqxx 6 hands its PGconn* only to pqxx::largeobject and its subclasses (through a
// transaction): this subclass exists for that accessor alone and is never instantiated.
class RawConnection : public pqxx::largeobject {
 public:
  static PGconn* Of(const pqxx::dbtransaction& tx) {
    return reinterpret_cast<PGconn*>(raw_connection(tx));
  }
};

struct PoolGauges {
  Gauge& max;
  Gauge& in_use;
  Gauge& idle;
  Gauge& waiters;
};

PoolGauges& Gauges() {
  static PoolGauges* gauges = [] {
    MetricsRegistry& registry = MetricsRegistry::Default();
    return new PoolGauges{
        registry.AddGauge("dcl_db_pool_connections_max",
                          "database connections the process's pool may open (--pool_size)")
            .Get(),
        registry.AddGauge("dcl_db_pool_connections_in_use",
                          "database connections leased to a unit of work (or being opened "
                          "for one)")
            .Get(),
        registry.AddGauge("dcl_db_pool_connections_idle",
                          "open database connections waiting in the pool for work")
            .Get(),
        registry.AddGauge("dcl_db_pool_waiters",
                          "callers waiting for a database connection because all are in use")
            .Get(),
    };
  }();
  return *gauges;
}

}  // namespace

uint64_t DbStatementsOnThisThread() { return statements_on_this_thread; }

absl::Status CheckConnectionString(const std::string& url) {
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(url.c_str(), &error);
  if (options == nullptr) {
    std::string reason = error != nullptr ? error : "libpq could not parse it";
    if (error != nullptr) PQfreemem(error);
    while (!reason.empty() && (reason.back() == '\n' || reason.back() == ' ')) reason.pop_back();
    return absl::InvalidArgumentError(
        absl::StrCat("not a PostgreSQL connection string: ", reason));
  }
  PQconninfoFree(options);
  return absl::OkStatus();
}

namespace {

// The server-side limits as SET statements: "SET" once per connection, or "SET LOCAL" at the
// start of each transaction.
std::string LimitSettings(const DbOptions& options, const char* set) {
  return absl::StrCat(set, " statement_timeout = ", options.statement_timeout_ms, "; ", set,
                      " lock_timeout = ", options.lock_timeout_ms, "; ", set,
                      " idle_in_transaction_session_timeout = ",
                      options.idle_in_transaction_timeout_ms);
}

}  // namespace

DbPool::DbPool(DbOptions options)
    : options_(std::move(options)),
      per_transaction_settings_(options_.transaction_pooler ? LimitSettings(options_, "SET LOCAL")
                                                            : ""),
      autocommit_block_start_(options_.transaction_pooler
                                  ? absl::StrCat("BEGIN; ", per_transaction_settings_)
                                  : "") {
  Gauges().max.Add(options_.pool_size);
}

DbPool::~DbPool() {
  Close();
  Gauges().max.Add(-options_.pool_size);
  absl::MutexLock lock(&mu_);
  // Leases outliving their pool are a bug; the gauges forget this pool either way.
  Gauges().in_use.Add(-reported_leased_);
  Gauges().idle.Add(-reported_idle_);
  Gauges().waiters.Add(-reported_waiters_);
}

void DbPool::ReportGauges() {
  const int idle = static_cast<int>(idle_.size());
  PoolGauges& gauges = Gauges();
  if (leased_ != reported_leased_) gauges.in_use.Add(leased_ - reported_leased_);
  if (idle != reported_idle_) gauges.idle.Add(idle - reported_idle_);
  if (waiters_ != reported_waiters_) gauges.waiters.Add(waiters_ - reported_waiters_);
  reported_leased_ = leased_;
  reported_idle_ = idle;
  reported_waiters_ = waiters_;
}

DbPool::Lease::Lease(DbPool* pool, std::unique_ptr<pqxx::connection> conn)
    : pool_(pool), conn_(std::move(conn)) {}

DbPool::Lease::Lease(Lease&& other) noexcept
    : pool_(other.pool_), conn_(std::move(other.conn_)), broken_(other.broken_) {
  other.pool_ = nullptr;
}

DbPool::Lease::~Lease() {
  if (pool_ != nullptr) pool_->Return(std::move(conn_), broken_);
}

std::unique_ptr<pqxx::connection> DbPool::Connect() {
  auto conn = std::make_unique<pqxx::connection>(options_.url);
  // Counting starts with the connection's first unit of work (DbStatementsOnThisThread).
  // Reaching the PGconn takes a transaction: an empty one, BEGIN and ROLLBACK, once per
  // connection; like the rest of opening a connection (the SETs below), it is not counted.
  const uint64_t statements_before_connect = statements_on_this_thread;
  {
    pqxx::work registration(*conn);
    if (PQregisterEventProc(RawConnection::Of(registration), CountResults,
                            "dcl statement count", nullptr) != 1) {
      spdlog::warn("statements on a new database connection are not counted: libpq refused the "
                   "event procedure");
    }
  }
  pqxx::nontransaction setup(*conn);
  // application_name is one of the parameters PgBouncer keeps per client and re-applies on
  // every server connection it hands out, so it is set per session either way.
  setup.exec(options_.transaction_pooler
                 ? std::string("SET application_name = 'dcl'")
                 : absl::StrCat(LimitSettings(options_, "SET"), "; SET application_name = 'dcl'"));
  statements_on_this_thread = statements_before_connect;
  return conn;
}

absl::StatusOr<DbPool::Lease> DbPool::Acquire(bool fresh) {
  std::unique_ptr<pqxx::connection> conn;
  {
    absl::MutexLock lock(&mu_);
    auto has_room = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return closed_ || leased_ < options_.pool_size;
    };
    bool waited = false;
    if (!has_room()) {
      waited = true;
      ++waiters_;
      ReportGauges();
    }
    const bool got_room =
        mu_.AwaitWithTimeout(absl::Condition(&has_room), options_.acquire_timeout);
    if (waited) --waiters_;
    if (!got_room) {
      ReportGauges();
      return Error(absl::StatusCode::kUnavailable, v1::DATABASE_UNAVAILABLE,
                   "no database connection free in time; retry");
    }
    if (closed_) {
      ReportGauges();
      return Error(absl::StatusCode::kUnavailable, v1::DATABASE_UNAVAILABLE,
                   "the server is shutting down");
    }
    ++leased_;
    if (fresh) {
      idle_.clear();  // after a broken connection the idle ones are suspect too
    } else if (!idle_.empty()) {
      conn = std::move(idle_.back());
      idle_.pop_back();
    }
    ReportGauges();
  }
  if (conn == nullptr) {
    try {
      conn = Connect();
    } catch (const std::exception& e) {
      Return(nullptr, /*broken=*/true);
      return DbErrorToStatus(e);
    }
  }
  return Lease(this, std::move(conn));
}

void DbPool::Return(std::unique_ptr<pqxx::connection> conn, bool broken) {
  absl::MutexLock lock(&mu_);
  --leased_;
  if (conn != nullptr && !broken && !closed_ && conn->is_open()) {
    idle_.push_back(std::move(conn));
  }  // else dropped, closed
  ReportGauges();
}

absl::Status DbPool::Ping() {
  return Transact([](pqxx::work& tx) -> absl::Status {
    tx.exec("SELECT 1");
    return absl::OkStatus();
  });
}

void DbPool::Close() {
  absl::MutexLock lock(&mu_);
  closed_ = true;
  idle_.clear();
  ReportGauges();
}

Savepoint::Savepoint(pqxx::transaction_base& tx, std::string name)
    : tx_(tx), name_(std::move(name)) {
  tx_.exec("SAVEPOINT " + name_);
}

Savepoint::~Savepoint() {
  if (!active_) return;
  try {
    Rollback();
  } catch (const std::exception& e) {
    // The transaction is unusable anyway; its owner sees the failure on the next statement.
    spdlog::warn("rollback to savepoint {} failed: {}", name_, e.what());
  }
}

void Savepoint::Release() {
  active_ = false;
  tx_.exec("RELEASE SAVEPOINT " + name_);
}

void Savepoint::Rollback() {
  active_ = false;
  tx_.exec("ROLLBACK TO SAVEPOINT " + name_);
  tx_.exec("RELEASE SAVEPOINT " + name_);
}

absl::Status UnexpectedViolation(const std::string& what, const GuardedResult& result) {
  spdlog::error("writing {} violated unexpected constraint '{}' (sqlstate {})", what,
                result.violated_constraint, result.violated_sqlstate);
  return Internal("the " + what + " could not be written");
}

std::string TextArrayLiteral(const std::vector<std::optional<std::string>>& values) {
  std::string out = "{";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ',';
    if (!values[i]) {
      out += "NULL";
      continue;
    }
    out += '"';
    for (char c : *values[i]) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  }
  out += '}';
  return out;
}

GuardedResult GuardedExec(pqxx::transaction_base& tx, const std::string& stmt,
                          const std::vector<std::optional<std::string>>& args) {
  pqxx::row row = tx.exec_params1(
      "SELECT returned, affected, violated_constraint, violated_sqlstate "
      "FROM dcl_guarded_exec($1, $2::text[])",
      stmt, TextArrayLiteral(args));
  GuardedResult result;
  if (!row[0].is_null()) result.returned = row[0].as<std::string>();
  result.affected = row[1].is_null() ? 0 : row[1].as<int64_t>();
  if (!row[2].is_null()) result.violated_constraint = row[2].as<std::string>();
  if (!row[3].is_null()) result.violated_sqlstate = row[3].as<std::string>();
  return result;
}

}  // namespace dcl
