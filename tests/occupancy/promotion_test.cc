// PlaceDevice naming the unit reservation it fulfils, against a real PostgreSQL: the reserved
// units become the placement without a free instant. The whole reservation is promoted in place
// (same booking id, slot rows untouched: same ctid and xmin); a part passes its slot rows to a
// new placement header in one UPDATE (never released, never inserted again). Writers hammering
// the same units during promotions never win one, through the write path or around it.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "services/common/db.h"
#include "services/common/status.h"
#include "services/occupancy/booking_store.h"
#include "services/occupancy/occupancy_logic.h"
#include "tests/support/barrier.h"
#include "tests/support/fixtures.h"
#include "tests/support/site.h"
#include "tests/support/test_db.h"

namespace dcl::occupancy {
namespace {

using testing::Barrier;
using testing::TestDatabase;

using testing::Site;

// (side, unit) → "ctid xmin booking_id released_at" of every slot row of the site's rack.
std::map<std::string, std::string> SlotRows(const Site& s) {
  std::map<std::string, std::string> rows;
  for (const auto& r : s.db.Exec("SELECT side || ' ' || unit, ctid::text || ' ' || xmin::text, "
                                 "booking_id::text, coalesce(released_at::text, 'active') "
                                 "FROM booking_slots WHERE rack_id = '" +
                                 s.rack + "'")) {
    rows[r[0].as<std::string>()] = r[1].as<std::string>() + " " + r[2].as<std::string>() + " " +
                                   r[3].as<std::string>();
  }
  return rows;
}

v1::Booking Reserve(OccupancyLogic& logic, const Site& s, v1::Side side, bool both, int first,
                    int last, int64_t ttl_seconds = 0) {
  v1::ReserveUnitsRequest req;
  req.set_rack_id(s.rack);
  req.set_side(side);
  req.set_both_sides(both);
  req.set_first_unit(first);
  req.set_last_unit(last);
  req.set_reason("delivery on Tuesday");
  req.set_ttl_seconds(ttl_seconds);  // 0: the service's default
  v1::Booking out;
  absl::Status st = logic.ReserveUnits(s.op, req, &out);
  REQUIRE(st.ok());
  return out;
}

v1::PlaceDeviceRequest PlaceInto(const std::string& rack, const std::string& device, v1::Side side,
                                 int unit, const std::string& reservation_id) {
  v1::PlaceDeviceRequest req;
  req.set_rack_id(rack);
  req.set_device_id(device);
  req.set_side(side);
  req.set_unit(unit);
  req.set_reservation_id(reservation_id);
  return req;
}

// A blocking of one front unit of the site's rack.
v1::BlockUnitsRequest BlockFront(const Site& s, int unit) {
  v1::BlockUnitsRequest block;
  block.set_rack_id(s.rack);
  block.set_side(v1::SIDE_FRONT);
  block.set_first_unit(unit);
  block.set_last_unit(unit);
  return block;
}

v1::ErrorDetail DetailOf(const absl::Status& status) {
  auto detail = GetErrorDetail(status);
  REQUIRE(detail.has_value());
  return *detail;
}

bool WaitForLockWaiter(const TestDatabase& db) {
  for (int i = 0; i < 400; ++i) {
    if (db.Count("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                 "AND wait_event_type = 'Lock'") > 0) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  return false;
}

// PlaceDevice's promotion of `reservation_id` into a placement of `device` at front `unit`, run
// on `pool` in a transaction left open with its row locks held until Commit(): what a rival
// meets while a promotion is under way.
class OpenPromotion {
 public:
  OpenPromotion(DbPool& pool, const Site& s, const std::string& reservation_id,
                const std::string& device, int unit)
      : thread_([this, &pool, &s, reservation_id, device, unit] {
          try {
            result_ = pool.Transact([&](pqxx::work& tx) -> absl::StatusOr<v1::Booking> {
              absl::StatusOr<v1::Booking> b =
                  PromoteReservation(tx, s.op, reservation_id,
                                     DeviceFootprintSpec(v1::BOOKING_PLACEMENT, s.rack, device,
                                                         v1::SIDE_FRONT, unit, ""));
              promoted_ok_ = b.ok();
              ran_ = true;
              while (!commit_) std::this_thread::sleep_for(std::chrono::milliseconds(5));
              return b;
            });
          } catch (const std::exception& e) {
            result_ = absl::InternalError(e.what());
          }
          ran_ = true;
        }) {
    while (!ran_) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ~OpenPromotion() {
    if (thread_.joinable()) Commit();
  }
  // Whether the promotion succeeded (its transaction still open until Commit()).
  bool Promoted() const { return promoted_ok_; }
  // Lets the transaction commit; answers what the promotion answered.
  absl::StatusOr<v1::Booking> Commit() {
    commit_ = true;
    thread_.join();
    return result_;
  }

 private:
  std::atomic<bool> ran_{false};
  std::atomic<bool> promoted_ok_{false};
  std::atomic<bool> commit_{false};
  absl::StatusOr<v1::Booking> result_ = absl::UnknownError("not run");
  std::thread thread_;  // the last member: started once the others exist
};

TEST_CASE("a device placed into its whole reservation: same booking id, same slot rows, no expiry") {
  Site s;
  auto pool = s.db.MakePool(1);
  OccupancyLogic logic(*pool);
  const v1::Booking reservation = Reserve(logic, s, v1::SIDE_UNSPECIFIED, true, 10, 11);
  const std::string device = s.Device(2, "full");
  const std::map<std::string, std::string> before = SlotRows(s);
  REQUIRE(before.size() == 4);

  v1::Booking placed;
  absl::Status st =
      logic.PlaceDevice(s.op, PlaceInto(s.rack, device, v1::SIDE_FRONT, 10, reservation.id()),
                        &placed);
  REQUIRE(st.ok());
  CHECK(placed.id() == reservation.id());
  CHECK(placed.kind() == v1::BOOKING_PLACEMENT);
  CHECK(placed.device_id() == device);
  CHECK_FALSE(placed.has_expires_at());
  CHECK(placed.slots_size() == 4);
  // Not one slot row was written: same physical row (ctid), same inserting transaction (xmin),
  // same booking, still active.
  CHECK(SlotRows(s) == before);
  CHECK(s.db.Count("SELECT count(*) FROM bookings") == 1);
  CHECK(s.db.Scalar("SELECT kind FROM bookings WHERE id = '" + reservation.id() + "'") ==
        "placement");
  // The reservation is fulfilled: naming it again is refused, the device is placed once.
  v1::Booking again;
  absl::Status twice = logic.PlaceDevice(
      s.op, PlaceInto(s.rack, s.Device(2, "full"), v1::SIDE_FRONT, 10, reservation.id()), &again);
  CHECK(DetailOf(twice).reason() == v1::WRONG_STATE);
}

TEST_CASE("a release that names the reservation it saw does not release the placement it became") {
  Site s;
  auto pool = s.db.MakePool(1);
  OccupancyLogic logic(*pool);
  const v1::Booking reservation = Reserve(logic, s, v1::SIDE_FRONT, false, 20, 21);
  v1::Booking placed;
  REQUIRE(
      logic
          .PlaceDevice(s.op,
                       PlaceInto(s.rack, s.Device(2, "half"), v1::SIDE_FRONT, 20, reservation.id()),
                       &placed)
          .ok());
  REQUIRE(placed.id() == reservation.id());
  const std::map<std::string, std::string> before = SlotRows(s);

  // What a screen that still shows the reservation sends: refused, nothing released.
  v1::ReleaseBookingRequest stale;
  stale.set_booking_id(reservation.id());
  stale.set_expected_kind(v1::BOOKING_RESERVATION);
  stale.set_request_id("release-the-reservation");
  v1::Booking out;
  const absl::Status refused = logic.ReleaseBooking(s.op, stale, &out);
  CHECK(refused.code() == absl::StatusCode::kFailedPrecondition);
  const v1::ErrorDetail detail = DetailOf(refused);
  CHECK(detail.reason() == v1::WRONG_STATE);
  CHECK(detail.metadata().at("kind") == "placement");
  CHECK(detail.metadata().at("expected_kind") == "reservation");
  CHECK(SlotRows(s) == before);
  CHECK(s.db.Count("SELECT count(*) FROM bookings WHERE released_at IS NULL") == 1);

  // A kind outside the enum is bad input, not a kind that never matches.
  v1::ReleaseBookingRequest unknown_kind = stale;
  unknown_kind.set_expected_kind(static_cast<v1::BookingKind>(99));
  CHECK(logic.ReleaseBooking(s.op, unknown_kind, &out).code() ==
        absl::StatusCode::kInvalidArgument);

  // Naming the kind it is now releases it.
  v1::ReleaseBookingRequest current = stale;
  current.set_expected_kind(v1::BOOKING_PLACEMENT);
  current.set_request_id("release-the-placement");
  REQUIRE(logic.ReleaseBooking(s.op, current, &out).ok());
  CHECK(out.kind() == v1::BOOKING_PLACEMENT);
  CHECK(out.has_released_at());
}

TEST_CASE("a release waiting for a whole promotion releases nothing once the promotion commits") {
  Site s;
  auto pool1 = s.db.MakePool(1);
  auto pool2 = s.db.MakePool(1);
  OccupancyLogic setup(*pool1);
  OccupancyLogic releaser(*pool2);
  const v1::Booking reservation = Reserve(setup, s, v1::SIDE_FRONT, false, 30, 30);
  const std::string device = s.Device(1, "half");
  const std::map<std::string, std::string> before = SlotRows(s);
  OpenPromotion promotion(*pool1, s, reservation.id(), device, 30);
  REQUIRE(promotion.Promoted());
  // The promotion has run, not committed: the release reads a reservation (its checks are a
  // reservation's) and its update waits for the header's row lock.
  absl::Status released = absl::UnknownError("not run");
  std::thread release([&] {
    v1::ReleaseBookingRequest req;
    req.set_booking_id(reservation.id());
    req.set_reason("delivery cancelled");
    v1::Booking out;
    released = releaser.ReleaseBooking(s.op, req, &out);
  });
  const bool waited = WaitForLockWaiter(s.db);
  CHECK(waited);
  const absl::StatusOr<v1::Booking> placement = promotion.Commit();
  release.join();
  REQUIRE(placement.ok());
  CHECK(placement->id() == reservation.id());
  // The kind it checked is gone: refused, and the placement keeps every slot row it had.
  CHECK(released.code() == absl::StatusCode::kFailedPrecondition);
  CHECK(DetailOf(released).reason() == v1::WRONG_STATE);
  CHECK(DetailOf(released).metadata().at("kind") == "placement");
  CHECK(SlotRows(s) == before);
  CHECK(s.db.Scalar("SELECT kind || ' ' || (released_at IS NULL) FROM bookings WHERE id = '" +
                    reservation.id() + "'") == "placement true");
}

TEST_CASE("a release waiting for a partial promotion answers only the units it released") {
  Site s;
  auto pool1 = s.db.MakePool(1);
  auto pool2 = s.db.MakePool(1);
  OccupancyLogic setup(*pool1);
  OccupancyLogic releaser(*pool2);
  const v1::Booking reservation = Reserve(setup, s, v1::SIDE_FRONT, false, 25, 26);
  const std::string device = s.Device(1, "half");
  OpenPromotion promotion(*pool1, s, reservation.id(), device, 25);  // U25 of U25..U26
  REQUIRE(promotion.Promoted());
  absl::Status released = absl::UnknownError("not run");
  v1::Booking answer;
  std::thread release([&] {
    v1::ReleaseBookingRequest req;
    req.set_booking_id(reservation.id());
    req.set_expected_kind(v1::BOOKING_RESERVATION);
    released = releaser.ReleaseBooking(s.op, req, &answer);
  });
  const bool waited = WaitForLockWaiter(s.db);
  CHECK(waited);
  const absl::StatusOr<v1::Booking> placement = promotion.Commit();
  release.join();
  REQUIRE(placement.ok());
  REQUIRE(released.ok());
  // The reservation kept U26 and released it; U25 is the placement's, active.
  REQUIRE(answer.slots_size() == 1);
  CHECK(answer.slots(0).unit() == 26);
  const absl::StatusOr<v1::Booking> stored =
      pool1->Transact([&](pqxx::work& tx) { return LoadBooking(tx, s.op, reservation.id()); });
  REQUIRE(stored.ok());
  CHECK(answer.DebugString() == stored->DebugString());
  CHECK(s.db.Count("SELECT count(*) FROM booking_slots WHERE unit = 25 AND released_at IS NULL "
                   "AND booking_id = '" +
                   placement->id() + "'") == 1);
}

TEST_CASE("a reservation promoted as it lapses is not released by a writer that saw it lapsed") {
  // The promotion checks the deadline when it starts and holds the header's row lock; the
  // reservation lapses before it commits. A blocking of the same unit meanwhile reads the
  // reservation as lapsed, releases it at the point of use, and waits for that row lock.
  Site s;
  auto pool1 = s.db.MakePool(1);
  auto pool2 = s.db.MakePool(1);
  OccupancyLogic setup(*pool1);
  OccupancyLogic rival(*pool2);
  const std::string device = s.Device(1, "half");
  // Three seconds: time for the promotion to begin before the deadline.
  const v1::Booking reservation = Reserve(setup, s, v1::SIDE_FRONT, false, 40, 40, 3);
  OpenPromotion promotion(*pool1, s, reservation.id(), device, 40);
  REQUIRE(promotion.Promoted());
  while (s.db.Count("SELECT count(*) FROM bookings WHERE expires_at > now()") > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  absl::Status blocked = absl::UnknownError("not run");
  std::thread blocker([&] {
    const v1::BlockUnitsRequest block = BlockFront(s, 40);
    v1::Booking b;
    blocked = rival.BlockUnits(s.op, block, &b);
  });
  const bool waited = WaitForLockWaiter(s.db);
  CHECK(waited);
  const absl::StatusOr<v1::Booking> placement = promotion.Commit();
  blocker.join();
  REQUIRE(placement.ok());
  // The lapsed reservation it meant to release is a placement now: the blocking is refused and
  // the placement keeps its unit.
  CHECK(ReasonOf(blocked) == v1::UNIT_OCCUPIED);
  CHECK(s.db.Scalar("SELECT kind || ' ' || (released_at IS NULL) FROM bookings WHERE id = '" +
                    reservation.id() + "'") == "placement true");
  CHECK(s.db.Count("SELECT count(*) FROM booking_slots WHERE unit = 40 AND released_at IS NULL "
                   "AND booking_id = '" +
                   reservation.id() + "'") == 1);
  CHECK(s.db.Count("SELECT count(*) FROM bookings WHERE kind = 'blocking'") == 0);
}

TEST_CASE("devices covering parts of a reservation take their units, the rest stays reserved") {
  Site s;
  auto pool = s.db.MakePool(1);
  OccupancyLogic logic(*pool);
  const v1::Booking reservation = Reserve(logic, s, v1::SIDE_FRONT, false, 1, 6);
  const std::map<std::string, std::string> before = SlotRows(s);
  REQUIRE(before.size() == 6);

  // Three 2U half-depth servers, out of order; the last one takes what remains.
  const std::vector<int> anchors = {3, 1, 5};
  std::vector<v1::Booking> placed(anchors.size());
  for (size_t i = 0; i < anchors.size(); ++i) {
    const std::string device = s.Device(2, "half");
    absl::Status st = logic.PlaceDevice(
        s.op, PlaceInto(s.rack, device, v1::SIDE_FRONT, anchors[i], reservation.id()), &placed[i]);
    REQUIRE(st.ok());
    CHECK(placed[i].kind() == v1::BOOKING_PLACEMENT);
    CHECK(placed[i].device_id() == device);
    REQUIRE(placed[i].slots_size() == 2);
    CHECK(placed[i].slots(0).unit() == anchors[i]);
    CHECK(placed[i].slots(1).unit() == anchors[i] + 1);
    const int64_t still_reserved = s.db.Count(
        "SELECT count(*) FROM booking_slots x JOIN bookings b ON b.id = x.booking_id "
        "WHERE b.id = '" + reservation.id() + "' AND b.kind = 'reservation' AND "
        "x.released_at IS NULL");
    CHECK(still_reserved == 6 - 2 * static_cast<int64_t>(i + 1));
    // Every slot row of the rack is the one ReserveUnits wrote, active, none added, none freed.
    const std::map<std::string, std::string> now = SlotRows(s);
    REQUIRE(now.size() == 6);
    for (const auto& [slot, row] : now) CHECK(row.substr(row.size() - 6) == "active");
  }
  CHECK(placed[0].id() != reservation.id());
  CHECK(placed[1].id() != reservation.id());
  // The last device covered everything the reservation still held: promoted in place, its
  // slot rows untouched since ReserveUnits wrote them.
  CHECK(placed[2].id() == reservation.id());
  const std::map<std::string, std::string> after = SlotRows(s);
  CHECK(after.at("front 5") == before.at("front 5"));
  CHECK(after.at("front 6") == before.at("front 6"));
  CHECK(s.db.Count("SELECT count(*) FROM booking_slots WHERE released_at IS NOT NULL") == 0);
  CHECK(s.db.Count("SELECT count(*) FROM bookings WHERE kind = 'placement' AND "
                   "released_at IS NULL") == 3);
  CHECK(s.db.Count("SELECT count(*) FROM bookings WHERE kind = 'reservation'") == 0);
  // Each placement's header says where its device is.
  CHECK(s.db.Scalar("SELECT first_unit || '-' || last_unit || ' ' || front || rear FROM bookings "
                    "WHERE id = '" + placed[0].id() + "'") == "3-4 truefalse");
}

TEST_CASE("a device that does not fit its reservation is refused naming the units, nothing moves") {
  Site s;
  auto pool = s.db.MakePool(1);
  OccupancyLogic logic(*pool);
  const v1::Booking reservation = Reserve(logic, s, v1::SIDE_FRONT, false, 20, 23);
  const std::map<std::string, std::string> before = SlotRows(s);
  v1::Booking out;

  SECTION("a full-depth device needs the rear the reservation does not hold") {
    absl::Status st = logic.PlaceDevice(
        s.op, PlaceInto(s.rack, s.Device(1, "full"), v1::SIDE_FRONT, 20, reservation.id()), &out);
    CHECK(st.code() == absl::StatusCode::kFailedPrecondition);
    const v1::ErrorDetail d = DetailOf(st);
    CHECK(d.reason() == v1::NOT_IN_RESERVATION);
    CHECK(d.metadata().at("missing") == "rear U20");
    CHECK(d.metadata().at("reserved") == "front U20, front U21, front U22, front U23");
    CHECK(d.message().find("rear U20") != std::string::npos);
  }
  SECTION("an unknown depth claims both sides and is refused the same way") {
    absl::Status st = logic.PlaceDevice(
        s.op, PlaceInto(s.rack, s.Device(1, "unknown"), v1::SIDE_FRONT, 21, reservation.id()),
        &out);
    CHECK(DetailOf(st).metadata().at("missing") == "rear U21");
  }
  SECTION("units beyond the reservation are named") {
    absl::Status st = logic.PlaceDevice(
        s.op, PlaceInto(s.rack, s.Device(3, "half"), v1::SIDE_FRONT, 22, reservation.id()), &out);
    const v1::ErrorDetail d = DetailOf(st);
    CHECK(d.reason() == v1::NOT_IN_RESERVATION);
    CHECK(d.metadata().at("missing") == "front U24");
    CHECK(d.metadata().at("needed") == "front U22, front U23, front U24");
  }
  SECTION("the other side is named") {
    absl::Status st = logic.PlaceDevice(
        s.op, PlaceInto(s.rack, s.Device(1, "half"), v1::SIDE_REAR, 20, reservation.id()), &out);
    CHECK(DetailOf(st).metadata().at("missing") == "rear U20");
  }
  SECTION("another rack than the reservation's is refused naming the reservation's rack") {
    testing::RackSpec r2;
    r2.name = "R2";
    const std::string other = testing::CreateRack(s.db, s.org, s.site, r2);
    absl::Status st = logic.PlaceDevice(
        s.op, PlaceInto(other, s.Device(1, "half"), v1::SIDE_FRONT, 20, reservation.id()), &out);
    const v1::ErrorDetail d = DetailOf(st);
    CHECK(d.reason() == v1::NOT_IN_RESERVATION);
    CHECK(d.metadata().at("reservation_rack_id") == s.rack);
  }
  SECTION("a lapsed reservation is HOLD_EXPIRED at the point of use, sweeper or not") {
    s.db.Exec("UPDATE bookings SET expires_at = now() - interval '1 second' WHERE id = '" +
              reservation.id() + "'");
    absl::Status st = logic.PlaceDevice(
        s.op, PlaceInto(s.rack, s.Device(1, "half"), v1::SIDE_FRONT, 20, reservation.id()), &out);
    CHECK(DetailOf(st).reason() == v1::HOLD_EXPIRED);
  }
  SECTION("a booking that is not a reservation is WRONG_STATE") {
    const v1::BlockUnitsRequest block = BlockFront(s, 30);
    v1::Booking blocking;
    REQUIRE(logic.BlockUnits(s.op, block, &blocking).ok());
    absl::Status st = logic.PlaceDevice(
        s.op, PlaceInto(s.rack, s.Device(1, "half"), v1::SIDE_FRONT, 30, blocking.id()), &out);
    CHECK(DetailOf(st).reason() == v1::WRONG_STATE);
  }
  SECTION("another organization's reservation reads like an unknown id") {
    const std::string org2 = testing::CreateOrg(s.db, "globex");
    const Principal op2 = testing::PrincipalFor(org2, Role::kDcOperator);
    absl::Status st = logic.PlaceDevice(
        op2, PlaceInto(s.rack, s.Device(1, "half"), v1::SIDE_FRONT, 20, reservation.id()), &out);
    CHECK(st.code() == absl::StatusCode::kNotFound);
  }
  SECTION("a malformed reservation id is invalid input") {
    absl::Status st = logic.PlaceDevice(
        s.op, PlaceInto(s.rack, s.Device(1, "half"), v1::SIDE_FRONT, 20, "not-a-uuid"), &out);
    CHECK(st.code() == absl::StatusCode::kInvalidArgument);
  }
  // Whatever the refusal, the reservation is exactly as it was.
  const std::map<std::string, std::string> after = SlotRows(s);
  for (const auto& [slot, row] : before) CHECK(after.at(slot) == row);
  CHECK(s.db.Count("SELECT count(*) FROM bookings WHERE kind = 'placement'") == 0);
}

TEST_CASE("a device already placed elsewhere is refused by the device index, the units stay") {
  Site s;
  auto pool = s.db.MakePool(1);
  OccupancyLogic logic(*pool);
  const std::string device = s.Device(1, "half");
  v1::Booking placed;
  REQUIRE(logic.PlaceDevice(s.op, PlaceInto(s.rack, device, v1::SIDE_FRONT, 40, ""), &placed).ok());
  for (int last : {5, 6}) {  // whole reservation (header update) and part (new header)
    const v1::Booking reservation = Reserve(logic, s, v1::SIDE_FRONT, false, 5, last);
    const std::map<std::string, std::string> before = SlotRows(s);
    v1::Booking out;
    absl::Status st = logic.PlaceDevice(
        s.op, PlaceInto(s.rack, device, v1::SIDE_FRONT, 5, reservation.id()), &out);
    CHECK(DetailOf(st).reason() == v1::DEVICE_ALREADY_PLACED);
    CHECK(SlotRows(s) == before);
    v1::ReleaseBookingRequest release;
    release.set_booking_id(reservation.id());
    v1::Booking released;
    REQUIRE(logic.ReleaseBooking(s.op, release, &released).ok());
  }
}

TEST_CASE("a write waiting on a unit being promoted loses to the placement when it commits") {
  Site s;
  auto pool1 = s.db.MakePool(1);
  auto pool2 = s.db.MakePool(1);
  OccupancyLogic setup(*pool1);
  OccupancyLogic rival(*pool2);
  for (int unit : {8, 12}) {  // part of a reservation (U8 of U8..U9), then the whole (U12)
    const bool part = unit == 8;
    const v1::Booking reservation = Reserve(setup, s, v1::SIDE_FRONT, false, unit, part ? 9 : 12);
    const std::string device = s.Device(1, "half");
    OpenPromotion promotion(*pool1, s, reservation.id(), device, unit);
    REQUIRE(promotion.Promoted());
    // The promotion has run but not committed: a blocking through the write path is refused ...
    absl::Status rival_status;
    std::thread blocker([&] {
      const v1::BlockUnitsRequest block = BlockFront(s, unit);
      v1::Booking b;
      // The planner reads the unit as reserved and refuses before writing; a direct insert below
      // reaches the index.
      rival_status = rival.BlockUnits(s.op, block, &b);
    });
    blocker.join();
    CHECK(DetailOf(rival_status).reason() == v1::UNIT_OCCUPIED);
    // ... and so does an insert that goes around the write path straight to the index.
    std::string violated;
    std::thread raw([&] {
      auto conn = s.db.Connect();
      pqxx::work tx(*conn);
      pqxx::row r = tx.exec_params1(
          "SELECT coalesce(violated_constraint, 'none') FROM dcl_insert_booking($1::uuid, "
          "$2::uuid, $3::uuid, 'blocking', NULL, true, false, $4::integer, $4::integer, 0, "
          "'rival', '', ARRAY['front'], ARRAY[$4::integer])",
          s.org, s.site, s.rack, unit);
      violated = r[0].as<std::string>();
      tx.commit();
    });
    if (part) {
      // A part: the promotion rewrote the slot row (new booking id), so the insert waits for
      // the promotion's outcome on the row's old version, then collides with its new one.
      const bool waited = WaitForLockWaiter(s.db);
      CHECK(waited);
    } else {
      // The whole: the slot row was never written, the insert collides with it at once.
      raw.join();
    }
    const absl::StatusOr<v1::Booking> placement = promotion.Commit();
    if (raw.joinable()) raw.join();
    REQUIRE(placement.ok());
    CHECK(placement->device_id() == device);
    CHECK(violated == "booking_slots_active_uq");
    CHECK(s.db.Count("SELECT count(*) FROM booking_slots WHERE unit = " + std::to_string(unit) +
                     " AND released_at IS NULL") ==
          1);
  }
}

TEST_CASE("writers hammering reserved units during promotions never win one") {
  Site s;
  auto pool = s.db.MakePool(1);
  OccupancyLogic logic(*pool);
  constexpr int kUnits = 12;
  const v1::Booking reservation = Reserve(logic, s, v1::SIDE_FRONT, false, 1, kUnits);
  std::vector<std::string> devices;
  for (int i = 0; i < kUnits; ++i) devices.push_back(s.Device(1, "half"));

  std::atomic<bool> done{false};
  std::atomic<int> path_attempts{0};
  std::atomic<int> raw_attempts{0};
  std::atomic<int> wins{0};
  std::atomic<int> unexpected{0};
  Barrier barrier(3);
  std::thread promoter([&] {
    barrier.ArriveAndWait();
    for (int i = 0; i < kUnits; ++i) {
      v1::Booking out;
      absl::Status st = logic.PlaceDevice(
          s.op, PlaceInto(s.rack, devices[i], v1::SIDE_FRONT, i + 1, reservation.id()), &out);
      if (!st.ok()) ++unexpected;
    }
    done = true;
  });
  // Through the write path: blockings of each unit in turn.
  std::thread path_writer([&] {
    auto p = s.db.MakePool(1);
    OccupancyLogic writer(*p);
    barrier.ArriveAndWait();
    for (int i = 0; !done || i < kUnits; ++i) {
      const v1::BlockUnitsRequest block = BlockFront(s, 1 + i % kUnits);
      v1::Booking b;
      absl::Status st = writer.BlockUnits(s.op, block, &b);
      ++path_attempts;
      if (st.ok()) {
        ++wins;
      } else if (ReasonOf(st) != v1::UNIT_OCCUPIED) {
        ++unexpected;
      }
    }
  });
  // Around it: the insert function straight against the index, every unit at once.
  std::thread raw_writer([&] {
    auto conn = s.db.Connect();
    barrier.ArriveAndWait();
    for (int i = 0; !done || i < kUnits; ++i) {
      pqxx::work tx(*conn);
      pqxx::row r = tx.exec_params1(
          "SELECT violated_constraint FROM dcl_insert_booking($1::uuid, $2::uuid, $3::uuid, "
          "'blocking', NULL, true, false, $4::integer, $4::integer, 0, 'rival', '', "
          "ARRAY['front'], ARRAY[$4::integer])",
          s.org, s.site, s.rack, 1 + i % kUnits);
      ++raw_attempts;
      if (r[0].is_null()) {
        ++wins;
      } else if (r[0].as<std::string>() != "booking_slots_active_uq") {
        ++unexpected;
      }
      tx.commit();
    }
  });
  promoter.join();
  path_writer.join();
  raw_writer.join();
  CHECK(unexpected == 0);
  CHECK(wins == 0);
  CHECK(path_attempts >= kUnits);
  CHECK(raw_attempts >= kUnits);
  WARN("attempts lost during the promotions: " << path_attempts << " through the write path, "
                                               << raw_attempts << " at the index");
  CHECK(s.db.Count("SELECT count(*) FROM booking_slots WHERE released_at IS NOT NULL") == 0);
  CHECK(s.db.Count("SELECT count(*) FROM booking_slots") == kUnits);
  CHECK(s.db.Count("SELECT count(DISTINCT booking_id) FROM booking_slots") == kUnits);
  CHECK(s.db.Count("SELECT count(*) FROM bookings WHERE kind = 'placement'") == kUnits);
}

}  // namespace
}  // namespace dcl::occupancy
