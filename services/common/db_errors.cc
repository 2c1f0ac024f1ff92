#include "services/common/db_errors.h"

#include <pqxx/pqxx>
#include <spdlog/spdlog.h>

#include "absl/strings/match.h"
#include "services/common/status.h"

namespace dcl {

std::string SqlStateOf(const std::exception& e) {
  if (const auto* sql = dynamic_cast<const pqxx::sql_error*>(&e)) return sql->sqlstate();
  return "";
}

absl::Status DbErrorToStatus(const std::exception& e) {
  const std::string state = SqlStateOf(e);
  if (dynamic_cast<const pqxx::in_doubt_error*>(&e) != nullptr) {
    spdlog::error("database commit in doubt: {}", e.what());
    return Error(absl::StatusCode::kUnavailable, v1::DATABASE_UNAVAILABLE,
                 "the database connection was lost while committing; the outcome is unknown, "
                 "read the object before retrying");
  }
  if (dynamic_cast<const pqxx::broken_connection*>(&e) != nullptr ||
      absl::StartsWith(state, "08") || state == "57P01" || state == "57P02" ||
      state == "57P03" || absl::StartsWith(state, "53")) {
    spdlog::warn("database unavailable (sqlstate {}): {}", state, e.what());
    return Error(absl::StatusCode::kUnavailable, v1::DATABASE_UNAVAILABLE,
                 "the database is unavailable; retry");
  }
  // libpqxx 6 derives its transaction_rollback family from failure, not sql_error, so these
  // carry no SQLSTATE accessor: classify them by type.
  if (dynamic_cast<const pqxx::statement_completion_unknown*>(&e) != nullptr) {
    spdlog::error("statement completion unknown: {}", e.what());
    return Error(absl::StatusCode::kUnavailable, v1::DATABASE_UNAVAILABLE,
                 "the outcome of the transaction is unknown; read the object before retrying");
  }
  if (dynamic_cast<const pqxx::transaction_rollback*>(&e) != nullptr || state == "40001" ||
      state == "40P01" || state == "55P03") {
    spdlog::info("transaction lost a race (sqlstate {})", state);
    return Error(absl::StatusCode::kAborted, v1::RETRY_TRANSACTION,
                 "the transaction lost a race with another one; retry")
        .Meta("sqlstate", state);
  }
  if (state == kCallerDeadlineSqlState) {
    // The database refused the commit (or the start) of a write whose caller has given up: the
    // transaction rolled back, so nothing of it exists and a retry with the same key runs anew.
    spdlog::info("write refused by the database: its caller's deadline passed");
    return Error(absl::StatusCode::kDeadlineExceeded, v1::CALLER_DEADLINE_PASSED,
                 "the call's deadline passed before its write could commit; nothing was written, "
                 "retry with the same key or request id");
  }
  if (state == "57014") {
    spdlog::warn("statement timed out: {}", e.what());
    return Error(absl::StatusCode::kDeadlineExceeded, v1::DEADLINE,
                 "the database did not answer in time");
  }
  if (absl::StartsWith(state, "22")) {
    spdlog::info("data exception (sqlstate {}): {}", state, e.what());
    return Error(absl::StatusCode::kInvalidArgument, v1::INVALID_INPUT,
                 "a value in the request is malformed")
        .Meta("sqlstate", state);
  }
  spdlog::error("unexpected database error (sqlstate '{}'): {}", state, e.what());
  return Error(absl::StatusCode::kInternal, v1::INTERNAL_ERROR, "internal database error")
      .Meta("sqlstate", state);
}

}  // namespace dcl
