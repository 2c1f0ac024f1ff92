// The answers each RPC may give: gRPC code and dcl.v1 reason. The table is docs/api.md's section
// "Status codes per RPC", read from the page itself, so that the documentation and the contract
// the fuzzer holds the servers to cannot drift apart. The fuzzer fails on any answer outside it,
// and on an RPC missing from it.
#ifndef DCL_TESTS_FUZZ_DOCUMENTED_OUTCOMES_H_
#define DCL_TESTS_FUZZ_DOCUMENTED_OUTCOMES_H_

#include <grpcpp/grpcpp.h>

#include <map>
#include <set>
#include <string>
#include <utility>

namespace dcl::fuzz {

// Every RPC may answer these: the gate (token, role, module switch), input checks, and a
// transaction that lost a race. UNAVAILABLE / DATABASE_UNAVAILABLE (the database is unreachable)
// is documented for every RPC as well but is not in this list: the fuzzer's database is healthy
// throughout, so there it is a failure (a server that died answers UNAVAILABLE too).
inline constexpr const char* kEveryRpcOutcomes =
    "UNAUTHENTICATED: UNAUTHENTICATED_CALLER; PERMISSION_DENIED: ROLE_NOT_PERMITTED; "
    "FAILED_PRECONDITION: MODULE_DISABLED; INVALID_ARGUMENT: INVALID_INPUT; "
    "ABORTED: RETRY_TRANSACTION";

// Where docs/api.md is in a test's runfiles (tests run in the workspace's runfiles folder).
inline constexpr const char* kApiDocPath = "docs/api.md";

// (code, reason) pairs allowed for one RPC; reason "*" = any reason or none.
using OutcomeSet = std::set<std::pair<grpc::StatusCode, std::string>>;

// method full name ("dcl.v1.OccupancyService.PlaceDevice") → allowed outcomes: the RPC's row of
// the table under "## Status codes per RPC" in `api_markdown` plus kEveryRpcOutcomes. A row is
// | `Service.Method` | entries separated by ';' |, an entry `CODE` (any reason, or none: OK, a
// client's own deadline) or `CODE`: `R1`, `R2` (exactly those reasons); text in parentheses is
// commentary. Throws std::runtime_error, naming the row, on a malformed row, an unknown code or
// reason, a method named twice, or a page without the table.
std::map<std::string, OutcomeSet> ParseDocumentedOutcomes(const std::string& api_markdown);

// The same, read from the file at `path` (kApiDocPath in a test).
std::map<std::string, OutcomeSet> ReadDocumentedOutcomes(const std::string& path);

bool IsAllowed(const OutcomeSet& allowed, grpc::StatusCode code, const std::string& reason);

const char* CodeName(grpc::StatusCode code);

}  // namespace dcl::fuzz

#endif  // DCL_TESTS_FUZZ_DOCUMENTED_OUTCOMES_H_
