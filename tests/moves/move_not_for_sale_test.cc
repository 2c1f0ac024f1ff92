// A device whose move holds a destination is not for sale: the reservation and move services on
// one in-process gRPC server over one database, called as the commerce backend and the DC tooling
// call them. From StartMove (the destination is held) until the move ends the device is
// 'moving' and Reserve refuses it with that reason; every terminal state restores the state the
// device had before, exactly.
#include <grpcpp/grpcpp.h>

#include <catch2/catch.hpp>
#include <string>

#include "absl/strings/str_cat.h"
#include "dcl/v1/moves.grpc.pb.h"
#include "dcl/v1/reservation.grpc.pb.h"
#include "services/common/grpc_status.h"
#include "tests/moves/move_test_world.h"
#include "tests/support/grpc_harness.h"
#include "tests/support/suite.h"

namespace dcl::moves {
namespace {

using testing::ContextWithToken;
using testing::MoveWorld;

struct Shop {
  explicit Shop(MoveWorld& w)
      : world(w),
        suite(*w.pool),
        reservations(suite.reservations),
        moves(suite.moves),
        commerce(testing::CreateTokenFor(w.db, w.org, Role::kCommerce)),
        dc_operator(testing::CreateTokenFor(w.db, w.org, Role::kDcOperator)) {}

  grpc::Status Reserve(const std::string& order, v1::ReserveResponse* out) {
    v1::ReserveRequest req;
    req.set_idempotency_key(order);
    req.mutable_criteria()->set_site_id(world.site);
    return reservations->Reserve(ContextWithToken(commerce).get(), req, out);
  }

  v1::Move StartMove(bool as_draft = false) {
    v1::StartMoveRequest req;
    req.set_device_id(world.device);
    req.set_destination_rack_id(world.rack_b);
    req.set_destination_side(v1::SIDE_FRONT);
    req.set_destination_unit(20);
    req.set_as_draft(as_draft);
    v1::Move move;
    grpc::Status status = moves->StartMove(ContextWithToken(dc_operator).get(), req, &move);
    REQUIRE(status.ok());
    return move;
  }

  void Advance(const std::string& move_id, v1::MoveState target,
               v1::Observation observation = v1::OBSERVATION_UNSPECIFIED) {
    v1::AdvanceMoveRequest req;
    req.set_move_id(move_id);
    req.set_target(target);
    req.set_observation(observation);
    v1::Move move;
    grpc::Status status = moves->AdvanceMove(ContextWithToken(dc_operator).get(), req, &move);
    REQUIRE(status.ok());
    REQUIRE(move.state() == target);
  }

  void Cancel(const std::string& move_id) {
    v1::CancelMoveRequest req;
    req.set_move_id(move_id);
    req.set_note("customer changed plans");
    v1::Move move;
    grpc::Status status = moves->CancelMove(ContextWithToken(dc_operator).get(), req, &move);
    REQUIRE(status.ok());
    REQUIRE(move.state() == v1::MOVE_CANCELLED);
  }

