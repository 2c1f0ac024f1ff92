#include "schema/migrator.h"

#include <openssl/sha.h>

#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <regex>
#include <thread>

#include <pqxx/pqxx>
#include <spdlog/spdlog.h>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "services/common/db_errors.h"

namespace dcl {

namespace {

// Any constant works; it only has to be the same for every migrator.
constexpr int64_t kMigrationLockKey = 0x64636c6d6967;  // "dclmig"

std::string Sha256Hex(const std::string& text) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(digest), sizeof(digest)));
}

// Applied migrations whose text was later changed in comments only, and the checksums that
// databases migrated before the change recorded: those databases are up to date, not edited.
// Found by the rolling upgrade (tests/daytwo/rolling-upgrade); schema/migrations.sum now
// freezes every released migration's checksum, so that no new entry should be needed.
const std::map<int, std::vector<std::string>>& CommentOnlyRevisions() {
  static const auto* revisions = new std::map<int, std::vector<std::string>>{
      // 2eb5e8b added a paragraph to the header (the builds hold writes on large tables).
      {28, {"b1ee025fe4883323d7fd523cfd44ef80a35c680af55169aa17d81822a8c8caf5"}},
  };
  return *revisions;
}

bool IsEarlierRevision(int version, const std::string& checksum) {
  auto it = CommentOnlyRevisions().find(version);
  return it != CommentOnlyRevisions().end() &&
         std::find(it->second.begin(), it->second.end(), checksum) != it->second.end();
}

bool StartsWith(const std::string& text, size_t at, const char* prefix) {
  return text.compare(at, std::char_traits<char>::length(prefix), prefix) == 0;
}

// Lock waits that end by timing out (55P03), deadlocks (40P01) and serialization failures:
// worth another try once the other transaction is gone. libpqxx 6 derives its
// transaction_rollback family (deadlock_detected, serialization_failure) from pqxx::failure, not
// sql_error, so those are told by their type.
bool IsLockConflict(const std::exception& e) {
  if (dynamic_cast<const pqxx::transaction_rollback*>(&e) != nullptr) return true;
  const auto* sql = dynamic_cast<const pqxx::sql_error*>(&e);
  return sql != nullptr && (sql->sqlstate() == "55P03" || sql->sqlstate() == "40P01");
}

std::string ConflictName(const std::exception& e) {
  if (dynamic_cast<const pqxx::deadlock_detected*>(&e) != nullptr) return "deadlock";
  if (dynamic_cast<const pqxx::transaction_rollback*>(&e) != nullptr) {
    return "serialization failure";
  }
  return "lock not granted in time";
}

// The index a "CREATE [UNIQUE] INDEX CONCURRENTLY [IF NOT EXISTS] name ON ..." builds, as
// PostgreSQL names it (unquoted names fold to lower case); nullopt for any other statement.
// `statement` without the comments and whitespace before its first word.
std::string WithoutLeadingComments(const std::string& statement) {
  size_t i = 0;
  while (i < statement.size()) {
    if (absl::ascii_isspace(static_cast<unsigned char>(statement[i]))) {
      ++i;
    } else if (StartsWith(statement, i, "--")) {
      const size_t end = statement.find('\n', i);
      i = end == std::string::npos ? statement.size() : end + 1;
    } else if (StartsWith(statement, i, "/*")) {
      const size_t end = statement.find("*/", i + 2);
      i = end == std::string::npos ? statement.size() : end + 2;
    } else {
      break;
    }
  }
  return statement.substr(i);
}

std::optional<std::string> ConcurrentIndexName(const std::string& commented_statement) {
  const std::string statement = WithoutLeadingComments(commented_statement);
  static const std::regex create(
      R"(^\s*create\s+(unique\s+)?index\s+concurrently\s+(if\s+not\s+exists\s+)?("[^"]+"|[A-Za-z_][A-Za-z0-9_$]*)\s+on\s)",
      std::regex::icase);
  std::smatch match;
  if (!std::regex_search(statement, match, create)) return std::nullopt;
  std::string name = match[3];
  if (name.front() == '"') return name.substr(1, name.size() - 2);
  return absl::AsciiStrToLower(name);
}

class Backoff {
 public:
  explicit Backoff(const MigrateOptions& options)
      : options_(options), next_(options.first_backoff), random_(std::random_device{}()) {}
  // The pause before the next try; doubles each time up to max_backoff, plus up to a quarter.
  absl::Duration Next() {
    const absl::Duration base = next_;
    next_ = std::min(next_ * 2, options_.max_backoff);
    std::uniform_real_distribution<double> jitter(0, 0.25);
    return base + base * jitter(random_);
  }

