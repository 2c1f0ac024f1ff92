// The reservation service through a real in-process gRPC server with bearer tokens: the gate
// admits the commerce role only, and refusals arrive with their reason and structured details.
#include <grpcpp/grpcpp.h>

#include <catch2/catch.hpp>
#include <set>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "dcl/v1/reservation.grpc.pb.h"
#include "services/common/grpc_status.h"
#include "services/common/metrics.h"
#include "services/common/rpc_gate.h"
#include "services/reservation/reservation_service.h"
#include "tests/reservation/reservation_grpc_env.h"
#include "tests/reservation/reservation_test_util.h"
#include "tests/support/grpc_harness.h"
#include "tests/support/metrics_scrape.h"

namespace dcl::reservation {
namespace {

// What the gate of this process recorded for the Reserve calls so far: calls, and the statements
// PostgreSQL answered for them (dcl_rpc_db_statements).
struct ReserveStatements {
  double calls = 0, statements = 0;
};
ReserveStatements ReserveStatementsSoFar() {
  const testing::Samples samples = testing::ParseSamples(MetricsRegistry::Default().Render());
  const std::string rpc = "{rpc=\"/dcl.v1.ReservationService/Reserve\"}";
  return {testing::ValueOr0(samples, "dcl_rpc_db_statements_count" + rpc),
          testing::ValueOr0(samples, "dcl_rpc_db_statements_sum" + rpc)};
}

TEST_CASE("over gRPC with a commerce token: reserve, convert, read back; refusals carry reasons") {
  GrpcEnv g;
  const std::string device = g.env.Device();

  v1::ReserveResponse reserved;
  grpc::Status status = g.stub->Reserve(testing::ContextWithToken(g.commerce_token).get(),
                                        ReserveRequest("order-1", g.env.site), &reserved);
  REQUIRE(status.ok());
  CHECK(reserved.reservation().device_id() == device);

  // Nothing left: NO_CAPACITY with the exclusion counts in the details.
  v1::ReserveResponse refused;
  status = g.stub->Reserve(testing::ContextWithToken(g.commerce_token).get(),
                           ReserveRequest("order-2", g.env.site), &refused);
  CHECK(status.error_code() == grpc::StatusCode::FAILED_PRECONDITION);
  auto detail = ErrorDetailFromGrpc(status);
  REQUIRE(detail.has_value());
  CHECK(detail->reason() == v1::NO_CAPACITY);
  REQUIRE(detail->exclusion_counts_size() == 1);
  CHECK(detail->exclusion_counts(0).reason() == "held_by_another_order");
  CHECK(detail->exclusion_counts(0).count() == 1);

  v1::CreateServiceRequest create;
  create.set_kind("dedicated");
  create.set_customer("cust-9");
  v1::Service svc;
  REQUIRE(
      g.stub->CreateService(testing::ContextWithToken(g.commerce_token).get(), create, &svc).ok());
  v1::ConvertRequest convert;
  convert.mutable_reservation()->set_idempotency_key("order-1");
  convert.set_service_id(svc.id());
  v1::ConvertResponse converted;
  REQUIRE(
      g.stub->Convert(testing::ContextWithToken(g.commerce_token).get(), convert, &converted).ok());
  CHECK(converted.binding().device_id() == device);

  v1::GetReservationRequest get;
  get.mutable_reservation()->set_reservation_id(reserved.reservation().id());
  v1::Reservation got;
  REQUIRE(
      g.stub->GetReservation(testing::ContextWithToken(g.commerce_token).get(), get, &got).ok());
  CHECK(got.state() == v1::RESERVATION_CONVERTED);
  CHECK(got.service_id() == svc.id());

  // Bad input: INVALID_ARGUMENT naming the field.
  status = g.stub->Reserve(testing::ContextWithToken(g.commerce_token).get(),
                           ReserveRequest("", g.env.site), &refused);
  CHECK(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(ErrorDetailFromGrpc(status)->metadata().at("field") == "idempotency_key");
}

// Issue 26: the refusal's explanation comes back with dcl_reserve's outcome, in the same
// statement (dcl_reserve_call, migration 0035), so a refused Reserve costs what a replayed one
// does: the token's lookup and one statement, never a second one for the explanation.
TEST_CASE("a refused Reserve costs the database the statements of a replayed one: one round trip") {
  // One connection: after the warm-up every statement of the server is prepared on it, so the
  // counts below are the steady state's.
  GrpcEnv g(1);
  const std::string device = g.env.Device();
  auto reserve = [&](const std::string& key, ReserveStatements* cost) {
    const ReserveStatements before = ReserveStatementsSoFar();
    v1::ReserveResponse response;
    const grpc::Status status = g.stub->Reserve(testing::ContextWithToken(g.commerce_token).get(),
                                                ReserveRequest(key, g.env.site), &response);
    const ReserveStatements after = ReserveStatementsSoFar();
    REQUIRE(after.calls - before.calls == 1);
    *cost = {1, after.statements - before.statements};
    return status;
  };
  ReserveStatements warm_up;
  REQUIRE(reserve("order-1", &warm_up).ok());
  REQUIRE(reserve("order-2", &warm_up).error_code() == grpc::StatusCode::FAILED_PRECONDITION);

  ReserveStatements replayed, refused;
  REQUIRE(reserve("order-1", &replayed).ok());
  const grpc::Status status = reserve("order-3", &refused);
  CAPTURE(replayed.statements, refused.statements);
  // The answer is the one the two statements gave: NO_CAPACITY, the held machine listed.
  REQUIRE(status.error_code() == grpc::StatusCode::FAILED_PRECONDITION);
  const auto detail = ErrorDetailFromGrpc(status);
  REQUIRE(detail.has_value());
  CHECK(detail->reason() == v1::NO_CAPACITY);
  REQUIRE(detail->exclusion_counts_size() == 1);
  CHECK(detail->exclusion_counts(0).reason() == "held_by_another_order");
  CHECK(detail->exclusion_counts(0).count() == 1);
  REQUIRE(detail->excluded_devices_size() == 1);
  CHECK(detail->excluded_devices(0).device_id() == device);

  CHECK(replayed.statements >= 2);  // at least the token and the reservation
  CHECK(refused.statements == replayed.statements);
}

TEST_CASE("over gRPC: no token or a wrong role is refused and writes nothing") {
  GrpcEnv g;
  g.env.Device();
  v1::ReserveResponse response;
  grpc::Status status = g.stub->Reserve(testing::ContextWithToken("").get(),
                                        ReserveRequest("order-1", g.env.site), &response);
  CHECK(status.error_code() == grpc::StatusCode::UNAUTHENTICATED);
  const std::string customer = testing::CreateTokenFor(g.env.db, g.env.org, Role::kCustomer, "c1");
  status = g.stub->Reserve(testing::ContextWithToken(customer).get(),
                           ReserveRequest("order-1", g.env.site), &response);
  CHECK(status.error_code() == grpc::StatusCode::PERMISSION_DENIED);
  CHECK(g.env.db.Count("SELECT count(*) FROM reservations") == 0);
}

TEST_CASE(
    "over gRPC: thirty concurrent clients on five machines get five holds and correct "
    "rejections only") {
  GrpcEnv g;
  for (int i = 0; i < 5; ++i) g.env.Device();
  std::vector<grpc::Status> statuses(30);
  std::vector<std::string> devices(30);
  testing::Barrier barrier(30);
  std::vector<std::thread> threads;
  for (int i = 0; i < 30; ++i) {
    threads.emplace_back([&, i] {
      auto context = testing::ContextWithToken(g.commerce_token);
      v1::ReserveResponse response;
      barrier.ArriveAndWait();
      statuses[i] = g.stub->Reserve(context.get(), ReserveRequest(absl::StrCat("o", i), g.env.site),
                                    &response);
      devices[i] = response.reservation().device_id();
    });
  }
  for (auto& t : threads) t.join();
  std::set<std::string> held;
  int rejected = 0;
  for (int i = 0; i < 30; ++i) {
    INFO(statuses[i].error_message());
    if (statuses[i].ok()) {
      held.insert(devices[i]);
      continue;
    }
    ++rejected;
    auto detail = ErrorDetailFromGrpc(statuses[i]);
    REQUIRE(detail.has_value());
    const bool contended =
        statuses[i].error_code() == grpc::StatusCode::ABORTED && detail->reason() == v1::CONTENDED;
    const bool no_capacity = statuses[i].error_code() == grpc::StatusCode::FAILED_PRECONDITION &&
                             detail->reason() == v1::NO_CAPACITY;
    CHECK((contended || no_capacity));
  }
  CHECK(held.size() == 5);
  CHECK(rejected == 25);
}

}  // namespace
}  // namespace dcl::reservation
