#include "services/common/request_ledger.h"

#include <openssl/sha.h>

#include <memory>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "services/common/call_deadline.h"
#include "services/common/status.h"

namespace dcl::request_ledger {
namespace {

// Bytes travel as hex text: libpqxx 6 has no bytea parameter that is not a binarystring dance.
// The claim also sets the transaction's dcl.call_deadline to the caller's deadline ($5, '' for
// none; call_deadline.h), in the same round trip: the claim row, and the write with it, then
// does not commit after that deadline (the deferred trigger client_requests_call_deadline,
// schema/migrations/0030_call_deadline.sql).
constexpr char kClaimSql[] =
    "WITH call AS (SELECT set_config('dcl.call_deadline', $5, true)) "
    "INSERT INTO client_requests (org_id, request_id, rpc, params_sha256) "
    "SELECT $1::uuid, $2, $3, decode($4, 'hex') FROM call "
    "ON CONFLICT (org_id, request_id) DO NOTHING RETURNING 1";
constexpr char kReadSql[] =
    "SELECT rpc, encode(params_sha256, 'hex'), encode(response, 'hex') FROM client_requests "
    "WHERE org_id = $1::uuid AND request_id = $2";
constexpr char kFinishSql[] =
    "UPDATE client_requests SET response = decode($3, 'hex') "
    "WHERE org_id = $1::uuid AND request_id = $2 AND response IS NULL";
// Oldest first, a batch at a time. A row locked by a write replaying it right now is skipped
// and deleted next time.
constexpr char kDeleteExpiredSql[] = R"sql(
WITH due AS (
  SELECT org_id, request_id FROM client_requests
  WHERE created_at < now() - $2::bigint * interval '1 second'
  ORDER BY created_at
  LIMIT $1
  FOR UPDATE SKIP LOCKED
)
DELETE FROM client_requests c USING due
WHERE c.org_id = due.org_id AND c.request_id = due.request_id
)sql";

std::string DeterministicBytes(const google::protobuf::Message& message) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    // Map entries in key order: equal parameters give equal bytes.
    coded.SetSerializationDeterministic(true);
    message.SerializeToCodedStream(&coded);
  }
  return bytes;
}

}  // namespace

std::string ParamsDigest(const google::protobuf::Message& request) {
  std::unique_ptr<google::protobuf::Message> params(request.New());
  params->CopyFrom(request);
  const google::protobuf::FieldDescriptor* id_field =
      params->GetDescriptor()->FindFieldByName("request_id");
  if (id_field != nullptr) params->GetReflection()->ClearField(params.get(), id_field);
  const std::string bytes = DeterministicBytes(*params);
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), digest);
  return std::string(reinterpret_cast<const char*>(digest), sizeof(digest));
}

absl::Status Claim::Replay(google::protobuf::Message* out, bool* replayed) const {
  if (!out->ParseFromString(stored_response)) {
    return Internal("the stored answer of this request id does not parse");
  }
  if (replayed != nullptr) *replayed = true;
  return absl::OkStatus();
}

absl::StatusOr<Claim> Begin(pqxx::transaction_base& tx, const std::string& org_id, Rpc rpc,
                            const std::string& request_id,
                            const google::protobuf::Message& request) {
  Claim claim;
  claim.org_id = org_id;
  if (request_id.empty()) return claim;
  claim.request_id = request_id;
  const std::string digest_hex = absl::BytesToHexString(ParamsDigest(request));
  const std::string rpc_name = InfoOf(rpc).full_name;
  // With a concurrent claim of the same id in flight, this statement waits on the primary key
  // until that transaction ends: rolled back → this insert proceeds; committed → no row here and
  // the committed row is read below (a new statement sees it under READ COMMITTED).
  if (!ExecCached(tx, kClaimSql, org_id, request_id, rpc_name, digest_hex,
                  CallDeadlineParameter(CallDeadlineOnThisThread()))
           .empty()) {
    return claim;
  }
  pqxx::result existing = ExecCached(tx, kReadSql, org_id, request_id);
  if (existing.empty()) {
    // Deleted between the two statements (the sweeper's retention): the caller retries.
    return Error(absl::StatusCode::kAborted, v1::RETRY_TRANSACTION,
                 "the request id changed hands while it was read; retry");
  }
  const std::string first_rpc = existing[0][0].as<std::string>();
  const std::string first_digest = existing[0][1].as<std::string>();
  if (first_rpc != rpc_name || first_digest != digest_hex) {
    return Error(absl::StatusCode::kFailedPrecondition, v1::REQUEST_ID_REUSED,
                 first_rpc != rpc_name
                     ? absl::StrCat("request id ", request_id, " was already used for ", first_rpc,
                                    "; use a new id for a new call")
                     : absl::StrCat("request id ", request_id,
                                    " was already used with other parameters; use a new id for "
                                    "a new call"))
        .Meta("request_id", request_id)
        .Meta("rpc", first_rpc);
  }
  if (existing[0][2].is_null()) {
    // The deferred trigger client_requests_completed refuses to commit such a row.
    return Internal("a committed request id carries no answer");
  }
  claim.replay = true;
  claim.stored_response = absl::HexStringToBytes(existing[0][2].as<std::string>());
  return claim;
}

absl::Status Finish(pqxx::transaction_base& tx, const Claim& claim,
                    const google::protobuf::Message& response) {
  if (claim.request_id.empty() || claim.replay) return absl::OkStatus();
  pqxx::result r = ExecCached(tx, kFinishSql, claim.org_id, claim.request_id,
                              absl::BytesToHexString(response.SerializeAsString()));
  if (r.affected_rows() != 1) return Internal("the claimed request id was not found to complete");
  return absl::OkStatus();
}

absl::Status TransactOnce(DbPool& pool, const std::string& org_id, Rpc rpc,
                          const std::string& request_id, const google::protobuf::Message& request,
                          google::protobuf::Message* out, bool* replayed,
                          absl::FunctionRef<absl::Status(pqxx::work&)> write) {
  return pool.Transact([&](pqxx::work& tx) -> absl::Status {
    absl::StatusOr<Claim> claim = Begin(tx, org_id, rpc, request_id, request);
    if (!claim.ok()) return claim.status();
    if (claim->replay) return claim->Replay(out, replayed);
    DCL_RETURN_IF_ERROR(write(tx));
    return Finish(tx, *claim, *out);
  });
}

void Abandon(pqxx::transaction_base& tx, const Claim& claim) {
  if (claim.request_id.empty() || claim.replay) return;
  ExecCached(tx, "DELETE FROM client_requests WHERE org_id = $1::uuid AND request_id = $2",
             claim.org_id, claim.request_id);
}

int64_t DeleteExpired(pqxx::transaction_base& tx, absl::Duration retention, int limit) {
  pqxx::result result = ExecCached(tx, kDeleteExpiredSql, limit, absl::ToInt64Seconds(retention));
  return static_cast<int64_t>(result.affected_rows());
}

}  // namespace dcl::request_ledger