 private:
  const MigrateOptions& options_;
  absl::Duration next_;
  std::mt19937 random_;
};

void SetLockTimeout(pqxx::transaction_base& tx, const MigrateOptions& options, bool local) {
  tx.exec(absl::StrCat(local ? "SET LOCAL" : "SET", " lock_timeout = ",
                       absl::ToInt64Milliseconds(options.lock_timeout)));
}

// Drops the index `name` if it exists and is INVALID (a failed CREATE INDEX CONCURRENTLY);
// returns whether it did. DROP INDEX CONCURRENTLY waits for the transactions using the table
// without blocking writers; it runs under the same lock_timeout and retries.
absl::StatusOr<bool> DropInvalidIndex(pqxx::connection& conn, const std::string& name,
                                      const MigrateOptions& options, MigrateResult& result) {
  pqxx::nontransaction tx(conn);
  const pqxx::result invalid = tx.exec_params(
      "SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname) "
      "FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid "
      "JOIN pg_namespace n ON n.oid = c.relnamespace "
      "WHERE c.relname = $1 AND n.nspname = ANY (current_schemas(false)) AND NOT i.indisvalid",
      name);
  if (invalid.empty()) return false;
  const std::string qualified = invalid[0][0].as<std::string>();
  Backoff backoff(options);
  for (int attempt = 1;; ++attempt) {
    try {
      SetLockTimeout(tx, options, /*local=*/false);
      tx.exec("DROP INDEX CONCURRENTLY IF EXISTS " + qualified);
      spdlog::warn("dropped the invalid index {} left by a failed concurrent build", qualified);
      ++result.invalid_indexes_dropped;
      return true;
    } catch (const std::exception& e) {
      if (!IsLockConflict(e) || attempt >= options.max_attempts) throw;
      ++result.lock_timeouts;
      absl::SleepFor(backoff.Next());
    }
  }
}

// Whether the index `name` exists and is valid.
bool IndexIsValid(pqxx::connection& conn, const std::string& name) {
  pqxx::nontransaction tx(conn);
  const pqxx::result valid = tx.exec_params(
      "SELECT i.indisvalid FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid "
      "JOIN pg_namespace n ON n.oid = c.relnamespace "
      "WHERE c.relname = $1 AND n.nspname = ANY (current_schemas(false))",
      name);
  return !valid.empty() && valid[0][0].as<bool>();
}

absl::Status LockTimeoutsExhausted(const Migration& migration, const MigrateOptions& options,
                                   const std::exception& e) {
  return absl::AbortedError(absl::StrCat(
      "migration ", migration.name, " could not get its locks in ", options.max_attempts,
      " attempts of ", absl::FormatDuration(options.lock_timeout), " each (", ConflictName(e),
      "): ", e.what(),
      " — something holds a conflicting lock for long (pg_locks, pg_stat_activity); nothing of "
      "this migration is recorded, run migrate again"));
}

// One migration in one transaction, retried whole on a lock timeout.
absl::Status ApplyInTransaction(pqxx::connection& conn, const Migration& migration,
                                const MigrateOptions& options, MigrateResult& result) {
  Backoff backoff(options);
  for (int attempt = 1;; ++attempt) {
    try {
      pqxx::work tx(conn);
      SetLockTimeout(tx, options, /*local=*/true);
      tx.exec(migration.sql);
      tx.exec_params(
          "INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)",
          migration.version, migration.name, migration.checksum);
      tx.commit();
      return absl::OkStatus();
    } catch (const std::exception& e) {
      if (!IsLockConflict(e)) throw;
      if (attempt >= options.max_attempts) return LockTimeoutsExhausted(migration, options, e);
      ++result.lock_timeouts;
      const absl::Duration pause = backoff.Next();
      spdlog::warn("migration {}: {} (attempt {} of {}); rolled back, trying again in {}",
                   migration.name, ConflictName(e), attempt, options.max_attempts,
                   absl::FormatDuration(pause));
      absl::SleepFor(pause);
    }
  }
}

