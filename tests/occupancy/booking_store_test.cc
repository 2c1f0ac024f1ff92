// The booking write path against a real PostgreSQL: races between real connections decided by
// the slot index and the device-placement index, constraint names mapped to readable
// rejections, CHECKs, atomic release, lapsed reservations released at the point of use, and the
// promotion of a move hold.
#include "services/occupancy/booking_store.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_split.h"
#include "services/common/db.h"
#include "services/common/status.h"
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

v1::PlaceDeviceRequest Place(const std::string& rack, const std::string& device, v1::Side side,
                             int unit) {
  v1::PlaceDeviceRequest req;
  req.set_rack_id(rack);
  req.set_device_id(device);
  req.set_side(side);
  req.set_unit(unit);
  return req;
}

// One store call in its own transaction, as a service composes it.
absl::StatusOr<v1::Booking> CreateAlone(DbPool& pool, const Principal& p, const BookingSpec& spec) {
  return pool.Transact([&](pqxx::work& tx) { return CreateBooking(tx, p, spec); });
}
absl::StatusOr<v1::Booking> PromoteAlone(DbPool& pool, const Principal& p,
                                         const std::string& booking_id) {
  return pool.Transact([&](pqxx::work& tx) { return PromoteMoveHold(tx, p, booking_id); });
}

v1::ErrorDetail DetailOf(const absl::Status& status) {
  auto detail = GetErrorDetail(status);
  REQUIRE(detail.has_value());
  return *detail;
}

