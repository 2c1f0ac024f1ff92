// The occupancy service through a real in-process gRPC server with real tokens: a dc-operator
// places, collides and reads the readable rejection off the wire; other roles are refused.
#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <thread>

#include "dcl/v1/occupancy.grpc.pb.h"
#include "services/common/grpc_status.h"
#include "services/common/rpc_gate.h"
#include "services/occupancy/occupancy_logic.h"
#include "services/occupancy/occupancy_service.h"
#include "tests/support/barrier.h"
#include "tests/support/fixtures.h"
#include "tests/support/grpc_harness.h"
#include "tests/support/test_db.h"

namespace dcl::occupancy {
namespace {

TEST_CASE("a dc-operator places a device over gRPC and a second placement reads UNIT_OCCUPIED") {
  testing::TestDatabase db;
  const std::string org = testing::CreateOrg(db, "acme");
  const std::string site = testing::CreateSite(db, org, "FRA1");
  const std::string rack = testing::CreateRack(db, org, site);
  testing::DeviceSpec two_u;
  two_u.height_units = 2;
  two_u.depth_class = "half";
  const std::string d1 = testing::CreateDevice(db, org, site, two_u);
  const std::string d2 = testing::CreateDevice(db, org, site);
  const std::string operator_token = testing::CreateTokenFor(db, org, Role::kDcOperator);
  const std::string commerce_token = testing::CreateTokenFor(db, org, Role::kCommerce);

  auto pool = db.MakePool(4);
  RpcGate gate(*pool);
  OccupancyLogic logic(*pool);
  OccupancyServiceImpl service(gate, logic);
  testing::InProcessServer server(pool.get(), {{"dcl.v1.OccupancyService", &service}});
  auto stub = v1::OccupancyService::NewStub(server.Channel());

  v1::PlaceDeviceRequest req;
  req.set_rack_id(rack);
  req.set_device_id(d1);
  req.set_side(v1::SIDE_FRONT);
  req.set_unit(9);
  v1::Booking booking;
  grpc::Status placed =
      stub->PlaceDevice(testing::ContextWithToken(operator_token).get(), req, &booking);
  REQUIRE(placed.ok());
  CHECK(booking.kind() == v1::BOOKING_PLACEMENT);
  CHECK(booking.slots_size() == 2);
  CHECK_FALSE(booking.has_expires_at());

  req.set_device_id(d2);
  req.set_unit(10);
  grpc::Status taken =
      stub->PlaceDevice(testing::ContextWithToken(operator_token).get(), req, &booking);
  CHECK(taken.error_code() == grpc::StatusCode::FAILED_PRECONDITION);
  auto detail = ErrorDetailFromGrpc(taken);
  REQUIRE(detail.has_value());
  CHECK(detail->reason() == v1::UNIT_OCCUPIED);
  REQUIRE(detail->colliding_slots_size() == 1);
  CHECK(detail->colliding_slots(0).unit() == 10);
  CHECK(taken.error_message() == "front U10 is taken");

  v1::GetRackRequest get;
  get.set_rack_id(rack);
  v1::Rack out;
  REQUIRE(stub->GetRack(testing::ContextWithToken(operator_token).get(), get, &out).ok());
  CHECK(out.occupied_size() == 2);

  grpc::Status refused = stub->GetRack(testing::ContextWithToken(commerce_token).get(), get, &out);
  CHECK(refused.error_code() == grpc::StatusCode::PERMISSION_DENIED);
  grpc::Status anonymous = stub->GetRack(testing::ContextWithToken("").get(), get, &out);
  CHECK(anonymous.error_code() == grpc::StatusCode::UNAUTHENTICATED);
  CHECK(db.Count("SELECT count(*) FROM bookings") == 1);
}

TEST_CASE("two gRPC clients placing at front U9 at once: one booking, one UNIT_OCCUPIED") {
  testing::TestDatabase db;
  const std::string org = testing::CreateOrg(db, "acme");
  const std::string site = testing::CreateSite(db, org, "FRA1");
  const std::string rack = testing::CreateRack(db, org, site);
  const std::string token = testing::CreateTokenFor(db, org, Role::kDcOperator);
  auto pool = db.MakePool(8);
  RpcGate gate(*pool);
  OccupancyLogic logic(*pool);
  OccupancyServiceImpl service(gate, logic);
  testing::InProcessServer server(pool.get(), {{"dcl.v1.OccupancyService", &service}});

  for (int round = 0; round < 8; ++round) {
    const int unit = 9 + round;
    const std::string devices[2] = {testing::CreateDevice(db, org, site),
                                    testing::CreateDevice(db, org, site)};
    testing::Barrier barrier(2);
    grpc::Status status[2];
    std::thread clients[2];
    for (int c = 0; c < 2; ++c) {
      clients[c] = std::thread([&, c] {
        auto stub = v1::OccupancyService::NewStub(server.Channel());
        v1::PlaceDeviceRequest req;
        req.set_rack_id(rack);
        req.set_device_id(devices[c]);
        req.set_side(v1::SIDE_FRONT);
        req.set_unit(unit);
        v1::Booking booking;
        auto context = testing::ContextWithToken(token);
        barrier.ArriveAndWait();
        status[c] = stub->PlaceDevice(context.get(), req, &booking);
      });
    }
    for (std::thread& t : clients) t.join();
    REQUIRE(status[0].ok() != status[1].ok());
    const grpc::Status& lost = status[0].ok() ? status[1] : status[0];
    CHECK(lost.error_code() == grpc::StatusCode::FAILED_PRECONDITION);
    auto detail = ErrorDetailFromGrpc(lost);
    REQUIRE(detail.has_value());
    CHECK(detail->reason() == v1::UNIT_OCCUPIED);
    // Full-depth devices: both sides of the unit collide, and exactly those.
    REQUIRE(detail->colliding_slots_size() == 2);
    CHECK(detail->colliding_slots(0).side() == v1::SIDE_FRONT);
    CHECK(detail->colliding_slots(0).unit() == unit);
    CHECK(detail->colliding_slots(1).side() == v1::SIDE_REAR);
    CHECK(detail->colliding_slots(1).unit() == unit);
    CHECK(lost.error_message() ==
          "front U" + std::to_string(unit) + ", rear U" + std::to_string(unit) + " are taken");
  }
  CHECK(db.Count("SELECT count(*) FROM bookings") == 8);
  CHECK(db.Count("SELECT count(*) FROM booking_slots") == 8 * 2);  // full depth: front + rear
}

}  // namespace
}  // namespace dcl::occupancy