// A "-- dcl:no-transaction" migration: each statement in autocommit, retried on its own.
absl::Status ApplyStatementByStatement(pqxx::connection& conn, const Migration& migration,
                                       const MigrateOptions& options, MigrateResult& result) {
  absl::StatusOr<std::vector<std::string>> statements = SplitStatements(migration.sql);
  if (!statements.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("migration ", migration.name, ": ", statements.status().message()));
  }
  for (const std::string& statement : *statements) {
    const std::optional<std::string> index = ConcurrentIndexName(statement);
    Backoff backoff(options);
    for (int attempt = 1;; ++attempt) {
      // An invalid index of this name is a failed earlier build (this run's or a crashed
      // migrator's); IF NOT EXISTS would take it for done.
      if (index.has_value()) {
        absl::StatusOr<bool> dropped = DropInvalidIndex(conn, *index, options, result);
        if (!dropped.ok()) return dropped.status();
      }
      try {
        pqxx::nontransaction tx(conn);
        SetLockTimeout(tx, options, /*local=*/false);
        tx.exec(statement);
        break;
      } catch (const std::exception& e) {
        if (index.has_value()) {
          absl::StatusOr<bool> dropped = DropInvalidIndex(conn, *index, options, result);
          if (!dropped.ok()) return dropped.status();
        }
        if (!IsLockConflict(e)) throw;
        if (attempt >= options.max_attempts) return LockTimeoutsExhausted(migration, options, e);
        ++result.lock_timeouts;
        const absl::Duration pause = backoff.Next();
        spdlog::warn("migration {}: a statement failed on a lock ({}; attempt {} of {}); "
                     "trying it again in {}",
                     migration.name, ConflictName(e), attempt, options.max_attempts,
                     absl::FormatDuration(pause));
        absl::SleepFor(pause);
      }
    }
    if (index.has_value() && !IndexIsValid(conn, *index)) {
      return absl::InternalError(absl::StrCat("migration ", migration.name, ": index ", *index,
                                              " is missing or invalid after its build"));
    }
  }
  pqxx::work tx(conn);
  tx.exec("RESET lock_timeout");
  tx.exec_params("INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)",
                 migration.version, migration.name, migration.checksum);
  tx.commit();
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<std::string>> SplitStatements(const std::string& sql) {
  std::vector<std::string> statements;
  std::string current;
  bool has_code = false;  // the current piece holds more than whitespace and comments
  auto finish = [&] {
    if (has_code) {
      statements.push_back(std::string(absl::StripAsciiWhitespace(current)));
    }
    current.clear();
    has_code = false;
  };
  size_t i = 0;
  const size_t n = sql.size();
  while (i < n) {
    const char c = sql[i];
    if (StartsWith(sql, i, "--")) {
      const size_t end = sql.find('\n', i);
      const size_t stop = end == std::string::npos ? n : end;
      current.append(sql, i, stop - i);
      i = stop;
    } else if (StartsWith(sql, i, "/*")) {
      const size_t end = sql.find("*/", i + 2);
      if (end == std::string::npos) return absl::InvalidArgumentError("unterminated /* comment");
      current.append(sql, i, end + 2 - i);
      i = end + 2;
    } else if (c == '\'' || c == '"') {
      // '' and "" inside are the quote itself: the scan simply reopens at the next quote.
      const size_t end = sql.find(c, i + 1);
      if (end == std::string::npos) {
        return absl::InvalidArgumentError(c == '"' ? "unterminated quoted identifier"
                                                   : "unterminated string");
      }
      current.append(sql, i, end + 1 - i);
      has_code = true;
      i = end + 1;
    } else if (c == '$') {
      // $$ or $tag$ opens a dollar quote; $1 (a parameter) does not.
      size_t tag_end = i + 1;
      while (tag_end < n && (absl::ascii_isalnum(sql[tag_end]) || sql[tag_end] == '_')) ++tag_end;
      if (tag_end < n && sql[tag_end] == '$' &&
          (tag_end == i + 1 || !absl::ascii_isdigit(sql[i + 1]))) {
        const std::string tag = sql.substr(i, tag_end + 1 - i);
        const size_t end = sql.find(tag, tag_end + 1);
        if (end == std::string::npos) {
          return absl::InvalidArgumentError("unterminated dollar quote " + tag);
        }
        current.append(sql, i, end + tag.size() - i);
        i = end + tag.size();
      } else {
        current.push_back(c);
        ++i;
      }
      has_code = true;
    } else if (c == ';') {
      finish();
      ++i;
    } else {
      current.push_back(c);
      if (!absl::ascii_isspace(static_cast<unsigned char>(c))) has_code = true;
      ++i;
    }
  }
  finish();
  return statements;
}

