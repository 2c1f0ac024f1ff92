// The reservation service on the in-process suite (tests/support/suite.h) over a ReservationEnv
// (an organization with a site of machines in its own test database), with a stub and a commerce
// token: what the tests that call Reserve, Convert and Cancel over gRPC share.
#ifndef DCL_TESTS_RESERVATION_RESERVATION_GRPC_ENV_H_
#define DCL_TESTS_RESERVATION_RESERVATION_GRPC_ENV_H_

#include <memory>
#include <string>

#include "dcl/v1/reservation.grpc.pb.h"
#include "services/common/auth.h"
#include "tests/reservation/reservation_test_util.h"
#include "tests/support/suite.h"

namespace dcl::reservation {

struct GrpcEnv {
  explicit GrpcEnv(int pool_size = 16)
      : env(pool_size),
        suite(*env.pool),
        stub(suite.reservations),
        commerce_token(testing::CreateTokenFor(env.db, env.org, Role::kCommerce)) {}
  ReservationEnv env;
  testing::InProcessSuite suite;
  std::unique_ptr<v1::ReservationService::Stub>& stub;
  std::string commerce_token;
};

}  // namespace dcl::reservation

#endif  // DCL_TESTS_RESERVATION_RESERVATION_GRPC_ENV_H_
