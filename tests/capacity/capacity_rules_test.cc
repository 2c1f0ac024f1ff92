// The capacity rules of schema/migrations/0038 against a real PostgreSQL, through the booking
// write path: the per-feed and N-1 arithmetic (dual and single PSU, three feeds, a three-phase
// rating), cooling, airflow, unknown figures refused, the refusals' names and figures, releases
// and promotions kept equal to a recomputation, a rack's configuration changed under its load,
// and writes that go around the write path.
#include <catch2/catch.hpp>
#include <pqxx/pqxx>
#include <string>

#include "absl/strings/str_cat.h"
#include "services/common/status.h"
#include "services/occupancy/booking_store.h"
#include "tests/capacity/capacity_world.h"

namespace dcl::testing {
namespace {

using occupancy::BookingSpec;
using occupancy::DeviceFootprintSpec;
using occupancy::UnitRangeSpec;

TEST_CASE("a rack without feeds, cooling budget and airflow books a device of unknown figures") {
  CapacityWorld w;
  const std::string rack = w.Rack();
  REQUIRE(w.Place(rack, w.Device(-1, -1, ""), 1).ok());
  CHECK(w.db.Count("SELECT count(*) FROM rack_budgets") == 0);
}

TEST_CASE("feed ratings are NetBox's available power: V x A (x sqrt 3) x max_utilization, down") {
  CapacityWorld w;
  const std::string rack = w.Rack();
  w.Feed(rack, "A", 230, 16);
  w.Feed(rack, "B", 400, 32, "three-phase");
  w.Feed(rack, "C", 230, 13, "single-phase", 100);
  auto rating = [&](const std::string& name) {
    return w.db.Count(absl::StrCat(
        "SELECT b.capacity FROM rack_budgets b JOIN power_feeds f ON b.key = f.id::text "
        "WHERE b.dimension = 'feed' AND f.name = '",
        name, "'"));
  };
  CHECK(rating("A") == 2944);   // 230 x 16 x 0.8
  CHECK(rating("B") == 17736);  // 400 x 32 x 1.732.. x 0.8 = 17736.2
  CHECK(rating("C") == 2990);
  // Every ordered pair (lost, remaining) has its N-1 row, at the remaining feed's rating.
  CHECK(w.db.Count("SELECT count(*) FROM rack_budgets WHERE dimension = 'feed_lost'") == 6);
  CHECK(w.LostUsed(rack, "A", "B") == 0);
}

TEST_CASE("a dual-PSU server on feeds A and B: half on each, all of it on B with A lost") {
  CapacityWorld w;
  const std::string rack = w.Rack();
  w.Feed(rack, "A", 230, 16);  // 2944 W each
  w.Feed(rack, "B", 230, 16);
  REQUIRE(w.Place(rack, w.Device(451, 2), 1).ok());
  CHECK(w.FeedUsed(rack, "A") == 226);  // shared evenly, rounded up
  CHECK(w.FeedUsed(rack, "B") == 226);
  CHECK(w.LostUsed(rack, "A", "B") == 451);
  CHECK(w.LostUsed(rack, "B", "A") == 451);
  // A device with more ports than feeds hangs on every feed, once each.
  REQUIRE(w.Place(rack, w.Device(400, 4), 2).ok());
  CHECK(w.FeedUsed(rack, "A") == 426);
  CHECK(w.LostUsed(rack, "A", "B") == 851);

  SECTION("N-1 binds before the ratings: the sixth 450 W server fits, the seventh is refused") {
    // 851 + 4 x 450 = 2651 with A lost; one more makes 3101 > 2944, while each feed carries
    // only 1551 in normal operation.
    for (int unit = 3; unit <= 6; ++unit) REQUIRE(w.Place(rack, w.Device(450, 2), unit).ok());
    const absl::Status refused = w.Place(rack, w.Device(450, 2), 7).status();
    REQUIRE(refused.code() == absl::StatusCode::kFailedPrecondition);
    CHECK(ReasonOf(refused) == v1::FEED_REDUNDANCY_LOST);
    CHECK(MetaOf(refused, "rack_name") == "R1");
    CHECK(MetaOf(refused, "dimension") == "feed_lost");
    const std::string lost = MetaOf(refused, "lost_feed");
    const std::string feed = MetaOf(refused, "feed");
    CHECK(((lost == "A" && feed == "B") || (lost == "B" && feed == "A")));
    CHECK(MetaOf(refused, "used_watts") == "3101");
    CHECK(MetaOf(refused, "capacity_watts") == "2944");
    CHECK(MetaOf(refused, "over_watts") == "157");
    CHECK(std::string(refused.message()) ==
          absl::StrCat("rack R1: with feed ", lost, " lost, feed ", feed,
                       " would carry 3101 W of its 2944 W (over by 157 W)"));
    CHECK(w.FeedUsed(rack, "A") == 1326);  // the refused booking left nothing behind
    CHECK(w.Drift() == 0);
  }
}

TEST_CASE("a single-PSU device loads one feed whole and is lost with it; dcl chooses the feed") {
  CapacityWorld w;
  const std::string rack = w.Rack();
  w.Feed(rack, "A", 230, 16);  // 2944 W each
  w.Feed(rack, "B", 230, 16);
  // Unnamed: the feed with the most headroom (N-1 counted), ties by name: A; recorded and
  // answered, so the technician knows where to plug it in.
  auto first = w.Place(rack, w.Device(300, 1), 1);
  REQUIRE(first.ok());
  REQUIRE(first->power_feeds_size() == 1);
  CHECK(first->power_feeds(0) == "A");
  // A now carries 300 W, so the next goes to B.
  auto second = w.Place(rack, w.Device(200, 1), 2);
  REQUIRE(second.ok());
  CHECK(second->power_feeds(0) == "B");
  // Named: taken as named, whatever the headroom.
  BookingSpec named = DeviceFootprintSpec(v1::BOOKING_PLACEMENT, rack, w.Device(100, 1),
                                          v1::SIDE_FRONT, 3, "named");
  named.feed_names = {"B"};
  auto pool = w.db.MakePool(1);
  auto third =
      pool->Transact([&](pqxx::work& tx) { return occupancy::CreateBooking(tx, w.op, named); });
  REQUIRE(third.ok());
  CHECK(third->power_feeds(0) == "B");
  REQUIRE(w.Place(rack, w.Device(400, 2), 4).ok());
  CHECK(w.FeedUsed(rack, "A") == 300 + 200);
  CHECK(w.FeedUsed(rack, "B") == 200 + 100 + 200);
  CHECK(w.LostUsed(rack, "A", "B") == 200 + 100 + 400);  // A's single PSU is lost with A
  CHECK(w.LostUsed(rack, "B", "A") == 300 + 400);        // B's singles are lost with B
  CHECK(w.Drift() == 0);
  // The answer reads back the same.
  auto loaded = pool->Transact(
      [&](pqxx::work& tx) { return occupancy::LoadBooking(tx, w.op, third->id()); });
  REQUIRE(loaded.ok());
  CHECK(loaded->power_feeds(0) == "B");
  // A feed the rack does not have names no feed: refused, nothing written.
  named.feed_names = {"Z"};
  named.first_unit = 5;
  named.last_unit = 5;
  named.device_id = w.Device(100, 1);
  const absl::Status unknown_feed =
      pool->Transact([&](pqxx::work& tx) { return occupancy::CreateBooking(tx, w.op, named); })
          .status();
  CHECK(ReasonOf(unknown_feed) == v1::FEEDS_UNNAMED);
  CHECK(MetaOf(unknown_feed, "feeds") == "2");
}

TEST_CASE("three feeds: a dual PSU on two of them, a triple PSU on all three") {
  CapacityWorld w;
  const std::string rack = w.Rack();
  const std::string a = w.Feed(rack, "A", 230, 16);
  const std::string b = w.Feed(rack, "B", 230, 16);
  w.Feed(rack, "C", 230, 16);
  const std::string dual = w.Device(600, 2);
  w.db.Exec(absl::StrCat(
      "INSERT INTO bookings (org_id, site_id, rack_id, kind, device_id, front, rear, first_unit, "
      "last_unit, created_by, feed_ids) SELECT org_id, site_id, '",
      rack,
      "', 'placement', id, "
      "true, false, 1, 1, 'test', ARRAY['",
      a, "'::uuid, '", b,
      "'::uuid] FROM devices "
      "WHERE id = '",
      dual, "'"));
  REQUIRE(w.Place(rack, w.Device(900, 3), 2).ok());
  CHECK(w.FeedUsed(rack, "A") == 600);
  CHECK(w.FeedUsed(rack, "C") == 300);
  CHECK(w.LostUsed(rack, "A", "B") == 600 + 450);  // the dual's whole draw, the triple's half
  CHECK(w.LostUsed(rack, "A", "C") == 450);        // the dual is not on C
  CHECK(w.LostUsed(rack, "C", "A") == 300 + 450);  // the dual keeps its share
  CHECK(w.Drift() == 0);
  // A dual PSU naming one feed only, or a feed of another rack, is refused.
  const std::string wrong = w.Device(100, 2);
  CHECK_THROWS_AS(
      w.db.Exec(absl::StrCat(
          "INSERT INTO bookings (org_id, site_id, rack_id, kind, device_id, front, rear, "
          "first_unit, last_unit, created_by, feed_ids) SELECT org_id, site_id, '",
          rack, "', 'placement', id, true, false, 3, 3, 'test', ARRAY['", a,
          "'::uuid] FROM devices "
          "WHERE id = '",
          wrong, "'")),
      pqxx::check_violation);
}

TEST_CASE("cooling: the devices' heat within the rack's budget, refused with the figures") {
  CapacityWorld w;
  const std::string rack = w.Rack(1000);
  REQUIRE(w.Place(rack, w.Device(450, 2), 1).ok());
  REQUIRE(w.Place(rack, w.Device(450, -1), 2).ok());  // no feeds: ports do not matter
  const absl::Status refused = w.Place(rack, w.Device(450, 2), 3).status();
  CHECK(ReasonOf(refused) == v1::COOLING_BUDGET_EXCEEDED);
  CHECK(std::string(refused.message()) ==
        "rack R1: heat 1350 W of its cooling budget 1000 W (over by 350 W)");
  CHECK(MetaOf(refused, "over_watts") == "350");
  CHECK(w.CoolingUsed(rack) == 900);
}

TEST_CASE("one feed over its rating is POWER_BUDGET_EXCEEDED naming the feed") {
  CapacityWorld w;
  const std::string rack = w.Rack();
  w.Feed(rack, "A", 230, 8);  // 1472 W, no N-1 with one feed
  for (int unit = 1; unit <= 3; ++unit) REQUIRE(w.Place(rack, w.Device(450, 2), unit).ok());
  const absl::Status refused = w.Place(rack, w.Device(450, 2), 4).status();
  CHECK(ReasonOf(refused) == v1::POWER_BUDGET_EXCEEDED);
  CHECK(MetaOf(refused, "feed") == "A");
  CHECK(std::string(refused.message()) ==
        "rack R1: feed A would carry 1800 W of its 1472 W (over by 328 W)");
}

TEST_CASE("unknown figures are refused where a budget needs them, naming the field to set") {
  CapacityWorld w;
  const std::string fed = w.Rack();
  w.Feed(fed, "A", 230, 16);
  const absl::Status no_power = w.Place(fed, w.Device(-1, 2), 1).status();
  CHECK(ReasonOf(no_power) == v1::POWER_UNKNOWN);
  CHECK(MetaOf(no_power, "missing") == "power_draw_watts");
  const absl::Status no_ports = w.Place(fed, w.Device(300, -1), 1).status();
  CHECK(ReasonOf(no_ports) == v1::POWER_PORTS_UNKNOWN);
  CHECK(MetaOf(no_ports, "missing") == "power_port_count");
  const std::string cooled = w.Rack(5000);
  CHECK(ReasonOf(w.Place(cooled, w.Device(-1, 2), 1).status()) == v1::POWER_UNKNOWN);
  const std::string ducted = w.Rack(0, "front-to-rear");
  const absl::Status no_airflow = w.Place(ducted, w.Device(-1, -1, ""), 1).status();
  CHECK(ReasonOf(no_airflow) == v1::AIRFLOW_UNKNOWN);
  CHECK(MetaOf(no_airflow, "missing") == "airflow");
  CHECK(ReasonOf(w.Place(ducted, w.Device(-1, -1, "mixed"), 1).status()) == v1::AIRFLOW_UNKNOWN);
  CHECK(w.db.Count("SELECT count(*) FROM bookings") == 0);
}

TEST_CASE("airflow: opposing refused; matching, side-to-rear and passive accepted") {
  CapacityWorld w;
  const std::string rack = w.Rack(0, "front-to-rear");
  const absl::Status opposed = w.Place(rack, w.Device(-1, -1, "rear-to-front"), 1).status();
  CHECK(ReasonOf(opposed) == v1::AIRFLOW_MISMATCH);
  CHECK(MetaOf(opposed, "device_airflow") == "rear-to-front");
  CHECK(MetaOf(opposed, "rack_airflow") == "front-to-rear");
  CHECK(ReasonOf(w.Place(rack, w.Device(-1, -1, "rear-to-side"), 1).status()) ==
        v1::AIRFLOW_MISMATCH);
  CHECK(w.Place(rack, w.Device(-1, -1, "front-to-rear"), 1).ok());
  CHECK(w.Place(rack, w.Device(-1, -1, "side-to-rear"), 2).ok());
  CHECK(w.Place(rack, w.Device(-1, -1, "passive"), 3).ok());
  // The rack turned around under a front-to-rear device: refused.
  CHECK_THROWS_AS(w.db.Exec(absl::StrCat(
                      "UPDATE racks SET airflow = 'rear-to-front' WHERE id = '", rack, "'")),
                  pqxx::check_violation);
}

TEST_CASE("release, move hold promotion and reservation promotion keep the rows recomputable") {
  CapacityWorld w;
  const std::string rack = w.Rack(10000);
  w.Feed(rack, "A", 230, 16);
  w.Feed(rack, "B", 230, 16);
  auto pool = w.db.MakePool(1);
  auto placed = w.Place(rack, w.Device(450, 2), 1);
  REQUIRE(placed.ok());
  CHECK(w.FeedUsed(rack, "A") == 225);

  REQUIRE(pool->Transact([&](pqxx::work& tx) {
                return occupancy::ReleaseBooking(tx, w.op, placed->id(), v1::BOOKING_PLACEMENT,
                                                 "gone");
              })
              .ok());
  CHECK(w.FeedUsed(rack, "A") == 0);
  CHECK(w.CoolingUsed(rack) == 0);
  CHECK(w.Drift() == 0);

  const std::string moving = w.Device(600, 2);
  auto hold = pool->Transact([&](pqxx::work& tx) {
    return occupancy::CreateBooking(
        tx, w.op,
        DeviceFootprintSpec(v1::BOOKING_MOVE_HOLD, rack, moving, v1::SIDE_FRONT, 5, ""));
  });
  REQUIRE(hold.ok());
  CHECK(w.LostUsed(rack, "A", "B") == 600);  // counted from the hold on
  // The device's figure changes meanwhile; the hold's figures stay what it was counted with.
  w.db.Exec(absl::StrCat("UPDATE devices SET power_draw_watts = 900 WHERE id = '", moving, "'"));
  REQUIRE(pool->Transact([&](pqxx::work& tx) {
                return occupancy::PromoteMoveHold(tx, w.op, hold->id());
              })
              .ok());
  CHECK(w.LostUsed(rack, "A", "B") == 600);
  CHECK(w.CoolingUsed(rack) == 600);
  CHECK(w.Drift() == 0);

  auto reservation = pool->Transact([&](pqxx::work& tx) {
    return occupancy::CreateBooking(
        tx, w.op,
        UnitRangeSpec(v1::BOOKING_RESERVATION, rack, v1::SIDE_FRONT, false, 10, 12, "", 3600));
  });
  REQUIRE(reservation.ok());
  CHECK(w.CoolingUsed(rack) == 600);  // a reservation without figures reserves units only
  const std::string arriving = w.Device(300, 2);
  REQUIRE(
      pool->Transact([&](pqxx::work& tx) {
            return occupancy::PromoteReservation(
                tx, w.op, reservation->id(),
                DeviceFootprintSpec(v1::BOOKING_PLACEMENT, rack, arriving, v1::SIDE_FRONT, 11, ""));
          })
          .ok());
  CHECK(w.CoolingUsed(rack) == 900);
  CHECK(w.FeedUsed(rack, "B") == 450);
  CHECK(w.Drift() == 0);

  SECTION("a promotion over a budget is refused with the budget's reason") {
    w.db.Exec(
        absl::StrCat("UPDATE racks SET cooling_budget_watts = 1000 WHERE id = '", rack, "'"));
    auto again = pool->Transact([&](pqxx::work& tx) {
      return occupancy::CreateBooking(
          tx, w.op,
          UnitRangeSpec(v1::BOOKING_RESERVATION, rack, v1::SIDE_FRONT, false, 20, 20, "", 3600));
    });
    REQUIRE(again.ok());
    const std::string hot = w.Device(200, 2);
    const absl::Status refused =
        pool->Transact([&](pqxx::work& tx) {
              return occupancy::PromoteReservation(
                  tx, w.op, again->id(),
                  DeviceFootprintSpec(v1::BOOKING_PLACEMENT, rack, hot, v1::SIDE_FRONT, 20, ""));
            })
            .status();
    CHECK(ReasonOf(refused) == v1::COOLING_BUDGET_EXCEEDED);
    CHECK(MetaOf(refused, "used_watts") == "1100");
  }
}

TEST_CASE("a rack's configuration changed under its load is refused by the same rules") {
  CapacityWorld w;
  const std::string rack = w.Rack(2000);
  w.Feed(rack, "A", 230, 16);
  w.Feed(rack, "B", 230, 16);
  for (int unit = 1; unit <= 4; ++unit) REQUIRE(w.Place(rack, w.Device(450, 2), unit).ok());
  auto service = w.db.service_url();
  auto as_service = [&](const std::string& sql) {
    pqxx::connection c(service);
    pqxx::work tx(c);
    tx.exec(sql);
    tx.commit();
  };
  // With A lost, B carries 1800 W: B's rating lowered to 1472 W is refused (as the services
  // would change it: the rebuild runs with the table owner's rights).
  CHECK_THROWS_AS(as_service(absl::StrCat("UPDATE power_feeds SET amperage = 8 WHERE rack_id = '",
                                          rack, "' AND name = 'B'")),
                  pqxx::check_violation);
  CHECK_THROWS_AS(as_service(absl::StrCat("UPDATE racks SET cooling_budget_watts = 1700 "
                                          "WHERE id = '",
                                          rack, "'")),
                  pqxx::check_violation);
  // A third feed would leave the dual PSUs without named feeds.
  CHECK_THROWS_AS(as_service(absl::StrCat("INSERT INTO power_feeds (rack_id, name, voltage, "
                                          "amperage) VALUES ('",
                                          rack, "', 'C', 230, 16)")),
                  pqxx::check_violation);
  // Raising a rating is accepted, and the rows are rebuilt with the load.
  as_service(absl::StrCat("UPDATE power_feeds SET amperage = 32 WHERE rack_id = '", rack, "'"));
  CHECK(w.LostUsed(rack, "A", "B") == 1800);
  CHECK(w.Drift() == 0);
  // Budgets configured on a rack that already carries devices count them from their devices.
  const std::string old_rack = w.Rack();
  REQUIRE(w.Place(old_rack, w.Device(450, 2), 1).ok());
  as_service(
      absl::StrCat("UPDATE racks SET cooling_budget_watts = 5000 WHERE id = '", old_rack, "'"));
  CHECK(w.CoolingUsed(old_rack) == 450);
  CHECK(w.Drift() == 0);
}

TEST_CASE("writes around the write path: an overcommitting insert is refused by the schema") {
  CapacityWorld w;
  const std::string rack = w.Rack();
  w.Feed(rack, "A", 230, 8);  // 1472 W
  for (int unit = 1; unit <= 3; ++unit) REQUIRE(w.Place(rack, w.Device(450, 2), unit).ok());
  const std::string fourth = w.Device(450, 2);
  pqxx::connection c(w.db.service_url());
  {
    pqxx::work tx(c);
    CHECK_THROWS_AS(
        tx.exec(absl::StrCat("INSERT INTO bookings (org_id, site_id, rack_id, kind, device_id, "
                             "front, rear, first_unit, last_unit, created_by, power_watts) "
                             "SELECT org_id, site_id, '",
                             rack,
                             "', 'placement', id, true, false, "
                             "4, 4, 'sneaky', 0 FROM devices WHERE id = '",
                             fourth, "'")),
        pqxx::check_violation);  // its power figure is the device's, not the writer's 0
  }
  {
    pqxx::work tx(c);
    CHECK_THROWS_AS(tx.exec(absl::StrCat("UPDATE rack_budgets SET capacity = 100000 "
                                         "WHERE rack_id = '",
                                         rack, "'")),
                    pqxx::insufficient_privilege);
  }
  CHECK(w.FeedUsed(rack, "A") == 1350);
  // The audit sees a row changed behind the triggers' back (only the owner can).
  CHECK(w.Drift() == 0);
  w.db.Exec(absl::StrCat("UPDATE rack_budgets SET used = used - 450 WHERE rack_id = '", rack,
                           "' AND dimension = 'feed'"));
  CHECK(w.Drift() == 1);
}

TEST_CASE("a rack's feeds changed in several statements are judged as a set at COMMIT, or at "
          "SET CONSTRAINTS IMMEDIATE, not at the states in between") {
  CapacityWorld w;
  const std::string rack = w.Rack(2000);
  w.Feed(rack, "A", 230, 16);
  w.Feed(rack, "B", 230, 16);
  REQUIRE(w.Place(rack, w.Device(450, 2), 1).ok());
  pqxx::connection c(w.db.service_url());
  // B replaced by C: with A, B and C the dual PSUs would have no named feeds, but only for the
  // moment between the two statements.
  {
    pqxx::work tx(c);
    tx.exec(absl::StrCat("INSERT INTO power_feeds (rack_id, name, voltage, amperage) VALUES ('",
                         rack, "', 'C', 230, 16)"));
    tx.exec(absl::StrCat("DELETE FROM power_feeds WHERE rack_id = '", rack, "' AND name = 'B'"));
    tx.commit();
  }
  CHECK(w.db.Scalar(absl::StrCat("SELECT string_agg(name, ',' ORDER BY name) FROM power_feeds "
                                 "WHERE rack_id = '",
                                 rack, "'")) == "A,C");
  CHECK(w.Drift() == 0);
  // A third feed that stays is refused, at the statement that asks for the judgement.
  pqxx::work tx(c);
  tx.exec(absl::StrCat("INSERT INTO power_feeds (rack_id, name, voltage, amperage) VALUES ('",
                       rack, "', 'D', 230, 16)"));
  CHECK_THROWS_AS(tx.exec("SET CONSTRAINTS power_feeds_rebuild IMMEDIATE"), pqxx::check_violation);
}

}  // namespace
}  // namespace dcl::testing
