// The deadline of the RPC this thread is serving, for the database to enforce where a write
// commits (rule 6: a deadline is enforced where it is used). RpcGate sets it from
// grpc::ServerContext::deadline() for the duration of the call's logic; the write paths pass it
// into their transaction (dcl_reserve_within_deadline, the request ledger's claim), and
// PostgreSQL refuses to commit the write once its clock is past it
// (schema/migrations/0030_call_deadline.sql). Work outside an RPC (the sweeper, migrations,
// tests that call the logic directly) has no deadline and behaves as before.
//
// The deadline is the dcl server's clock reading (gRPC turns the caller's timeout into an
// absolute time when the call arrives); the database compares it with its own clock, so the two
// are assumed in step (NTP), as for a hold's expiry.
#ifndef DCL_SERVICES_COMMON_CALL_DEADLINE_H_
#define DCL_SERVICES_COMMON_CALL_DEADLINE_H_

#include <string>

#include "absl/time/time.h"

namespace dcl {

// Sets this thread's call deadline for the scope's lifetime (absl::InfiniteFuture(): none).
class CallDeadlineScope {
 public:
  explicit CallDeadlineScope(absl::Time deadline);
  ~CallDeadlineScope();
  CallDeadlineScope(const CallDeadlineScope&) = delete;
  CallDeadlineScope& operator=(const CallDeadlineScope&) = delete;

 private:
  const absl::Time previous_;
};

// absl::InfiniteFuture() when the thread serves no call, or a call without a deadline.
absl::Time CallDeadlineOnThisThread();

// A deadline as the SQL statements take it: microseconds since the Unix epoch in decimal, ""
// for none (absl::InfiniteFuture()). The setting dcl.call_deadline holds this text.
std::string CallDeadlineParameter(absl::Time deadline);

}  // namespace dcl

#endif  // DCL_SERVICES_COMMON_CALL_DEADLINE_H_