// Waits until some backend of this database waits on a lock (the other transaction's insert).
bool WaitForLockWaiter(const TestDatabase& db) {
  for (int i = 0; i < 200; ++i) {
    if (db.Count("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                 "AND wait_event_type = 'Lock'") > 0) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  return false;
}

TEST_CASE("two technicians placing at front U9 at once: one booking, one UNIT_OCCUPIED naming U9") {
  Site s;
  int slot_index_detections = 0;
  for (int round = 0; round < 15; ++round) {
    const int unit = 9 + round;  // a fresh unit each round, same race
    const std::string d1 = s.Device();
    const std::string d2 = s.Device();
    auto pool1 = s.db.MakePool(1);  // two real connections
    auto pool2 = s.db.MakePool(1);
    OccupancyLogic logic1(*pool1);
    OccupancyLogic logic2(*pool2);
    Barrier barrier(2);
    absl::Status st1, st2;
    v1::Booking b1, b2;
    std::thread t1([&] {
      barrier.ArriveAndWait();
      st1 = logic1.PlaceDevice(s.op, Place(s.rack, d1, v1::SIDE_FRONT, unit), &b1);
    });
    std::thread t2([&] {
      barrier.ArriveAndWait();
      st2 = logic2.PlaceDevice(s.op, Place(s.rack, d2, v1::SIDE_FRONT, unit), &b2);
    });
    t1.join();
    t2.join();
    REQUIRE(st1.ok() != st2.ok());
    const absl::Status& lost = st1.ok() ? st2 : st1;
    CHECK(lost.code() == absl::StatusCode::kFailedPrecondition);
    const v1::ErrorDetail detail = DetailOf(lost);
    CHECK(detail.reason() == v1::UNIT_OCCUPIED);
    REQUIRE(detail.colliding_slots_size() == 1);
    CHECK(detail.colliding_slots(0).side() == v1::SIDE_FRONT);
    CHECK(detail.colliding_slots(0).unit() == unit);
    CHECK(detail.message() == "front U" + std::to_string(unit) + " is taken");
    if (detail.metadata().at("detected_by") == "slot_index") ++slot_index_detections;
    // Exactly one header and one slot for this unit: the loser left no orphan header.
    CHECK(s.db.Count("SELECT count(*) FROM booking_slots WHERE unit = " + std::to_string(unit)) ==
          1);
    CHECK(s.Bookings() == round + 1);
  }
  WARN("rounds decided by the slot index (both passed the planner): " << slot_index_detections);
  CHECK(s.db.Count("SELECT count(*) FROM bookings b WHERE NOT EXISTS "
                   "(SELECT 1 FROM booking_slots x WHERE x.booking_id = b.id)") == 0);
}

TEST_CASE("a placement that passed the planner loses to the slot index and still reads U9") {
  // Deterministic interleaving: the first booking is written but not committed, so the second
  // PlaceDevice sees U9 free in its plan, then waits on the index and loses when the first
  // commits. This is the path a real race takes.
  Site s;
  const std::string d1 = s.Device();
  const std::string d2 = s.Device();
  auto first_conn = s.db.Connect();
  pqxx::work first(*first_conn);
  const BookingSpec spec =
      DeviceFootprintSpec(v1::BOOKING_PLACEMENT, s.rack, d1, v1::SIDE_FRONT, 9, "");
  REQUIRE(CreateBooking(first, s.op, spec).ok());

  auto pool = s.db.MakePool(1);
  OccupancyLogic logic(*pool);
  absl::Status second;
  v1::Booking booking;
  std::thread t(
      [&] { second = logic.PlaceDevice(s.op, Place(s.rack, d2, v1::SIDE_FRONT, 9), &booking); });
  REQUIRE(WaitForLockWaiter(s.db));
  first.commit();
  t.join();
  REQUIRE_FALSE(second.ok());
  const v1::ErrorDetail detail = DetailOf(second);
  CHECK(detail.reason() == v1::UNIT_OCCUPIED);
  CHECK(detail.metadata().at("detected_by") == "slot_index");
  REQUIRE(detail.colliding_slots_size() == 1);
  CHECK(detail.colliding_slots(0).unit() == 9);
  CHECK(s.Bookings() == 1);
  CHECK(s.ActiveSlots() == 1);
}

TEST_CASE("a direct INSERT that bypasses the write path gets the bare violation naming the index") {
  Site s;
  auto pool = s.db.MakePool(1);
  OccupancyLogic logic(*pool);
  v1::Booking booking;
  REQUIRE(logic.PlaceDevice(s.op, Place(s.rack, s.Device(), v1::SIDE_FRONT, 9), &booking).ok());
  const std::string header = s.db.Scalar(
      "INSERT INTO bookings (org_id, site_id, rack_id, kind, front, rear, first_unit, last_unit, "
      "created_by) VALUES ('" +
      s.org + "', '" + s.site + "', '" + s.rack +
      "', 'blocking', true, false, 9, 9, 'test') RETURNING id");
  std::string message;
  try {
    s.db.Exec("INSERT INTO booking_slots (booking_id, rack_id, side, unit) VALUES ('" + header +
              "', '" + s.rack + "', 'front', 9)");
  } catch (const pqxx::unique_violation& e) {
    message = e.what();
  }
  CHECK_THAT(message, Catch::Contains("booking_slots_active_uq"));
}

// dcl_insert_booking (migration 0026) called as the services call it, through their role.
struct InsertAnswer {
  std::string returned;  // "" for NULL
  std::string violated_constraint;
  std::string violated_sqlstate;
};
InsertAnswer InsertThroughFunction(pqxx::transaction_base& tx, const Site& s, const char* kind,
                                   int first_unit, int last_unit, int64_t ttl_seconds) {
  std::string sides = "{";
  std::string units = "{";
  for (int unit = first_unit; unit <= last_unit; ++unit) {
    if (unit > first_unit) {
      sides += ',';
      units += ',';
    }
    sides += "front";
    units += std::to_string(unit);
  }
  const pqxx::row r = tx.exec_params1(
      "SELECT returned, violated_constraint, violated_sqlstate FROM dcl_insert_booking("
      "$1::uuid, $2::uuid, $3::uuid, $4, NULL, true, false, $5, $6, $7, 'test', '', "
      "$8::text[], $9::integer[])",
      s.org, s.site, s.rack, kind, first_unit, last_unit, ttl_seconds, sides + "}", units + "}");
  auto text = [](const pqxx::field& f) { return f.is_null() ? std::string() : f.c_str(); };
  return {text(r[0]), text(r[1]), text(r[2])};
}

TEST_CASE("the insert function names booking_slots_active_uq and keeps no header of the loser") {
  Site s;
  pqxx::connection conn(s.db.service_url());
  pqxx::work tx(conn);
  const InsertAnswer first = InsertThroughFunction(tx, s, "blocking", 9, 10, 0);
  REQUIRE(first.violated_sqlstate.empty());
  REQUIRE_FALSE(first.returned.empty());
  // Front U10 is the first booking's: the header goes in, its slots collide, and both are undone.
  const InsertAnswer second = InsertThroughFunction(tx, s, "blocking", 10, 11, 0);
  CHECK(second.returned.empty());
  CHECK(second.violated_constraint == "booking_slots_active_uq");
  CHECK(second.violated_sqlstate == "23505");
  // The caller's transaction is still usable and holds only the first booking.
  CHECK(tx.exec1("SELECT count(*) FROM bookings")[0].as<int64_t>() == 1);
  CHECK(tx.exec1("SELECT count(*) FROM booking_slots")[0].as<int64_t>() == 2);
  // The answer: id|rack|device|created_us|expires_us, read back from the rows themselves.
  const pqxx::row row = tx.exec1(
      "SELECT id::text || '|' || rack_id::text || '||' || "
      "(extract(epoch FROM created_at) * 1000000)::bigint || '|' FROM bookings");
  CHECK(first.returned == row[0].as<std::string>());
  const InsertAnswer reserved = InsertThroughFunction(tx, s, "reservation", 20, 20, 3600);
  REQUIRE(reserved.violated_sqlstate.empty());
  const std::vector<std::string> fields = absl::StrSplit(reserved.returned, '|');
  REQUIRE(fields.size() == 5);
  // now() is the transaction's clock: the expiry is exactly the TTL after the creation.
  CHECK(std::stoll(fields[4]) - std::stoll(fields[3]) == 3600LL * 1000000);
  tx.commit();
  CHECK(s.Bookings() == 2);
  CHECK(s.ActiveSlots() == 3);
}

TEST_CASE("a create that lost to the slot index reads the same, its insert prepared or not") {
  const bool prepared_statement = GENERATE(false, true);
  Site s;
  const std::string d1 = s.Device();
  const std::string d2 = s.Device();
  auto first_conn = s.db.Connect();
  pqxx::work first(*first_conn);
  const absl::StatusOr<v1::Booking> won = [&] {
    PreparedStatementScope prepared(prepared_statement);
    return CreateBooking(
        first, s.op, DeviceFootprintSpec(v1::BOOKING_PLACEMENT, s.rack, d1, v1::SIDE_FRONT, 9, ""));
  }();
  REQUIRE(won.ok());
  // The loser's pool prepares its statements, or not, as a pool behind a transaction pooler.
  DbOptions options;
  options.url = s.db.service_url();
  options.pool_size = 1;
  options.transaction_pooler = !prepared_statement;
  auto pool = std::make_unique<DbPool>(options);
  absl::StatusOr<v1::Booking> second = absl::UnknownError("not run");
  std::thread t([&] {
    second = pool->Transact([&](pqxx::work& tx) {
      return CreateBooking(
          tx, s.op, DeviceFootprintSpec(v1::BOOKING_PLACEMENT, s.rack, d2, v1::SIDE_FRONT, 9, ""));
    });
  });
  REQUIRE(WaitForLockWaiter(s.db));
  first.commit();
  t.join();
  REQUIRE_FALSE(second.ok());
  const v1::ErrorDetail detail = DetailOf(second.status());
  CHECK(detail.reason() == v1::UNIT_OCCUPIED);
  CHECK(detail.metadata().at("detected_by") == "slot_index");
  CHECK(s.Bookings() == 1);
  CHECK(s.ActiveSlots() == 1);
  // The winner's answer, built from the function's text, is the booking as stored.
  const absl::StatusOr<v1::Booking> stored =
      pool->Transact([&](pqxx::work& tx) { return LoadBooking(tx, s.op, won->id()); });
  REQUIRE(stored.ok());
  CHECK(won->DebugString() == stored->DebugString());
}

TEST_CASE("the same device placed into two racks at once: one placement, DEVICE_ALREADY_PLACED") {
  Site s;
  testing::RackSpec r2;
  r2.name = "R2";
  const std::string rack2 = testing::CreateRack(s.db, s.org, s.site, r2);
  for (int round = 0; round < 5; ++round) {
    const std::string device = s.Device(2, "full");
    auto pool1 = s.db.MakePool(1);
    auto pool2 = s.db.MakePool(1);
    OccupancyLogic logic1(*pool1);
    OccupancyLogic logic2(*pool2);
    Barrier barrier(2);
    absl::Status st1, st2;
    v1::Booking b1, b2;
    const int unit = 1 + round * 2;
    std::thread t1([&] {
      barrier.ArriveAndWait();
      st1 = logic1.PlaceDevice(s.op, Place(s.rack, device, v1::SIDE_FRONT, unit), &b1);
    });
    std::thread t2([&] {
      barrier.ArriveAndWait();
      st2 = logic2.PlaceDevice(s.op, Place(rack2, device, v1::SIDE_FRONT, unit), &b2);
    });
    t1.join();
    t2.join();
    REQUIRE(st1.ok() != st2.ok());
    const absl::Status& lost = st1.ok() ? st2 : st1;
    const v1::Booking& won = st1.ok() ? b1 : b2;
    const v1::ErrorDetail detail = DetailOf(lost);
    CHECK(detail.reason() == v1::DEVICE_ALREADY_PLACED);
    // Our own organization: told where it is.
    CHECK(detail.metadata().at("rack_id") == won.rack_id());
    CHECK(detail.metadata().at("booking_id") == won.id());
    CHECK(s.db.Count("SELECT count(*) FROM bookings WHERE device_id = '" + device + "'") == 1);
  }
  CHECK(s.db.Count("SELECT count(*) FROM bookings b WHERE NOT EXISTS "
                   "(SELECT 1 FROM booking_slots x WHERE x.booking_id = b.id)") == 0);
}

TEST_CASE("another organization's device is not found, placed or not, like an unknown id") {
  Site a;
  const std::string org_b = testing::CreateOrg(a.db, "globex");
  const std::string site_b = testing::CreateSite(a.db, org_b, "AMS1");
  testing::RackSpec spec;
  spec.name = "B-R1";
  const std::string rack_b = testing::CreateRack(a.db, org_b, site_b, spec);
  const Principal op_b = testing::PrincipalFor(org_b, Role::kDcOperator);
  auto pool = a.db.MakePool(2);
  OccupancyLogic logic(*pool);

  const std::string placed = a.Device();
  const std::string third = a.Device();
  v1::Booking booking;
  REQUIRE(logic.PlaceDevice(a.op, Place(a.rack, placed, v1::SIDE_FRONT, 9), &booking).ok());

  SECTION("the placed device: NOT_FOUND before the device index could speak") {
    absl::Status st = logic.PlaceDevice(op_b, Place(rack_b, placed, v1::SIDE_FRONT, 9), &booking);
    REQUIRE_FALSE(st.ok());
    CHECK(st.code() == absl::StatusCode::kNotFound);
    const v1::ErrorDetail detail = DetailOf(st);
    CHECK(detail.reason() == v1::NOT_FOUND);
    CHECK(detail.metadata().count("rack_id") == 0);
    CHECK_THAT(detail.message(), !Catch::Contains("R1"));
    CHECK(detail.message() == "device " + placed + " not found");
  }
  SECTION("an unplaced device of A: the ownership check refuses it as not found") {
    absl::Status st = logic.PlaceDevice(op_b, Place(rack_b, third, v1::SIDE_FRONT, 9), &booking);
    REQUIRE_FALSE(st.ok());
    CHECK(st.code() == absl::StatusCode::kNotFound);
    CHECK(DetailOf(st).reason() == v1::NOT_FOUND);
  }
  CHECK(a.db.Count("SELECT count(*) FROM bookings WHERE org_id = '" + org_b + "'") == 0);
  CHECK(a.db.Count("SELECT count(*) FROM booking_slots WHERE rack_id = '" + rack_b + "'") == 0);
}

TEST_CASE("a device standing at another site is refused by the device foreign key") {
  Site s;
  const std::string other_site = testing::CreateSite(s.db, s.org, "AMS1");
  const std::string elsewhere = testing::CreateDevice(s.db, s.org, other_site);
  auto pool = s.db.MakePool(1);
  OccupancyLogic logic(*pool);
  v1::Booking booking;
  absl::Status st = logic.PlaceDevice(s.op, Place(s.rack, elsewhere, v1::SIDE_FRONT, 9), &booking);
  REQUIRE_FALSE(st.ok());
  CHECK(st.code() == absl::StatusCode::kFailedPrecondition);
  CHECK(DetailOf(st).reason() == v1::WRONG_STATE);
  CHECK(std::string(st.message()) ==
        "device " + elsewhere + " is registered at another site than the rack");
  CHECK(s.Bookings() == 0);
  CHECK(s.ActiveSlots() == 0);
}

TEST_CASE("a placement with an expiry is refused by the CHECK, through the path and directly") {
  Site s;
  auto pool = s.db.MakePool(1);
  BookingSpec spec =
      DeviceFootprintSpec(v1::BOOKING_PLACEMENT, s.rack, s.Device(), v1::SIDE_FRONT, 3, "");
  spec.ttl_seconds = 3600;
  absl::StatusOr<v1::Booking> booking = CreateAlone(*pool, s.op, spec);
  REQUIRE_FALSE(booking.ok());
  CHECK(booking.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(DetailOf(booking.status()).metadata().at("field") == "ttl_seconds");
  CHECK(s.Bookings() == 0);

  std::string message;
  try {
    s.db.Exec(
        "INSERT INTO bookings (org_id, site_id, rack_id, kind, device_id, front, rear, "
        "first_unit, last_unit, expires_at, created_by) VALUES ('" +
        s.org + "', '" + s.site + "', '" + s.rack + "', 'placement', '" + spec.device_id +
        "', true, false, 3, 3, now() + interval '1 hour', 'test')");
  } catch (const pqxx::check_violation& e) {
    message = e.what();
  }
  CHECK_THAT(message, Catch::Contains("bookings_placement_never_expires"));
}

TEST_CASE("a placement without a device is refused by the CHECK and by the path's validation") {
  Site s;
  std::string message;
  try {
    s.db.Exec(
        "INSERT INTO bookings (org_id, site_id, rack_id, kind, front, rear, first_unit, "
        "last_unit, created_by) VALUES ('" +
        s.org + "', '" + s.site + "', '" + s.rack + "', 'placement', true, false, 3, 3, 'test')");
  } catch (const pqxx::check_violation& e) {
    message = e.what();
  }
  CHECK_THAT(message, Catch::Contains("bookings_placement_needs_device"));

  auto pool = s.db.MakePool(1);
  OccupancyLogic logic(*pool);
  v1::Booking booking;
  absl::Status st = logic.PlaceDevice(s.op, Place(s.rack, "", v1::SIDE_FRONT, 3), &booking);
  CHECK(st.code() == absl::StatusCode::kInvalidArgument);
  CHECK(DetailOf(st).metadata().at("field") == "device_id");
  CHECK(s.Bookings() == 0);
}

TEST_CASE("release frees exactly its units, header and slots together") {
  Site s;
  auto pool = s.db.MakePool(2);
  OccupancyLogic logic(*pool);
  v1::Booking big, neighbour;
  REQUIRE(
      logic.PlaceDevice(s.op, Place(s.rack, s.Device(2, "full"), v1::SIDE_FRONT, 9), &big).ok());
  REQUIRE(big.slots_size() == 4);
  REQUIRE(
      logic.PlaceDevice(s.op, Place(s.rack, s.Device(1, "half"), v1::SIDE_FRONT, 11), &neighbour)
          .ok());
  REQUIRE(s.ActiveSlots() == 5);

  v1::ReleaseBookingRequest release;
  release.set_booking_id(big.id());
  release.set_reason("decommissioned");
  v1::Booking released;
  REQUIRE(logic.ReleaseBooking(s.op, release, &released).ok());
  CHECK(released.has_released_at());
  CHECK(released.released_by() == s.op.Actor());
  CHECK(released.slots_size() == 4);
  // Exactly its four slots, at the same instant as its header; the neighbour untouched.
  CHECK(s.ActiveSlots() == 1);
  CHECK(s.db.Count("SELECT count(*) FROM booking_slots WHERE booking_id = '" + big.id() +
                   "' AND released_at = (SELECT released_at FROM bookings WHERE id = '" + big.id() +
                   "')") == 4);
  CHECK(s.db.Count("SELECT count(*) FROM booking_slots WHERE booking_id = '" + neighbour.id() +
                   "' AND released_at IS NULL") == 1);
  CHECK(s.db.Scalar("SELECT release_reason FROM bookings WHERE id = '" + big.id() + "'") ==
        "decommissioned");
  // The units are free again, and only those.
  v1::Booking again;
  CHECK(logic.PlaceDevice(s.op, Place(s.rack, s.Device(2, "full"), v1::SIDE_REAR, 9), &again).ok());
  // Releasing twice is refused, and changes nothing.
  absl::Status twice = logic.ReleaseBooking(s.op, release, &released);
  CHECK(DetailOf(twice).reason() == v1::WRONG_STATE);
}

TEST_CASE("a release answers the booking exactly as it reads afterwards") {
  Site s;
  auto pool = s.db.MakePool(1);
  const BookingSpec spec = UnitRangeSpec(v1::BOOKING_RESERVATION, s.rack, v1::SIDE_UNSPECIFIED,
                                         /*both_sides=*/true, 5, 7, "for the fabric", 3600);
  const absl::StatusOr<v1::Booking> created = CreateAlone(*pool, s.op, spec);
  REQUIRE(created.ok());
  REQUIRE(created->slots_size() == 6);
  absl::StatusOr<v1::Booking> released = pool->Transact([&](pqxx::work& tx) {
    return ReleaseBooking(tx, s.op, created->id(), v1::BOOKING_RESERVATION, "fabric cancelled");
  });
  REQUIRE(released.ok());
  const absl::StatusOr<v1::Booking> stored =
      pool->Transact([&](pqxx::work& tx) { return LoadBooking(tx, s.op, created->id()); });
  REQUIRE(stored.ok());
  CHECK(released->DebugString() == stored->DebugString());
  CHECK(released->has_released_at());
  CHECK(released->has_expires_at());
  CHECK(released->released_by() == s.op.Actor());
  CHECK(released->slots(0).side() == v1::SIDE_FRONT);
  CHECK(released->slots(0).unit() == 5);
  CHECK(released->slots(5).side() == v1::SIDE_REAR);
  CHECK(released->slots(5).unit() == 7);
  CHECK(s.ActiveSlots() == 0);
  // Released already: the state is told, and nothing changes.
  released = pool->Transact([&](pqxx::work& tx) {
    return ReleaseBooking(tx, s.op, created->id(), v1::BOOKING_RESERVATION, "again");
  });
  REQUIRE_FALSE(released.ok());
  CHECK(DetailOf(released.status()).reason() == v1::WRONG_STATE);
}

TEST_CASE("a release that fails halfway leaves header and slots both active") {
  // Header and slots are one statement: if the transaction does not commit, neither changed.
  Site s;
  auto pool = s.db.MakePool(1);
  OccupancyLogic logic(*pool);
  v1::Booking placed;
  REQUIRE(
      logic.PlaceDevice(s.op, Place(s.rack, s.Device(2, "full"), v1::SIDE_FRONT, 9), &placed).ok());
  absl::Status st = pool->Transact([&](pqxx::work& tx) -> absl::Status {
    absl::StatusOr<v1::Booking> r =
        ReleaseBooking(tx, s.op, placed.id(), v1::BOOKING_PLACEMENT, "oops");
    REQUIRE(r.ok());
    return absl::AbortedError("caller gave up");  // rolls back
  });
  CHECK(st.code() == absl::StatusCode::kAborted);
  CHECK(s.ActiveSlots() == 4);
  CHECK(s.db.Count("SELECT count(*) FROM bookings WHERE released_at IS NULL") == 1);
}

TEST_CASE("a lapsed reservation does not block a placement and is released with a reason") {
  Site s;
  auto pool = s.db.MakePool(1);
  OccupancyLogic logic(*pool);
  v1::ReserveUnitsRequest reserve;
  reserve.set_rack_id(s.rack);
  reserve.set_side(v1::SIDE_FRONT);
  reserve.set_first_unit(9);
  reserve.set_last_unit(12);
  v1::Booking reservation;
  REQUIRE(logic.ReserveUnits(s.op, reserve, &reservation).ok());
  // Default expiry: 4 hours from now, by the database clock.
  const int64_t ttl = reservation.expires_at().seconds() - reservation.created_at().seconds();
  CHECK(ttl >= 4 * 3600 - 1);
  CHECK(ttl <= 4 * 3600 + 1);

  v1::Booking placed;
  absl::Status blocked =
      logic.PlaceDevice(s.op, Place(s.rack, s.Device(), v1::SIDE_FRONT, 10), &placed);
  CHECK(DetailOf(blocked).reason() == v1::UNIT_OCCUPIED);

  // The deadline passes; the sweeper has not run.
  s.db.Exec("UPDATE bookings SET expires_at = now() - interval '1 minute' WHERE id = '" +
            reservation.id() + "'");
  const std::string device = s.Device();
  REQUIRE(logic.PlaceDevice(s.op, Place(s.rack, device, v1::SIDE_FRONT, 10), &placed).ok());
  CHECK(placed.device_id() == device);
  CHECK(s.db.Scalar("SELECT release_reason FROM bookings WHERE id = '" + reservation.id() + "'") ==
        "expired; released at point of use by a colliding booking");
  CHECK(s.db.Count("SELECT count(*) FROM booking_slots WHERE booking_id = '" + reservation.id() +
                   "' AND released_at IS NULL") == 0);
  CHECK(s.ActiveSlots() == 1);
}

TEST_CASE(
    "a lapsed reservation next to a live booking: only the live one is named, nothing freed") {
  Site s;
  auto pool = s.db.MakePool(1);
  OccupancyLogic logic(*pool);
  v1::ReserveUnitsRequest reserve;
  reserve.set_rack_id(s.rack);
  reserve.set_side(v1::SIDE_FRONT);
  reserve.set_first_unit(9);
  reserve.set_last_unit(9);
  v1::Booking lapsed;
  REQUIRE(logic.ReserveUnits(s.op, reserve, &lapsed).ok());
  s.db.Exec("UPDATE bookings SET expires_at = now() - interval '1 second' WHERE id = '" +
            lapsed.id() + "'");
  v1::BlockUnitsRequest block;
  block.set_rack_id(s.rack);
  block.set_side(v1::SIDE_FRONT);
  block.set_first_unit(10);
  block.set_last_unit(10);
  v1::Booking blocked;
  REQUIRE(logic.BlockUnits(s.op, block, &blocked).ok());

  v1::Booking placed;
  absl::Status st =
      logic.PlaceDevice(s.op, Place(s.rack, s.Device(2, "half"), v1::SIDE_FRONT, 9), &placed);
  const v1::ErrorDetail detail = DetailOf(st);
  CHECK(detail.reason() == v1::UNIT_OCCUPIED);
  REQUIRE(detail.colliding_slots_size() == 1);
  CHECK(detail.colliding_slots(0).unit() == 10);
  // The refusal rolled everything back: the lapsed reservation is still there for the sweeper.
  CHECK(s.db.Count("SELECT count(*) FROM bookings WHERE released_at IS NULL") == 2);
  CHECK(s.ActiveSlots() == 2);
}

TEST_CASE("a move hold is promoted in place: same booking id, same slots, no expiry") {
  Site s;
  testing::RackSpec r2;
  r2.name = "R2";
  const std::string dest = testing::CreateRack(s.db, s.org, s.site, r2);
  auto pool = s.db.MakePool(1);
  const std::string device = s.Device(2, "full");
  const BookingSpec placement =
      DeviceFootprintSpec(v1::BOOKING_PLACEMENT, s.rack, device, v1::SIDE_FRONT, 5, "");
  absl::StatusOr<v1::Booking> source = CreateAlone(*pool, s.op, placement);
  REQUIRE(source.ok());
  BookingSpec hold = placement;
  hold.rack_id = dest;
  hold.kind = v1::BOOKING_MOVE_HOLD;
  hold.first_unit = 20;
  hold.ttl_seconds = 3600;
  absl::StatusOr<v1::Booking> held = CreateAlone(*pool, s.op, hold);
  REQUIRE(held.ok());
  CHECK(held->slots_size() == 4);
  CHECK(held->has_expires_at());

  // While the device is still placed at the source, the device index refuses the promotion.
  absl::StatusOr<v1::Booking> early = PromoteAlone(*pool, s.op, held->id());
  REQUIRE_FALSE(early.ok());
  CHECK(DetailOf(early.status()).reason() == v1::DEVICE_ALREADY_PLACED);

  // Release the source and promote the hold in one transaction, as the move service does.
  absl::StatusOr<v1::Booking> promoted =
      pool->Transact([&](pqxx::work& tx) -> absl::StatusOr<v1::Booking> {
        absl::StatusOr<v1::Booking> r =
            ReleaseBooking(tx, s.op, source->id(), v1::BOOKING_PLACEMENT, "moved");
        if (!r.ok()) return r.status();
        return PromoteMoveHold(tx, s.op, held->id());
      });
  REQUIRE(promoted.ok());
  CHECK(promoted->id() == held->id());
  CHECK(promoted->kind() == v1::BOOKING_PLACEMENT);
  CHECK_FALSE(promoted->has_expires_at());
  CHECK(promoted->slots_size() == 4);
  CHECK(s.db.Count("SELECT count(*) FROM booking_slots WHERE booking_id = '" + held->id() +
                   "' AND released_at IS NULL") == 4);
  absl::StatusOr<v1::Booking> again = PromoteAlone(*pool, s.op, held->id());
  CHECK(DetailOf(again.status()).reason() == v1::WRONG_STATE);
  CHECK(s.db.Count("SELECT count(*) FROM bookings WHERE released_at IS NULL") == 1);
}

TEST_CASE("the occupancy service refuses to release a move hold: the move owns it") {
  Site s;
  auto pool = s.db.MakePool(1);
  const BookingSpec hold =
      DeviceFootprintSpec(v1::BOOKING_MOVE_HOLD, s.rack, s.Device(), v1::SIDE_FRONT, 4, "");
  absl::StatusOr<v1::Booking> held = CreateAlone(*pool, s.op, hold);
  REQUIRE(held.ok());
  OccupancyLogic logic(*pool);
  v1::ReleaseBookingRequest release;
  release.set_booking_id(held->id());
  v1::Booking out;
  absl::Status st = logic.ReleaseBooking(s.op, release, &out);
  CHECK(DetailOf(st).reason() == v1::WRONG_STATE);
  CHECK(s.ActiveSlots() == 1);
}

}  // namespace
}  // namespace dcl::occupancy
