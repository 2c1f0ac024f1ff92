// A Reserve whose caller has given up does not hold a machine afterwards (the 30-minute fault
// history's failure, order-15-633: a paused replica committed a hold after its caller's deadline
// and after the same-key retry had been refused). The server does not abandon its database work
// when the deadline passes, so the database refuses to commit it: dcl_reserve_within_deadline
// refuses a call that arrives late, and a deferred trigger refuses a hold committed after the deadline
// (schema/migrations/0030_call_deadline.sql).
//
// The delay is real: the test's own connection holds the advisory lock dcl_reserve takes for
// the order's key, so the Reserve's statement waits in PostgreSQL, observed in pg_locks, until
// the test lets it go after the deadline.
#include <grpcpp/grpcpp.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <pqxx/pqxx>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "dcl/v1/reservation.grpc.pb.h"
#include "services/common/call_deadline.h"
#include "services/common/db_errors.h"
#include "services/common/rpc_gate.h"
#include "services/reservation/reservation_service.h"
#include "tests/reservation/reservation_grpc_env.h"
#include "tests/reservation/reservation_test_util.h"
#include "tests/support/grpc_harness.h"

namespace dcl::reservation {
namespace {

// Polls `sql` (a count over this test's database) until it answers `want`, for up to 10 s.
bool AwaitCount(const testing::TestDatabase& db, const std::string& sql, int64_t want) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < give_up) {
    if (db.Count(sql) == want) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// Backends of this database (other than the asking one) waiting for an advisory lock.
const char kAdvisoryWaiters[] =
    "SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database "
    "WHERE d.datname = current_database() AND l.locktype = 'advisory' AND NOT l.granted";
// Backends of this database still running a dcl_reserve statement.
const char kReservesRunning[] =
    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
    "AND pid <> pg_backend_pid() AND state <> 'idle' AND query LIKE '%dcl_reserve%'";

// The test's own session holding dcl_reserve's advisory lock of one order's key.
class KeyLock {
 public:
  KeyLock(const testing::TestDatabase& db, const std::string& org, const std::string& key)
      : conn_(db.Connect()), tx_(std::make_unique<pqxx::work>(*conn_)) {
    tx_->exec_params("SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))", org, key);
  }
  void Release() { tx_.reset(); }  // rolls back: the lock is gone

 private:
  std::unique_ptr<pqxx::connection> conn_;
  std::unique_ptr<pqxx::work> tx_;
};

TEST_CASE(
    "over gRPC: a Reserve delayed in the database past its caller's 300 ms deadline leaves no "
    "hold, and the same-key retry holds the machine") {
  GrpcEnv g;
  const std::string device = g.env.Device();
  KeyLock lock(g.env.db, g.env.org, "order-late");

  grpc::Status late;
  const auto sent = std::chrono::steady_clock::now();
  std::thread caller([&] {
    auto context = testing::ContextWithToken(g.commerce_token);
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(300));
    v1::ReserveResponse response;
    late = g.stub->Reserve(context.get(), ReserveRequest("order-late", g.env.site), &response);
  });
  // The server's statement waits on the test's lock, inside PostgreSQL.
  REQUIRE(AwaitCount(g.env.db, kAdvisoryWaiters, 1));
  caller.join();  // the caller gives up at its deadline
  CHECK(late.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED);
  // Released a second after the call was sent: well past the deadline, well within the pool's
  // lock timeout, so the statement goes on.
  std::this_thread::sleep_until(sent + std::chrono::seconds(1));
  lock.Release();
  REQUIRE(AwaitCount(g.env.db, kReservesRunning, 0));

  CHECK(g.env.db.Count("SELECT count(*) FROM reservations WHERE idempotency_key = 'order-late'") ==
        0);

  // The client's retry with the same key, in time: a new hold, not a replay of a late one.
  v1::ReserveResponse retried;
  grpc::Status retry = g.stub->Reserve(testing::ContextWithToken(g.commerce_token).get(),
                                       ReserveRequest("order-late", g.env.site), &retried);
  REQUIRE(retry.ok());
  CHECK_FALSE(retried.replay());
  CHECK(retried.reservation().device_id() == device);
  CHECK(g.env.db.Count("SELECT count(*) FROM reservations WHERE state = 'held'") == 1);
}

TEST_CASE("over gRPC without a deadline: the gate sets none, and Reserve holds as before") {
  grpc::ServerContext no_deadline;
  CHECK(RpcGate::CallDeadlineOf(no_deadline) == absl::InfiniteFuture());
  GrpcEnv g;
  const std::string device = g.env.Device();
  grpc::ClientContext context;  // no deadline set
  context.AddMetadata("authorization", "Bearer " + g.commerce_token);
  v1::ReserveResponse response;
  REQUIRE(g.stub->Reserve(&context, ReserveRequest("order-1", g.env.site), &response).ok());
  CHECK_FALSE(response.replay());
  CHECK(response.reservation().device_id() == device);
}

TEST_CASE(
    "a Reserve whose deadline passes while it waits in the database is DEADLINE_EXCEEDED "
    "CALLER_DEADLINE_PASSED and writes nothing; the same-key retry holds the machine") {
  ReservationEnv env;
  const std::string device = env.Device();
  KeyLock lock(env.db, env.org, "order-late");

  CallResult late;
  const absl::Time sent = absl::Now();
  std::thread server_thread([&] {
    // As the gate sets it for a call with a 300 ms deadline.
    CallDeadlineScope deadline(sent + absl::Milliseconds(300));
    late.status =
        env.logic.Reserve(env.commerce, ReserveRequest("order-late", env.site), &late.response);
  });
  REQUIRE(AwaitCount(env.db, kAdvisoryWaiters, 1));
  // Released a second after the call began: past its deadline, within the lock timeout.
  absl::SleepFor(sent + absl::Seconds(1) - absl::Now());
  lock.Release();
  server_thread.join();

  INFO(absl::StatusCodeToString(late.status.code()) << ": " << late.status.message());
  CHECK(late.status.code() == absl::StatusCode::kDeadlineExceeded);
  CHECK(ReasonOf(late.status) == v1::CALLER_DEADLINE_PASSED);
  CHECK(env.db.Count("SELECT count(*) FROM reservations") == 0);

  CallResult retry;
  retry.status =
      env.logic.Reserve(env.commerce, ReserveRequest("order-late", env.site), &retry.response);
  REQUIRE(retry.status.ok());
  CHECK_FALSE(retry.response.replay());
  CHECK(retry.response.reservation().device_id() == device);
}

TEST_CASE(
    "a late Reserve does no work: arriving after its deadline it neither waits for its key's "
    "lock nor walks") {
  ReservationEnv env;
  env.Device();
  KeyLock lock(env.db, env.org, "order-too-late");
  const absl::Time start = absl::Now();
  CallResult late;
  {
    CallDeadlineScope deadline(start - absl::Milliseconds(1));
    late.status = env.logic.Reserve(env.commerce, ReserveRequest("order-too-late", env.site),
                                    &late.response);
  }
  const absl::Duration took = absl::Now() - start;
  INFO(absl::StatusCodeToString(late.status.code()) << ": " << late.status.message() << " after "
                                                    << absl::FormatDuration(took));
  CHECK(late.status.code() == absl::StatusCode::kDeadlineExceeded);
  CHECK(ReasonOf(late.status) == v1::CALLER_DEADLINE_PASSED);
  // Had it taken the key's lock it would have waited for the test's session until the pool's
  // 5 s lock timeout and then been ABORTED.
  CHECK(took < absl::Seconds(2));
  lock.Release();
  CHECK(env.db.Count("SELECT count(*) FROM reservations") == 0);
}

TEST_CASE(
    "no deadline or a generous one: Reserve answers exactly as before (a hold, its replay, "
    "NO_CAPACITY)") {
  ReservationEnv env;
  const std::string device = env.Device();
  for (const absl::Time deadline : {absl::InfiniteFuture(), absl::Now() + absl::Minutes(1)}) {
    env.db.Exec("DELETE FROM reservations");
    CallDeadlineScope scope(deadline);
    INFO("deadline " << absl::FormatTime(deadline));
    CallResult held, replayed, refused;
    held.status = env.logic.Reserve(env.commerce, ReserveRequest("order-1", env.site), &held.response);
    REQUIRE(held.status.ok());
    CHECK_FALSE(held.response.replay());
    CHECK(held.response.reservation().device_id() == device);
    replayed.status =
        env.logic.Reserve(env.commerce, ReserveRequest("order-1", env.site), &replayed.response);
    REQUIRE(replayed.status.ok());
    CHECK(replayed.response.replay());
    CHECK(replayed.response.reservation().id() == held.response.reservation().id());
    refused.status =
        env.logic.Reserve(env.commerce, ReserveRequest("order-2", env.site), &refused.response);
    CHECK(IsNoCapacity(refused.status));
    CHECK(ExclusionCountOf(refused.status, "held_by_another_order") == 1);
    CHECK(env.db.Count("SELECT count(*) FROM reservations") == 1);
  }
}

TEST_CASE("the database refuses a hold committed after the deadline set for its transaction") {
  // The rule itself, with no server in between: a Reserve under a deadline that is still ahead
  // when it starts and behind when the transaction commits.
  ReservationEnv env;
  env.Device();
  auto conn = env.db.Connect();
  pqxx::work tx(*conn);
  tx.exec_params(
      "SELECT f.outcome FROM dcl_reserve_within_deadline($1, 'order-x', $2, '', '', '', "
      "'00000000-0000-0000-0000-000000000000', 900, 'test', 25, 5, 1024, "
      "clock_timestamp() + interval '200 milliseconds') f",
      env.org, env.site);
  tx.exec("SELECT pg_sleep(0.4)");
  std::string sqlstate;
  try {
    tx.commit();
  } catch (const pqxx::sql_error& e) {
    sqlstate = e.sqlstate();
  }
  CHECK(sqlstate == kCallerDeadlineSqlState);
  CHECK(env.db.Count("SELECT count(*) FROM reservations") == 0);
}

}  // namespace
}  // namespace dcl::reservation