  MoveWorld& world;
  testing::InProcessSuite suite;
  std::unique_ptr<v1::ReservationService::Stub>& reservations;
  std::unique_ptr<v1::MoveService::Stub>& moves;
  std::string commerce;
  std::string dc_operator;
};

// The device is the site's only one: Reserve either holds it or says why it dropped out.
void RequireRefusedAs(Shop& shop, const std::string& order, const std::string& reason) {
  v1::ReserveResponse response;
  grpc::Status status = shop.Reserve(order, &response);
  INFO("Reserve answered " << status.error_code() << " " << status.error_message()
                           << (status.ok() ? " holding " + response.reservation().device_id()
                                           : std::string()));
  REQUIRE(status.error_code() == grpc::StatusCode::FAILED_PRECONDITION);
  auto detail = ErrorDetailFromGrpc(status);
  REQUIRE(detail.has_value());
  CHECK(detail->reason() == v1::NO_CAPACITY);
  REQUIRE(detail->exclusion_counts_size() == 1);
  CHECK(detail->exclusion_counts(0).reason() == reason);
  CHECK(detail->exclusion_counts(0).count() == 1);
}

void RequireHeld(Shop& shop, const std::string& order) {
  v1::ReserveResponse response;
  grpc::Status status = shop.Reserve(order, &response);
  INFO("Reserve answered " << status.error_code() << " " << status.error_message());
  REQUIRE(status.ok());
  CHECK(response.reservation().device_id() == shop.world.device);
}

TEST_CASE("a planned or approved move makes the device unsellable; cancelling sells it again") {
  MoveWorld w;
  Shop shop(w);
  const v1::Move move = shop.StartMove();
  REQUIRE(move.state() == v1::MOVE_PLANNED);
  CHECK(w.ProcessState(w.device) == "moving");
  RequireRefusedAs(shop, "order-planned", "moving");

  shop.Advance(move.id(), v1::MOVE_APPROVED);
  CHECK(w.ProcessState(w.device) == "moving");
  RequireRefusedAs(shop, "order-approved", "moving");
  CHECK(w.db.Count("SELECT count(*) FROM reservations") == 0);

  shop.Cancel(move.id());
  CHECK(w.ProcessState(w.device) == "normal");
  RequireHeld(shop, "order-after-cancel");
}

TEST_CASE("a draft move already holds its destination, so the device is moving from the start") {
  MoveWorld w;
  Shop shop(w);
  const v1::Move move = shop.StartMove(/*as_draft=*/true);
  REQUIRE(move.state() == v1::MOVE_DRAFT);
  CHECK(w.ProcessState(w.device) == "moving");
  RequireRefusedAs(shop, "order-draft", "moving");
  shop.Advance(move.id(), v1::MOVE_PLANNED);
  shop.Advance(move.id(), v1::MOVE_DRAFT);
  CHECK(w.ProcessState(w.device) == "moving");
  shop.Cancel(move.id());
  CHECK(w.ProcessState(w.device) == "normal");
  RequireHeld(shop, "order-after-draft");
}

TEST_CASE("a staging device is moving during its move and back in staging after it, not normal") {
  MoveWorld w("staging");
  Shop shop(w);
  RequireRefusedAs(shop, "order-before", "not_ready_staging");

  SECTION("cancelled while planned") {
    const v1::Move move = shop.StartMove();
    CHECK(w.ProcessState(w.device) == "moving");
    RequireRefusedAs(shop, "order-planned", "moving");
    shop.Cancel(move.id());
  }
  SECTION("failed after the work started") {
    const v1::Move move = shop.StartMove();
    shop.Advance(move.id(), v1::MOVE_APPROVED);
    shop.Advance(move.id(), v1::MOVE_IN_PROGRESS);
    RequireRefusedAs(shop, "order-in-progress", "moving");
    shop.Advance(move.id(), v1::MOVE_FAILED);
  }
  SECTION("completed") {
    const v1::Move move = shop.StartMove();
    shop.Advance(move.id(), v1::MOVE_APPROVED);
    shop.Advance(move.id(), v1::MOVE_IN_PROGRESS);
    shop.Advance(move.id(), v1::MOVE_AWAITING_VERIFICATION);
    RequireRefusedAs(shop, "order-awaiting", "moving");
    shop.Advance(move.id(), v1::MOVE_COMPLETED);
  }
  CHECK(w.ProcessState(w.device) == "staging");
  RequireRefusedAs(shop, "order-after", "not_ready_staging");
}

TEST_CASE("a normal device is sellable again after its move completes or fails") {
  MoveWorld w;
  Shop shop(w);
  const v1::Move move = shop.StartMove();
  shop.Advance(move.id(), v1::MOVE_APPROVED);
  shop.Advance(move.id(), v1::MOVE_IN_PROGRESS);
  SECTION("completed") {
    shop.Advance(move.id(), v1::MOVE_AWAITING_VERIFICATION);
    shop.Advance(move.id(), v1::MOVE_COMPLETED);
  }
  SECTION("failed from needs_reconcile") {
    shop.Advance(move.id(), v1::MOVE_NEEDS_RECONCILE);
    RequireRefusedAs(shop, "order-reconcile", "moving");
    shop.Advance(move.id(), v1::MOVE_FAILED, v1::OBSERVATION_NOT_MOVED);
  }
  CHECK(w.ProcessState(w.device) == "normal");
  RequireHeld(shop, "order-after-move");
}

}  // namespace
}  // namespace dcl::moves
