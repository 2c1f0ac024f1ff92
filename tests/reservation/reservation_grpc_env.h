// The reservation service on an in-process gRPC server over a ReservationEnv (an organization
// with a site of machines in its own test database), with a stub and a commerce token: what the
// tests that call Reserve, Convert and Cancel over gRPC share.
#ifndef DCL_TESTS_RESERVATION_RESERVATION_GRPC_ENV_H_
#define DCL_TESTS_RESERVATION_RESERVATION_GRPC_ENV_H_

#include <memory>
#include <string>

#include "dcl/v1/reservation.grpc.pb.h"
#include "services/common/auth.h"
#include "services/common/rpc_gate.h"
#include "services/reservation/reservation_service.h"
#include "tests/reservation/reservation_test_util.h"
#include "tests/support/grpc_harness.h"

namespace dcl::reservation {

struct GrpcEnv {
  explicit GrpcEnv(int pool_size = 16)
      : env(pool_size),
        gate(*env.pool),
        service(gate, env.logic),
        server(env.pool.get(), {{"dcl.v1.ReservationService", &service}}),
        stub(v1::ReservationService::NewStub(server.Channel())),
        commerce_token(testing::CreateTokenFor(env.db, env.org, Role::kCommerce)) {}
  ReservationEnv env;
  RpcGate gate;
  ReservationServiceImpl service;
  testing::InProcessServer server;
  std::unique_ptr<v1::ReservationService::Stub> stub;
  std::string commerce_token;
};

}  // namespace dcl::reservation

#endif  // DCL_TESTS_RESERVATION_RESERVATION_GRPC_ENV_H_
