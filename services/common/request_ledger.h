// The client request ledger: makes a write RPC retry-safe. A client that sends a request id and
// loses the reply (deadline, dropped connection) sends the same call again with the same id and
// gets the first answer back, flagged as a replay, instead of a second write.
//
// A write RPC runs its transaction through TransactOnce, which claims first and stores the
// answer last:
//
//   return request_ledger::TransactOnce(pool_, p.org_id, Rpc::kCreateSite, req.request_id(),
//                                       req, out, replayed, [&](pqxx::work& tx) -> absl::Status {
//     ... the write, filling *out ...
//   });
//
// Begin, Replay and Finish are its steps, for the one write that needs them apart (Convert
// commits a refusal and abandons its claim).
//
// Begin inserts the claim (INSERT ... ON CONFLICT DO NOTHING). The primary key on
// (org_id, request_id) is the arbiter: a concurrent call with the same id waits on it until the
// first transaction ends; if that one committed, the second finds its completed row. A row with
// the same RPC and the same parameters digest → replay of the stored response; any other →
// FAILED_PRECONDITION REQUEST_ID_REUSED naming the RPC the id belongs to. Finish stores the
// serialized response in the same transaction, so a committed row always has its answer.
//
// The claim carries the caller's deadline into the transaction (call_deadline.h): PostgreSQL
// refuses to commit the claim, and so the whole write, once its clock is past it, and the call
// fails DEADLINE_EXCEEDED CALLER_DEADLINE_PASSED (schema/migrations/0030_call_deadline.sql). A
// server that resumes after a pause cannot commit a write whose caller has given up and may
// have retried.
//
// A call that fails (any non-OK status) rolls back its transaction and its claim with it: no row
// stays, and a retry with the same id runs the write again (and may succeed where the first was
// refused). Only successful answers are replayed.
//
// Ids are scoped per organization: two organizations may use the same id independently. An
// empty request id means "no retry protection": Begin claims nothing, Finish stores nothing.
// Rows are kept for the sweeper's retention (7 days by default) and then deleted by it
// (DeleteExpired).
#ifndef DCL_SERVICES_COMMON_REQUEST_LEDGER_H_
#define DCL_SERVICES_COMMON_REQUEST_LEDGER_H_

#include <cstdint>
#include <string>

#include <google/protobuf/message.h>
#include <pqxx/pqxx>

#include "absl/status/status.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "services/common/db.h"
#include "services/common/rpc_catalog.h"

namespace dcl::request_ledger {

// What Begin found.
struct Claim {
  std::string org_id;
  std::string request_id;  // empty: no request id, nothing claimed
  bool replay = false;     // true: the stored answer of an earlier call is in stored_response
  std::string stored_response;

  // Parses the stored answer into *out and sets *replayed (RpcGate::RunWrite turns that into the
  // response header kReplayHeader, `dcl-replay: true`). INTERNAL when it does not parse as
  // `out`'s type (a bug: one id, one RPC).
  absl::Status Replay(google::protobuf::Message* out, bool* replayed) const;
};

// SHA-256 (32 raw bytes) of the request's deterministic serialization with its `request_id`
// field (if it has one) cleared: the parameters of a call, whatever id it carries.
std::string ParamsDigest(const google::protobuf::Message& request);

// Claims `request_id` for this call or finds the earlier call's answer; see the file comment.
// `request_id` must already be within the gate's limits (at most 36 bytes, UTF-8).
absl::StatusOr<Claim> Begin(pqxx::transaction_base& tx, const std::string& org_id, Rpc rpc,
                            const std::string& request_id,
                            const google::protobuf::Message& request);

// Stores `response` as the answer of the claim; a no-op without a request id.
absl::Status Finish(pqxx::transaction_base& tx, const Claim& claim,
                    const google::protobuf::Message& response);

// The retry-safe write in one transaction of `pool`: Begin, then the earlier call's answer
// (replay, `write` does not run) or `write` filling *out and Finish storing it. A non-OK status
// from `write` rolls the transaction back, claim included.
absl::Status TransactOnce(DbPool& pool, const std::string& org_id, Rpc rpc,
                          const std::string& request_id, const google::protobuf::Message& request,
                          google::protobuf::Message* out, bool* replayed,
                          absl::FunctionRef<absl::Status(pqxx::work&)> write);

// Drops the claim of a call whose transaction commits although the call is refused (Convert
// records an expired hold and answers HOLD_EXPIRED): no row stays, as for any other refusal, and
// a retry with the same id runs again. A no-op without a request id.
void Abandon(pqxx::transaction_base& tx, const Claim& claim);

// Deletes up to `limit` rows (of every organization) claimed longer than `retention` ago by the
// database clock; returns how many. The sweeper's batch: rows are picked FOR UPDATE SKIP LOCKED,
// so a row a write is replaying right now is left for the next pass. Fewer than `limit` means
// every such row nobody else held is gone.
int64_t DeleteExpired(pqxx::transaction_base& tx, absl::Duration retention, int limit);

}  // namespace dcl::request_ledger

#endif  // DCL_SERVICES_COMMON_REQUEST_LEDGER_H_
