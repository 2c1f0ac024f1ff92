// The occupancy service through a real in-process gRPC server with real tokens: a dc-operator
// places, collides and reads the readable rejection off the wire; other roles are refused.
#include <catch2/catch.hpp>
#include <climits>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_replace.h"
#include "dcl/v1/occupancy.grpc.pb.h"
#include "services/common/grpc_status.h"
#include "services/moves/move_logic.h"
#include "services/occupancy/occupancy_logic.h"
#include "tests/support/barrier.h"
#include "tests/support/fixtures.h"
#include "tests/support/grpc_harness.h"
#include "tests/support/suite.h"
#include "tests/support/test_db.h"

namespace dcl::occupancy {
namespace {

// The occupancy service as its server runs it, behind a real in-process server (with the other
// services beside it: tests/support/suite.h).
using OccupancyServer = testing::InProcessSuite;

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
  OccupancyServer s(*pool);
  auto& stub = s.occupancy;

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
  OccupancyServer s(*pool);

  for (int round = 0; round < 8; ++round) {
    const int unit = 9 + round;
    const std::string devices[2] = {testing::CreateDevice(db, org, site),
                                    testing::CreateDevice(db, org, site)};
    testing::Barrier barrier(2);
    grpc::Status status[2];
    std::thread clients[2];
    for (int c = 0; c < 2; ++c) {
      clients[c] = std::thread([&, c] {
        auto stub = v1::OccupancyService::NewStub(s.Channel());
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

TEST_CASE(
    "units at the ends of int32 are INVALID_ARGUMENT naming the field, in every booking "
    "RPC, and the server keeps serving") {
  testing::TestDatabase db;
  const std::string org = testing::CreateOrg(db, "acme");
  const std::string site = testing::CreateSite(db, org, "FRA1");
  const std::string rack = testing::CreateRack(db, org, site);
  const std::string descending =
      testing::CreateRack(db, org, site, {.name = "R2", .numbering = "descending"});
  testing::DeviceSpec two_u;
  two_u.height_units = 2;
  const std::string device = testing::CreateDevice(db, org, site, two_u);
  const std::string token = testing::CreateTokenFor(db, org, Role::kDcOperator);
  auto pool = db.MakePool(4);
  OccupancyServer s(*pool);

  auto field_of = [](const grpc::Status& status) {
    INFO(status.error_message());
    REQUIRE(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    auto detail = ErrorDetailFromGrpc(status);
    REQUIRE(detail.has_value());
    CHECK(detail->reason() == v1::INVALID_INPUT);
    return detail->metadata().at("field");
  };
  for (int32_t unit : {INT32_MAX, INT32_MIN, INT32_MAX - 9, -1, 1000}) {
    INFO("unit " << unit);
    for (const std::string& target : {rack, descending}) {
      v1::Booking booking;
      v1::PlaceDeviceRequest place;
      place.set_rack_id(target);
      place.set_device_id(device);
      place.set_side(v1::SIDE_FRONT);
      place.set_unit(unit);
      CHECK(field_of(s.occupancy->PlaceDevice(testing::ContextWithToken(token).get(), place,
                                         &booking)) == "unit");
      v1::BlockUnitsRequest block;
      block.set_rack_id(target);
      block.set_side(v1::SIDE_FRONT);
      block.set_first_unit(1);
      block.set_last_unit(unit);
      CHECK(field_of(s.occupancy->BlockUnits(testing::ContextWithToken(token).get(), block, &booking)) ==
            "last_unit");
      v1::ReserveUnitsRequest reserve;
      reserve.set_rack_id(target);
      reserve.set_both_sides(true);
      reserve.set_first_unit(unit);
      reserve.set_last_unit(2);
      CHECK(field_of(s.occupancy->ReserveUnits(testing::ContextWithToken(token).get(), reserve,
                                          &booking)) == "first_unit");
      v1::PlanBookingRequest plan;
      plan.mutable_booking()->set_rack_id(target);
      plan.mutable_booking()->set_kind(v1::BOOKING_PLACEMENT);
      plan.mutable_booking()->set_device_id(device);
      plan.mutable_booking()->set_side(v1::SIDE_FRONT);
      plan.mutable_booking()->set_first_unit(unit);
      v1::PlanBookingResponse planned;
      CHECK(field_of(s.occupancy->PlanBooking(testing::ContextWithToken(token).get(), plan, &planned)) ==
            "booking.first_unit");
    }
  }
  CHECK(db.Count("SELECT count(*) FROM bookings") == 0);

  // Inside the accepted range but outside this rack: a business refusal, not a crash.
  v1::PlaceDeviceRequest place;
  place.set_rack_id(rack);
  place.set_device_id(device);
  place.set_side(v1::SIDE_FRONT);
  place.set_unit(999);
  v1::Booking booking;
  grpc::Status outside =
      s.occupancy->PlaceDevice(testing::ContextWithToken(token).get(), place, &booking);
  CHECK(outside.error_code() == grpc::StatusCode::FAILED_PRECONDITION);
  CHECK(ErrorDetailFromGrpc(outside)->reason() == v1::OUT_OF_BOUNDS);
  place.set_unit(42);  // the far end of a 2U device is U43
  outside = s.occupancy->PlaceDevice(testing::ContextWithToken(token).get(), place, &booking);
  CHECK(ErrorDetailFromGrpc(outside)->reason() == v1::OUT_OF_BOUNDS);

  // And the same server still places.
  place.set_unit(41);
  REQUIRE(s.occupancy->PlaceDevice(testing::ContextWithToken(token).get(), place, &booking).ok());
  CHECK(booking.slots_size() == 4);
}

TEST_CASE("ReserveUnits and BlockUnits on both sides need no side") {
  testing::TestDatabase db;
  const std::string org = testing::CreateOrg(db, "acme");
  const std::string site = testing::CreateSite(db, org, "FRA1");
  const std::string rack = testing::CreateRack(db, org, site);
  const std::string token = testing::CreateTokenFor(db, org, Role::kDcOperator);
  auto pool = db.MakePool(4);
  OccupancyServer s(*pool);
  v1::ReserveUnitsRequest reserve;
  reserve.set_rack_id(rack);
  reserve.set_both_sides(true);
  reserve.set_first_unit(3);
  reserve.set_last_unit(4);
  v1::Booking booking;
  grpc::Status status =
      s.occupancy->ReserveUnits(testing::ContextWithToken(token).get(), reserve, &booking);
  INFO(status.error_message());
  REQUIRE(status.ok());
  CHECK(booking.slots_size() == 4);
  v1::BlockUnitsRequest block;
  block.set_rack_id(rack);
  block.set_both_sides(true);
  block.set_first_unit(5);
  block.set_last_unit(5);
  REQUIRE(s.occupancy->BlockUnits(testing::ContextWithToken(token).get(), block, &booking).ok());
  CHECK(booking.slots_size() == 2);
  // One side without a side is still refused.
  block.set_both_sides(false);
  block.set_first_unit(6);
  block.set_last_unit(6);
  grpc::Status no_side =
      s.occupancy->BlockUnits(testing::ContextWithToken(token).get(), block, &booking);
  CHECK(no_side.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_CASE(
    "another organization's placed device reads exactly like an unknown id in PlaceDevice "
    "and PlanBooking") {
  testing::TestDatabase db;
  const std::string mine = testing::CreateOrg(db, "mine");
  const std::string theirs = testing::CreateOrg(db, "theirs");
  const std::string my_site = testing::CreateSite(db, mine, "FRA1");
  const std::string my_rack = testing::CreateRack(db, mine, my_site);
  const std::string their_site = testing::CreateSite(db, theirs, "AMS1");
  const std::string their_rack = testing::CreateRack(db, theirs, their_site);
  testing::DeviceSpec three_u;
  three_u.height_units = 3;
  const std::string placed = testing::CreateDevice(db, theirs, their_site, three_u);
  const std::string unplaced = testing::CreateDevice(db, theirs, their_site, three_u);
  const std::string my_token = testing::CreateTokenFor(db, mine, Role::kDcOperator);
  const std::string their_token = testing::CreateTokenFor(db, theirs, Role::kDcOperator);
  auto pool = db.MakePool(4);
  OccupancyServer s(*pool);
  {
    v1::PlaceDeviceRequest place;
    place.set_rack_id(their_rack);
    place.set_device_id(placed);
    place.set_side(v1::SIDE_FRONT);
    place.set_unit(10);
    v1::Booking booking;
    REQUIRE(
        s.occupancy->PlaceDevice(testing::ContextWithToken(their_token).get(), place, &booking).ok());
  }
  const std::string unknown = "6f1c2a3b-0000-4000-8000-00000000beef";

  // The answer with the id replaced by a placeholder: code, message, reason, metadata.
  auto answer = [&](const std::function<grpc::Status(const std::string&)>& call,
                    const std::string& id) {
    grpc::Status status = call(id);
    std::string text =
        absl::StrCat(static_cast<int>(status.error_code()), "|", status.error_message());
    if (auto detail = ErrorDetailFromGrpc(status)) {
      absl::StrAppend(&text, "|", v1::Reason_Name(detail->reason()));
      std::map<std::string, std::string> sorted(detail->metadata().begin(),
                                                detail->metadata().end());
      for (const auto& [k, v] : sorted) absl::StrAppend(&text, "|", k, "=", v);
      absl::StrAppend(&text, "|slots=", detail->colliding_slots_size());
    }
    return absl::StrReplaceAll(text, {{id, "<id>"}});
  };
  const std::function<grpc::Status(const std::string&)> place_device = [&](const std::string& id) {
    v1::PlaceDeviceRequest place;
    place.set_rack_id(my_rack);
    place.set_device_id(id);
    place.set_side(v1::SIDE_FRONT);
    place.set_unit(41);  // a 3U device would not fit here: no bounds may be computed from it
    v1::Booking booking;
    return s.occupancy->PlaceDevice(testing::ContextWithToken(my_token).get(), place, &booking);
  };
  v1::PlanBookingResponse planned;
  const std::function<grpc::Status(const std::string&)> plan_booking = [&](const std::string& id) {
    v1::PlanBookingRequest plan;
    plan.mutable_booking()->set_rack_id(my_rack);
    plan.mutable_booking()->set_kind(v1::BOOKING_PLACEMENT);
    plan.mutable_booking()->set_device_id(id);
    plan.mutable_booking()->set_side(v1::SIDE_FRONT);
    plan.mutable_booking()->set_first_unit(5);
    planned.Clear();
    return s.occupancy->PlanBooking(testing::ContextWithToken(my_token).get(), plan, &planned);
  };
  for (const auto* call : {&place_device, &plan_booking}) {
    const std::string for_unknown = answer(*call, unknown);
    CHECK(for_unknown.rfind(absl::StrCat(static_cast<int>(grpc::StatusCode::NOT_FOUND), "|"), 0) ==
          0);
    CHECK(answer(*call, placed) == for_unknown);
    CHECK(planned.slots_size() == 0);
    CHECK(answer(*call, unplaced) == for_unknown);
    CHECK(planned.slots_size() == 0);
  }
  CHECK(db.Count("SELECT count(*) FROM bookings") == 1);
}

TEST_CASE(
    "a request the runtime cannot parse (invalid UTF-8 in a string) is INVALID_ARGUMENT, "
    "not INTERNAL") {
  testing::TestDatabase db;
  const std::string org = testing::CreateOrg(db, "acme");
  const std::string site = testing::CreateSite(db, org, "FRA1");
  const std::string rack = testing::CreateRack(db, org, site);
  const std::string token = testing::CreateTokenFor(db, org, Role::kDcOperator);
  auto pool = db.MakePool(4);
  OccupancyServer s(*pool);
  v1::BlockUnitsRequest block;
  block.set_rack_id(rack);
  block.set_side(v1::SIDE_FRONT);
  block.set_first_unit(1);
  block.set_last_unit(1);
  block.set_reason("\xed\xa0\x80");  // a UTF-16 surrogate: not UTF-8
  v1::Booking booking;
  grpc::Status status = s.occupancy->BlockUnits(testing::ContextWithToken(token).get(), block, &booking);
  CHECK(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  auto detail = ErrorDetailFromGrpc(status);
  REQUIRE(detail.has_value());
  CHECK(detail->reason() == v1::INVALID_INPUT);
  CHECK(detail->metadata().at("field") == "request");
  CHECK(db.Count("SELECT count(*) FROM bookings") == 0);
}

// A rack with a 1000 W budget: a move's destination held for a 600 W device, a rack reservation
// for a machine nobody has named yet, and a blocking. Asked over gRPC as the DC tooling asks.
TEST_CASE(
    "capacity over gRPC counts a move hold with its device and a rack reservation as unknown") {
  testing::TestDatabase db;
  const std::string org = testing::CreateOrg(db, "acme");
  const std::string site = testing::CreateSite(db, org, "FRA1");
  const std::string source_rack = testing::CreateRack(db, org, site, testing::RackSpec{"A"});
  testing::RackSpec budgeted{"B"};
  budgeted.power_budget_watts = 1000;
  budgeted.weight_budget_kg = 800;
  const std::string rack = testing::CreateRack(db, org, site, budgeted);
  testing::DeviceSpec known;
  known.power_draw_watts = 600;
  known.weight_kg = 25;
  const std::string device = testing::CreateDevice(db, org, site, known);
  const std::string token = testing::CreateTokenFor(db, org, Role::kDcOperator);

  auto pool = db.MakePool(4);
  OccupancyServer s(*pool);
  auto& stub = s.occupancy;

  v1::PlaceDeviceRequest place;
  place.set_rack_id(source_rack);
  place.set_device_id(device);
  place.set_side(v1::SIDE_FRONT);
  place.set_unit(3);
  v1::Booking placement;
  REQUIRE(stub->PlaceDevice(testing::ContextWithToken(token).get(), place, &placement).ok());
  // The move's own write path holds the destination.
  moves::MoveLogic moves(*pool);
  v1::StartMoveRequest start;
  start.set_device_id(device);
  start.set_destination_rack_id(rack);
  start.set_destination_side(v1::SIDE_FRONT);
  start.set_destination_unit(20);
  v1::Move move;
  REQUIRE(moves.StartMove(testing::PrincipalFor(org, Role::kDcOperator), start, &move).ok());

  v1::ReserveUnitsRequest reserve;
  reserve.set_rack_id(rack);
  reserve.set_side(v1::SIDE_FRONT);
  reserve.set_first_unit(30);
  reserve.set_last_unit(31);
  reserve.set_reason("order 4711: a machine on its way");
  v1::Booking reservation;
  REQUIRE(stub->ReserveUnits(testing::ContextWithToken(token).get(), reserve, &reservation).ok());
  v1::BlockUnitsRequest block;
  block.set_rack_id(rack);
  block.set_side(v1::SIDE_FRONT);
  block.set_first_unit(40);
  block.set_last_unit(40);
  block.set_reason("patch panel");
  v1::Booking blocking;
  REQUIRE(stub->BlockUnits(testing::ContextWithToken(token).get(), block, &blocking).ok());

  v1::GetRackCapacityRequest req;
  req.set_rack_id(rack);
  v1::RackCapacity cap;
  REQUIRE(stub->GetRackCapacity(testing::ContextWithToken(token).get(), req, &cap).ok());
  const v1::CapacityDimension& power = cap.power_watts();
  CHECK(power.budget_known());
  CHECK(power.budget() == 1000);
  CHECK(power.known_used() == 600);
  CHECK(power.items_with_unknown_value() == 1);
  REQUIRE(power.counted_size() == 1);
  CHECK(power.counted(0).booking_id() == move.move_hold_booking_id());
  CHECK(power.counted(0).kind() == v1::BOOKING_MOVE_HOLD);
  CHECK(power.counted(0).device_id() == device);
  CHECK(power.counted(0).value() == 600);
  REQUIRE(power.unknown_size() == 1);
  CHECK(power.unknown(0).booking_id() == reservation.id());
  CHECK(power.unknown(0).kind() == v1::BOOKING_RESERVATION);
  CHECK(power.unknown(0).device_id().empty());
  CHECK(power.unknown(0).reason() == "rack reservation: holds units only, no power figure given");
  REQUIRE(power.not_counted_size() == 1);
  CHECK(power.not_counted(0).booking_id() == blocking.id());
  CHECK(power.not_counted(0).kind() == v1::BOOKING_BLOCKING);
  CHECK(power.not_counted(0).reason() == "blocking: holds no device, adds no power");

  const v1::CapacityDimension& weight = cap.weight_kg();
  CHECK(weight.budget() == 800);
  CHECK(weight.known_used() == 25);
  CHECK(weight.items_with_unknown_value() == 1);
  REQUIRE(weight.unknown_size() == 1);
  CHECK(weight.unknown(0).booking_id() == reservation.id());
  REQUIRE(weight.not_counted_size() == 1);
  CHECK(weight.not_counted(0).reason() == "blocking: holds no device, adds no weight");

  // The source rack still carries the device's placement: the machine stands there until the
  // move completes. Without a budget the figures are still given.
  req.set_rack_id(source_rack);
  REQUIRE(stub->GetRackCapacity(testing::ContextWithToken(token).get(), req, &cap).ok());
  CHECK_FALSE(cap.power_watts().budget_known());
  CHECK(cap.power_watts().known_used() == 600);
  REQUIRE(cap.power_watts().counted_size() == 1);
  CHECK(cap.power_watts().counted(0).booking_id() == placement.id());
}

TEST_CASE("capacity over gRPC: a device without figures is unknown, and counted once per rack") {
  testing::TestDatabase db;
  const std::string org = testing::CreateOrg(db, "acme");
  const std::string site = testing::CreateSite(db, org, "FRA1");
  // No budget: a device of unknown power stands in a budgeted rack only as an upgrade found it
  // (schema 0039 refuses it), and there the database counts a placement and a move hold of the
  // same device both (occupancy_logic_test covers that rack).
  const std::string rack = testing::CreateRack(db, org, site, testing::RackSpec{});
  const std::string unknown_device = testing::CreateDevice(db, org, site);  // no figures
  const std::string token = testing::CreateTokenFor(db, org, Role::kDcOperator);

  auto pool = db.MakePool(4);
  OccupancyServer s(*pool);
  auto& stub = s.occupancy;

  v1::PlaceDeviceRequest place;
  place.set_rack_id(rack);
  place.set_device_id(unknown_device);
  place.set_side(v1::SIDE_FRONT);
  place.set_unit(3);
  v1::Booking placement;
  REQUIRE(stub->PlaceDevice(testing::ContextWithToken(token).get(), place, &placement).ok());
  // A move inside the same rack: the machine draws its power once, wherever it stands.
  moves::MoveLogic moves(*pool);
  v1::StartMoveRequest start;
  start.set_device_id(unknown_device);
  start.set_destination_rack_id(rack);
  start.set_destination_side(v1::SIDE_FRONT);
  start.set_destination_unit(10);
  v1::Move move;
  REQUIRE(moves.StartMove(testing::PrincipalFor(org, Role::kDcOperator), start, &move).ok());

  v1::GetRackCapacityRequest req;
  req.set_rack_id(rack);
  v1::RackCapacity cap;
  REQUIRE(stub->GetRackCapacity(testing::ContextWithToken(token).get(), req, &cap).ok());
  const v1::CapacityDimension& power = cap.power_watts();
  CHECK(power.known_used() == 0);
  CHECK(power.items_with_unknown_value() == 1);
  CHECK(power.counted_size() == 0);
  REQUIRE(power.unknown_size() == 1);
  CHECK(power.unknown(0).booking_id() == placement.id());
  CHECK(power.unknown(0).device_id() == unknown_device);
  CHECK(power.unknown(0).reason() == "device has no power figure");
  REQUIRE(power.not_counted_size() == 1);
  CHECK(power.not_counted(0).booking_id() == move.move_hold_booking_id());
  CHECK(power.not_counted(0).reason() ==
        "the device is already counted in this rack (its placement)");
  CHECK(cap.weight_kg().unknown(0).reason() == "device has no weight figure");
}

}  // namespace
}  // namespace dcl::occupancy
