// The server runtime and the RPC gate through a real gRPC server on 127.0.0.1:0: health,
// UNIMPLEMENTED for unknown methods, authentication, role and module checks, the error detail
// on the wire, and graceful shutdown with a call in flight.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <thread>

#include "dcl/v1/moves.grpc.pb.h"
#include "absl/strings/match.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "services/common/grpc_status.h"
#include "services/common/rpc_gate.h"
#include "services/common/token_cache.h"
#include "tests/support/fixtures.h"
#include "tests/support/grpc_harness.h"
#include "tests/support/test_db.h"

namespace dcl {
namespace {

using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

// A MoveService whose GetMove passes through the real gate and then waits `delay` before
// answering with the caller's organization: enough to observe admission and in-flight calls.
class ProbeMoveService final : public v1::MoveService::Service {
 public:
  ProbeMoveService(DbPool& pool, std::chrono::milliseconds delay, TokenCache* tokens = nullptr)
      : gate_(pool, tokens), delay_(delay) {}

  grpc::Status GetMove(grpc::ServerContext* ctx, const v1::GetMoveRequest* request,
                       v1::Move* response) override {
    return gate_.Run(ctx, Rpc::kGetMove, *request, [&](const Principal& principal) -> absl::Status {
      started_ = true;
      std::this_thread::sleep_for(delay_);
      response->set_id(request->move_id());
      response->set_site_id(principal.org_id);
      return absl::OkStatus();
    });
  }

  std::atomic<bool> started_{false};

