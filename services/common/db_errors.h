// Classification of PostgreSQL/libpqxx failures into absl::Status, by SQLSTATE. The driver's
// message text is logged with the SQLSTATE and never returned: a client sees a generic message
// and a reason. Integrity violations are classified by constraint *name* elsewhere: see
// GuardedExec in db.h, which reads the name from the error field, not from message text.
#ifndef DCL_SERVICES_COMMON_DB_ERRORS_H_
#define DCL_SERVICES_COMMON_DB_ERRORS_H_

#include <exception>
#include <string>

#include "absl/status/status.h"

namespace dcl {

// The SQLSTATE with which PostgreSQL refuses a write whose caller's deadline passed before it
// could commit (constraint name dcl_call_deadline; schema/migrations/0030_call_deadline.sql).
inline constexpr char kCallerDeadlineSqlState[] = "DC001";

// SQLSTATE of a libpqxx exception, or "" when it carries none.
std::string SqlStateOf(const std::exception& e);

// Serialization failure or deadlock → ABORTED (retry); lock or statement timeout → ABORTED /
// DEADLINE_EXCEEDED; the caller's deadline passed before the commit (kCallerDeadlineSqlState) →
// DEADLINE_EXCEEDED CALLER_DEADLINE_PASSED, nothing written; connection lost, server shutting
// down or out of connections → UNAVAILABLE; malformed value → INVALID_ARGUMENT; anything else →
// INTERNAL (logged).
absl::Status DbErrorToStatus(const std::exception& e);

}  // namespace dcl

#endif  // DCL_SERVICES_COMMON_DB_ERRORS_H_
