// A seeded world for move tests: one organization with the module on, a site with two racks, a
// placed device, the real pool, the occupancy service's own PlaceDevice, and the move logic
// under test.
#ifndef DCL_TESTS_MOVES_MOVE_TEST_WORLD_H_
#define DCL_TESTS_MOVES_MOVE_TEST_WORLD_H_

#include <memory>
#include <stdexcept>
#include <string>

#include "absl/strings/str_cat.h"
#include "services/common/auth.h"
#include "services/common/db.h"
#include "services/moves/move_logic.h"
#include "services/occupancy/occupancy_logic.h"
#include "tests/support/fixtures.h"
#include "tests/support/test_db.h"

namespace dcl::testing {

struct MoveWorld {
  explicit MoveWorld(const std::string& device_process_state = "normal")
      : org(CreateOrg(db, "acme")),
        site(CreateSite(db, org, "FRA1")),
        rack_a(CreateRack(db, org, site, RackSpec{"A"})),
        rack_b(CreateRack(db, org, site, RackSpec{"B"})),
        pool(db.MakePool(8)),
        occupancy(*pool),
        logic(*pool, absl::Milliseconds(50)),
        op(PrincipalFor(org, Role::kDcOperator)) {
    DeviceSpec spec;
    spec.height_units = 2;
    spec.process_state = device_process_state;
    device = CreateDevice(db, org, site, spec);
    source_booking = Place(device, rack_a, v1::SIDE_FRONT, 10).id();
  }

  // A placement through the occupancy service's PlaceDevice.
  absl::StatusOr<v1::Booking> TryPlace(const std::string& dev, const std::string& rack,
                                       v1::Side side, int unit) {
    v1::PlaceDeviceRequest req;
    req.set_rack_id(rack);
    req.set_device_id(dev);
    req.set_side(side);
    req.set_unit(unit);
    req.set_reason("test placement");
    v1::Booking booking;
    absl::Status status = occupancy.PlaceDevice(op, req, &booking);
    if (!status.ok()) return status;
    return booking;
  }
  v1::Booking Place(const std::string& dev, const std::string& rack, v1::Side side, int unit) {
    absl::StatusOr<v1::Booking> booking = TryPlace(dev, rack, side, unit);
    if (!booking.ok()) throw std::runtime_error(booking.status().ToString());
    return *booking;
  }

  absl::StatusOr<v1::Move> Start(const std::string& dev, const std::string& rack, v1::Side side,
                                 int unit, bool as_draft = false) {
    v1::StartMoveRequest req;
    req.set_device_id(dev);
    req.set_destination_rack_id(rack);
    req.set_destination_side(side);
    req.set_destination_unit(unit);
    req.set_as_draft(as_draft);
    req.set_note("test move");
    v1::Move move;
    absl::Status status = logic.StartMove(op, req, &move);
    if (!status.ok()) return status;
    return move;
  }

  absl::StatusOr<v1::Move> Advance(const std::string& move_id, v1::MoveState target,
                                   v1::Observation observation = v1::OBSERVATION_UNSPECIFIED) {
    v1::AdvanceMoveRequest req;
    req.set_move_id(move_id);
    req.set_target(target);
    req.set_observation(observation);
    req.set_note(absl::StrCat("to ", v1::MoveState_Name(target)));
    v1::Move move;
    absl::Status status = logic.AdvanceMove(op, req, &move);
    if (!status.ok()) return status;
    return move;
  }
  v1::Move MustAdvance(const std::string& move_id, v1::MoveState target,
                       v1::Observation observation = v1::OBSERVATION_UNSPECIFIED) {
    absl::StatusOr<v1::Move> move = Advance(move_id, target, observation);
    if (!move.ok()) throw std::runtime_error(move.status().ToString());
    return *move;
  }

  std::string ProcessState(const std::string& dev) const {
    return db.Scalar(absl::StrCat("SELECT process_state FROM devices WHERE id = '", dev, "'"));
  }

  TestDatabase db;
  std::string org;
  std::string site;
  std::string rack_a;
  std::string rack_b;
  std::unique_ptr<DbPool> pool;
  occupancy::OccupancyLogic occupancy;
  moves::MoveLogic logic;
  Principal op;
  std::string device;
  std::string source_booking;
};

}  // namespace dcl::testing

#endif  // DCL_TESTS_MOVES_MOVE_TEST_WORLD_H_