 private:
  RpcGate gate_;
  std::chrono::milliseconds delay_;
};

struct Fixture {
  testing::TestDatabase db;
  std::unique_ptr<DbPool> pool = db.MakePool(4);
  std::string org = testing::CreateOrg(db, "acme");
};

HealthCheckResponse::ServingStatus Health(const std::shared_ptr<grpc::Channel>& channel,
                                          const std::string& service) {
  auto stub = grpc::health::v1::Health::NewStub(channel);
  grpc::ClientContext context;
  HealthCheckRequest request;
  request.set_service(service);
  HealthCheckResponse response;
  grpc::Status status = stub->Check(&context, request, &response);
  REQUIRE(status.ok());
  return response.status();
}

TEST_CASE("a running server answers health checks with SERVING for itself and its service") {
  Fixture f;
  ProbeMoveService service(*f.pool, std::chrono::milliseconds(0));
  testing::InProcessServer server(f.pool.get(), {{"dcl.v1.MoveService", &service}});
  CHECK(Health(server.Channel(), "") == HealthCheckResponse::SERVING);
  CHECK(Health(server.Channel(), "dcl.v1.MoveService") == HealthCheckResponse::SERVING);
}

TEST_CASE("health turns NOT_SERVING while the database is unreachable") {
  Fixture f;
  DbOptions options;
  options.url = "host=127.0.0.1 port=1 user=nobody dbname=nothing connect_timeout=1";
  DbPool unreachable(options);
  ProbeMoveService service(unreachable, std::chrono::milliseconds(0));
  testing::InProcessServer server(&unreachable, {{"dcl.v1.MoveService", &service}});
  CHECK(Health(server.Channel(), "") == HealthCheckResponse::NOT_SERVING);
}

TEST_CASE("an RPC the server does not know answers UNIMPLEMENTED") {
  Fixture f;
  ProbeMoveService service(*f.pool, std::chrono::milliseconds(0));
  testing::InProcessServer server(f.pool.get(), {{"dcl.v1.MoveService", &service}});
  auto stub = grpc::health::v1::Unregistered::NewStub(server.Channel());
  grpc::ClientContext context;
  HealthCheckRequest request;
  HealthCheckResponse response;
  grpc::Status status = stub->Check(&context, request, &response);
  CHECK(status.error_code() == grpc::StatusCode::UNIMPLEMENTED);
}

TEST_CASE("the gate refuses a missing token, an unknown token, a wrong role and a switched-off "
          "module, each with its own status and reason") {
  Fixture f;
  ProbeMoveService service(*f.pool, std::chrono::milliseconds(0));
  testing::InProcessServer server(f.pool.get(), {{"dcl.v1.MoveService", &service}});
  auto stub = v1::MoveService::NewStub(server.Channel());
  const std::string operator_token = testing::CreateTokenFor(f.db, f.org, Role::kDcOperator);
  const std::string commerce_token = testing::CreateTokenFor(f.db, f.org, Role::kCommerce);
  const std::string off_org = testing::CreateOrg(f.db, "dormant", /*module_enabled=*/false);
  const std::string off_token = testing::CreateTokenFor(f.db, off_org, Role::kDcOperator);

  struct Case {
    std::string token;
    grpc::StatusCode code;
    v1::Reason reason;
  };
  for (const Case& c : std::vector<Case>{
           {"", grpc::StatusCode::UNAUTHENTICATED, v1::UNAUTHENTICATED_CALLER},
           {"dcl_not_a_token", grpc::StatusCode::UNAUTHENTICATED, v1::UNAUTHENTICATED_CALLER},
           {commerce_token, grpc::StatusCode::PERMISSION_DENIED, v1::ROLE_NOT_PERMITTED},
           {off_token, grpc::StatusCode::FAILED_PRECONDITION, v1::MODULE_DISABLED},
       }) {
    auto context = testing::ContextWithToken(c.token);
    v1::GetMoveRequest request;
    v1::Move move;
    grpc::Status status = stub->GetMove(context.get(), request, &move);
    CHECK(status.error_code() == c.code);
    auto detail = ErrorDetailFromGrpc(status);
    REQUIRE(detail.has_value());
    CHECK(detail->reason() == c.reason);
  }
  CHECK_FALSE(service.started_);

  auto context = testing::ContextWithToken(operator_token);
  v1::GetMoveRequest request;
  request.set_move_id("m-1");
  v1::Move move;
  REQUIRE(stub->GetMove(context.get(), request, &move).ok());
  CHECK(move.site_id() == f.org);  // the handler saw the token's organization

  // Length limits apply to every string field before the handler runs.
  service.started_ = false;
  request.set_move_id(std::string(37, 'x'));
  grpc::Status too_long = stub->GetMove(testing::ContextWithToken(operator_token).get(), request,
                                        &move);
  CHECK(too_long.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(ErrorDetailFromGrpc(too_long)->metadata().at("field") == "move_id");
  CHECK_FALSE(service.started_);
}

// Through a real server whose gate has `tokens` (null: no cache): a token answered, then revoked
// with RevokeToken, is refused on the very next call.
void ExpectRevokedTokenRefusedOnNextCall(Fixture& f, TokenCache* tokens) {
  ProbeMoveService service(*f.pool, std::chrono::milliseconds(0), tokens);
  testing::InProcessServer server(f.pool.get(), {{"dcl.v1.MoveService", &service}});
  auto stub = v1::MoveService::NewStub(server.Channel());
  auto issued = CreateToken(*f.pool, f.org, Role::kDcOperator, "", "to revoke");
  REQUIRE(issued.ok());
  v1::GetMoveRequest request;
  v1::Move move;
  REQUIRE(stub->GetMove(testing::ContextWithToken(issued->token).get(), request, &move).ok());
  if (tokens != nullptr) {
    // Called until the cache holds it (a notification committed before the cache listened may
    // empty it once), so that the call after the revocation could be answered from the cache.
    for (int i = 0; i < 20 && !tokens->Find(TokenDigest(issued->token)); ++i) {
      REQUIRE(stub->GetMove(testing::ContextWithToken(issued->token).get(), request, &move).ok());
    }
    REQUIRE(tokens->Find(TokenDigest(issued->token)).has_value());
  }
  REQUIRE(RevokeToken(*f.pool, issued->id).ok());
  CHECK(stub->GetMove(testing::ContextWithToken(issued->token).get(), request, &move)
            .error_code() == grpc::StatusCode::UNAUTHENTICATED);
}

TEST_CASE("a revoked token is refused on the very next call") {
  Fixture f;
  ExpectRevokedTokenRefusedOnNextCall(f, nullptr);
}

TEST_CASE("with the token cache, a revoked token is refused on the very next call too") {
  Fixture f;
  TokenCache::Options options;
  options.database_url = f.db.service_url();
  TokenCache tokens(options);
  REQUIRE(tokens.AwaitListening(absl::Seconds(5)));
  ExpectRevokedTokenRefusedOnNextCall(f, &tokens);
}

TEST_CASE("tokens are stored only as digests, never in clear") {
  Fixture f;
  auto issued = CreateToken(*f.pool, "acme", Role::kAdmin, "", "by name");
  REQUIRE(issued.ok());
  CHECK(f.db.Count("SELECT count(*) FROM api_tokens WHERE token_sha256 = sha256(convert_to('" +
                   issued->token + "', 'UTF8'))") == 1);
  CHECK(f.db.Count("SELECT count(*) FROM api_tokens WHERE position('" + issued->token +
                   "' IN encode(token_sha256, 'escape') || label || subject) > 0") == 0);
  CHECK_FALSE(CreateToken(*f.pool, "no-such-org", Role::kAdmin, "", "").ok());
}

TEST_CASE("no statement carries a token: creating and authenticating send only its digest") {
  // libpq's protocol trace of the pool's one connection records every message sent, parameters
  // included: what statement logging on the server would write.
  Fixture f;
  auto pool = f.db.MakePool(1);
  const std::string trace_path = std::string(std::getenv("TEST_TMPDIR")) + "/token-trace.txt";
  std::FILE* trace = std::fopen(trace_path.c_str(), "w");
  REQUIRE(trace != nullptr);
  {
    absl::StatusOr<DbPool::Lease> lease = pool->Acquire();
    REQUIRE(lease.ok());
    lease->conn().trace(trace);
  }
  auto issued = CreateToken(*pool, f.org, Role::kDcOperator, "", "traced");
  REQUIRE(issued.ok());
  REQUIRE(Authenticate(*pool, issued->token).ok());
  CHECK(Authenticate(*pool, "dcl_never_issued_token").status().code() ==
        absl::StatusCode::kUnauthenticated);
  {
    absl::StatusOr<DbPool::Lease> lease = pool->Acquire();
    REQUIRE(lease.ok());
    lease->conn().trace(nullptr);
  }
  std::fclose(trace);
  std::ifstream in(trace_path);
  const std::string sent((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // The trace did record the token statements (the test can see a token if one is sent).
  REQUIRE(absl::StrContains(sent, "INSERT INTO api_tokens"));
  REQUIRE(absl::StrContains(sent, "FROM api_tokens t"));
  CHECK_FALSE(absl::StrContains(sent, issued->token));
  CHECK_FALSE(absl::StrContains(sent, "dcl_never_issued_token"));
  // The stored digest is the one PostgreSQL would compute: tokens issued before still work.
  CHECK(f.db.Count("SELECT count(*) FROM api_tokens WHERE token_sha256 = sha256(convert_to('" +
                   issued->token + "', 'UTF8'))") == 1);
}

TEST_CASE("shutdown lets an in-flight call finish and then refuses new calls") {
  Fixture f;
  ProbeMoveService service(*f.pool, std::chrono::milliseconds(800));
  testing::InProcessServer server(f.pool.get(), {{"dcl.v1.MoveService", &service}});
  auto stub = v1::MoveService::NewStub(server.Channel());
  const std::string token = testing::CreateTokenFor(f.db, f.org, Role::kDcOperator);

  grpc::Status in_flight;
  std::thread caller([&] {
    v1::GetMoveRequest request;
    request.set_move_id("m-in-flight");
    v1::Move move;
    in_flight = stub->GetMove(testing::ContextWithToken(token).get(), request, &move);
  });
  while (!service.started_) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  server.runtime().Shutdown();  // returns only after the in-flight call was answered
  caller.join();
  CHECK(in_flight.ok());

  v1::GetMoveRequest request;
  v1::Move move;
  auto context = testing::ContextWithToken(token);
  context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
  CHECK_FALSE(stub->GetMove(context.get(), request, &move).ok());
}

}  // namespace
}  // namespace dcl