absl::StatusOr<std::vector<Migration>> ParseMigrations(const std::vector<MigrationFile>& files) {
  std::vector<Migration> migrations;
  for (const MigrationFile& file : files) {
    const size_t underscore = file.file_name.find('_');
    Migration migration;
    if (underscore != 4 || file.file_name.size() < 10 ||
        file.file_name.substr(file.file_name.size() - 4) != ".sql" ||
        !std::all_of(file.file_name.begin(), file.file_name.begin() + 4, absl::ascii_isdigit) ||
        !absl::SimpleAtoi(file.file_name.substr(0, 4), &migration.version)) {
      return absl::InvalidArgumentError(
          absl::StrCat("migration file name ", file.file_name, " is not NNNN_name.sql"));
    }
    migration.name = file.file_name;
    migration.sql = file.sql;
    migration.checksum = Sha256Hex(file.sql);
    const std::string first_line = file.sql.substr(0, file.sql.find('\n'));
    migration.transactional =
        absl::StripTrailingAsciiWhitespace(first_line) != kNoTransactionMarker;
    migrations.push_back(std::move(migration));
  }
  std::sort(migrations.begin(), migrations.end(),
            [](const Migration& a, const Migration& b) { return a.version < b.version; });
  for (size_t i = 1; i < migrations.size(); ++i) {
    if (migrations[i].version == migrations[i - 1].version) {
      return absl::InvalidArgumentError(absl::StrCat("two migrations have version ",
                                                     migrations[i].version));
    }
  }
  return migrations;
}

absl::StatusOr<MigrateResult> Migrate(const std::string& database_url,
                                      const std::vector<Migration>& migrations,
                                      const MigrateOptions& options) {
  if (options.max_attempts < 1 || options.lock_timeout < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("max_attempts must be at least 1, lock_timeout not negative");
  }
  try {
    pqxx::connection conn(database_url);
    {
      // Session-level lock: held across the per-migration transactions, released on return
      // (or when the connection drops). Taken by polling, not by waiting in pg_advisory_lock: a
      // statement waiting there keeps its snapshot, and CREATE INDEX CONCURRENTLY in the
      // migrator that holds the lock waits for every older snapshot to end, so two migrators
      // started together (two deploys, a job and an init container) would wait for each other
      // until the build's lock_timeout ran out, on every attempt.
      pqxx::nontransaction lock(conn);
      for (int waited = 0;
           !lock.exec_params1("SELECT pg_try_advisory_lock($1)", kMigrationLockKey)[0].as<bool>();
           ++waited) {
        if (waited % 50 == 0) spdlog::info("waiting for another migrator to finish");
        absl::SleepFor(absl::Milliseconds(200));
      }
      lock.exec(
          "CREATE TABLE IF NOT EXISTS schema_migrations ("
          "  version integer PRIMARY KEY,"
          "  name text NOT NULL,"
          "  checksum text NOT NULL,"
          "  applied_at timestamptz NOT NULL DEFAULT now())");
    }
    std::map<int, std::pair<std::string, std::string>> applied;  // version → (name, checksum)
    {
      pqxx::read_transaction tx(conn);
      for (const auto& row : tx.exec("SELECT version, name, checksum FROM schema_migrations")) {
        applied[row[0].as<int>()] = {row[1].as<std::string>(), row[2].as<std::string>()};
      }
    }
    MigrateResult result;
    for (const auto& [version, recorded] : applied) {
      auto it = std::find_if(migrations.begin(), migrations.end(),
                             [v = version](const Migration& m) { return m.version == v; });
      if (it == migrations.end()) {
        return absl::FailedPreconditionError(absl::StrCat(
            "the database has migration ", recorded.first,
            " which this binary does not know: it is older than the schema"));
      }
      if (it->checksum != recorded.second && IsEarlierRevision(version, recorded.second)) {
        spdlog::info("migration {} was applied in an earlier text that differs in comments only",
                     it->name);
      } else if (it->checksum != recorded.second) {
        return absl::FailedPreconditionError(absl::StrCat(
            "migration ", it->name, " was changed after it was applied (recorded checksum ",
            recorded.second, ", file checksum ", it->checksum,
            "); add a new migration instead of editing an applied one"));
      }
      ++result.already_applied;
    }
    for (const Migration& migration : migrations) {
      if (applied.count(migration.version) > 0) continue;
      const absl::Status status =
          migration.transactional ? ApplyInTransaction(conn, migration, options, result)
                                  : ApplyStatementByStatement(conn, migration, options, result);
      if (!status.ok()) return status;
      spdlog::info("applied migration {}{}", migration.name,
                   migration.transactional ? "" : " (statement by statement, no transaction)");
      ++result.applied;
    }
    pqxx::nontransaction unlock(conn);
    unlock.exec_params("SELECT pg_advisory_unlock($1)", kMigrationLockKey);
    return result;
  } catch (const pqxx::sql_error& e) {
    return absl::InternalError(absl::StrCat("migration failed (sqlstate ", e.sqlstate(),
                                            "): ", e.what()));
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("migration failed: ", e.what()));
  }
}

}  // namespace dcl
