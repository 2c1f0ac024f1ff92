// Switch ports by speed (schema/migrations/0040_capacity_ports.sql) against a real PostgreSQL,
// through the booking write path: the needs of a rack's devices per speed within what its
// switches offer, a speed it does not offer, unknown needs refused, releases and promotions, a
// configuration its standing devices exceed, and writes around the write path.
#include <catch2/catch.hpp>
#include <pqxx/pqxx>
#include <string>

#include "absl/strings/str_cat.h"
#include "services/common/status.h"
#include "services/occupancy/booking_store.h"
#include "tests/capacity/capacity_world.h"

namespace dcl::testing {
namespace {

using occupancy::DeviceFootprintSpec;
using occupancy::UnitRangeSpec;

// A device of 450 W and two power ports needing `ports_json` ("" = unknown).
std::string Server(CapacityWorld& w, const std::string& ports_json) {
  const std::string device = w.Device(450, 2);
  w.SetNetworkPorts(device, ports_json);
  return device;
}

TEST_CASE("a rack offering 4 x 10g takes two devices of 2 x 10g; the third PORTS_EXHAUSTED") {
  CapacityWorld w;
  const std::string rack = w.Rack();
  w.SetSwitchPorts(rack, R"({"10g": 4, "1g": 8})");
  // One row per speed of the vocabulary; the speeds not offered have capacity 0.
  CHECK(w.db.Count(absl::StrCat("SELECT count(*) FROM rack_budgets WHERE rack_id = '", rack,
                                "' AND dimension = 'ports'")) == 4);
  CHECK(w.PortsUsed(rack, "10g") == 0);
  auto first = w.Place(rack, Server(w, R"({"10g": 2, "1g": 1})"), 1);
  REQUIRE(first.ok());
  REQUIRE(w.Place(rack, Server(w, R"({"10g": 2})"), 2).ok());
  CHECK(w.PortsUsed(rack, "10g") == 4);
  CHECK(w.PortsUsed(rack, "1g") == 1);

  const std::string third = Server(w, R"({"10g": 2, "1g": 1})");
  const absl::Status refused = w.Place(rack, third, 3).status();
  REQUIRE(refused.code() == absl::StatusCode::kFailedPrecondition);
  CHECK(ReasonOf(refused) == v1::PORTS_EXHAUSTED);
  CHECK(MetaOf(refused, "dimension") == "ports");
  CHECK(MetaOf(refused, "speed") == "10g");
  CHECK(MetaOf(refused, "rack_name") == "R1");
  CHECK(MetaOf(refused, "rack_id") == rack);
  CHECK(MetaOf(refused, "device_id") == third);
  CHECK(MetaOf(refused, "used_ports") == "6");
  CHECK(MetaOf(refused, "offered_ports") == "4");
  CHECK(MetaOf(refused, "over_ports") == "2");
  CHECK(std::string(refused.message()) ==
        "rack R1: 6 10g ports needed of the 4 its switches offer (over by 2)");
  CHECK(w.PortsUsed(rack, "1g") == 1);  // the refused booking added nothing anywhere

  // A speed the rack does not offer is a row of capacity 0, not a speed left uncounted.
  const absl::Status no_25g = w.Place(rack, Server(w, R"({"25g": 1})"), 4).status();
  CHECK(ReasonOf(no_25g) == v1::PORTS_EXHAUSTED);
  CHECK(MetaOf(no_25g, "speed") == "25g");
  CHECK(MetaOf(no_25g, "offered_ports") == "0");
  // A device that needs no port fits a full rack.
  REQUIRE(w.Place(rack, Server(w, "{}"), 5).ok());

  // A release gives its ports back; the third fits then.
  auto pool = w.db.MakePool(1);
  REQUIRE(pool->Transact([&](pqxx::work& tx) {
                return occupancy::ReleaseBooking(tx, w.op, first->id(), v1::BOOKING_PLACEMENT,
                                                 "gone");
              })
              .ok());
  CHECK(w.PortsUsed(rack, "10g") == 2);
  CHECK(w.PortsUsed(rack, "1g") == 0);
  REQUIRE(w.Place(rack, third, 3).ok());
  CHECK(w.PortsUsed(rack, "10g") == 4);
  CHECK(w.Drift() == 0);
}

TEST_CASE("a device without its port figure is refused PORTS_UNKNOWN where the rack offers "
          "ports, placed where it offers none") {
  CapacityWorld w;
  const std::string rack = w.Rack();
  w.SetSwitchPorts(rack, R"({"25g": 8})");
  const std::string unknown = Server(w, "");
  const absl::Status refused = w.Place(rack, unknown, 1).status();
  CHECK(refused.code() == absl::StatusCode::kFailedPrecondition);
  CHECK(ReasonOf(refused) == v1::PORTS_UNKNOWN);
  CHECK(MetaOf(refused, "device_id") == unknown);
  CHECK(MetaOf(refused, "missing") == "network_ports");
  CHECK(std::string(refused.message()).find("set its network_ports") != std::string::npos);
  CHECK(w.PortsUsed(rack, "25g") == 0);

  const std::string other = w.Rack();
  REQUIRE(w.Place(other, unknown, 1).ok());
  CHECK(w.db.Count(absl::StrCat("SELECT count(*) FROM rack_budgets WHERE rack_id = '", other,
                                "'")) == 0);
  CHECK(w.Drift() == 0);
}

TEST_CASE("reservations hang on no ports; promotion counts the device's, a move hold from its "
          "start") {
  CapacityWorld w;
  const std::string rack = w.Rack();
  w.SetSwitchPorts(rack, R"({"10g": 4})");
  auto pool = w.db.MakePool(1);
  auto reservation = pool->Transact([&](pqxx::work& tx) {
    return occupancy::CreateBooking(
        tx, w.op,
        UnitRangeSpec(v1::BOOKING_RESERVATION, rack, v1::SIDE_FRONT, false, 10, 12, "", 3600));
  });
  REQUIRE(reservation.ok());
  CHECK(w.PortsUsed(rack, "10g") == 0);
  auto hold = pool->Transact([&](pqxx::work& tx) {
    return occupancy::CreateBooking(tx, w.op,
                                    DeviceFootprintSpec(v1::BOOKING_MOVE_HOLD, rack,
                                                        Server(w, R"({"10g": 3})"),
                                                        v1::SIDE_FRONT, 1, ""));
  });
  REQUIRE(hold.ok());
  CHECK(w.PortsUsed(rack, "10g") == 3);
  REQUIRE(pool->Transact([&](pqxx::work& tx) {
                return occupancy::PromoteMoveHold(tx, w.op, hold->id());
              })
              .ok());
  CHECK(w.PortsUsed(rack, "10g") == 3);
  const absl::Status refused =
      pool->Transact([&](pqxx::work& tx) {
            return occupancy::PromoteReservation(
                tx, w.op, reservation->id(),
                DeviceFootprintSpec(v1::BOOKING_PLACEMENT, rack, Server(w, R"({"10g": 2})"),
                                    v1::SIDE_FRONT, 11, ""));
          })
          .status();
  CHECK(ReasonOf(refused) == v1::PORTS_EXHAUSTED);
  CHECK(MetaOf(refused, "used_ports") == "5");
  REQUIRE(pool->Transact([&](pqxx::work& tx) {
                return occupancy::PromoteReservation(
                    tx, w.op, reservation->id(),
                    DeviceFootprintSpec(v1::BOOKING_PLACEMENT, rack, Server(w, R"({"10g": 1})"),
                                        v1::SIDE_FRONT, 11, ""));
              })
              .ok());
  CHECK(w.PortsUsed(rack, "10g") == 4);
  CHECK(w.Drift() == 0);
}

TEST_CASE("ports given to a rack are rebuilt from its devices; a configuration they exceed or "
          "that lacks their figure is refused") {
  CapacityWorld w;
  const std::string rack = w.Rack();
  for (int unit = 1; unit <= 3; ++unit) {
    REQUIRE(w.Place(rack, Server(w, R"({"10g": 2})"), unit).ok());
  }
  auto as_service = [&](const std::string& sql) {
    pqxx::connection c(w.db.service_url());
    pqxx::work tx(c);
    tx.exec(sql);
    tx.commit();
  };
  const std::string set_ports = "UPDATE racks SET switch_ports = '{\"10g\": ";
  CHECK_THROWS_WITH(as_service(absl::StrCat(set_ports, "5}' WHERE id = '", rack, "'")),
                    Catch::Contains("rack_ports_within_budget"));
  CHECK(w.PortsUsed(rack, "10g") == -1);
  as_service(absl::StrCat(set_ports, "6}' WHERE id = '", rack, "'"));
  CHECK(w.PortsUsed(rack, "10g") == 6);
  CHECK(w.Drift() == 0);
  CHECK_THROWS_WITH(as_service(absl::StrCat(set_ports, "4}' WHERE id = '", rack, "'")),
                    Catch::Contains("rack_ports_within_budget"));
  CHECK(w.PortsUsed(rack, "10g") == 6);

  // A device of unknown ports standing in the rack: ports cannot be given until it is set.
  const std::string other = w.Rack();
  const std::string unknown = Server(w, "");
  REQUIRE(w.Place(other, unknown, 1).ok());
  CHECK_THROWS_WITH(as_service(absl::StrCat(set_ports, "48}' WHERE id = '", other, "'")),
                    Catch::Contains("has no network port figure (devices.network_ports)"));
  w.SetNetworkPorts(unknown, R"({"10g": 2})");
  as_service(absl::StrCat(set_ports, "48}' WHERE id = '", other, "'"));
  CHECK(w.PortsUsed(other, "10g") == 2);

  // Unknown speeds and unbounded counts are refused by the column's own CHECK.
  CHECK_THROWS_WITH(
      as_service(absl::StrCat("UPDATE racks SET switch_ports = '{\"5g\": 1}' WHERE id = '", rack,
                              "'")),
      Catch::Contains("racks_switch_ports_valid"));
  CHECK_THROWS_WITH(
      as_service(absl::StrCat("UPDATE devices SET network_ports = '{\"10g\": 2000}' WHERE id = '",
                              unknown, "'")),
      Catch::Contains("devices_network_ports_valid"));
  CHECK_THROWS_WITH(
      as_service(absl::StrCat("UPDATE devices SET network_ports = '{\"10g\": 1.5}' WHERE id = '",
                              unknown, "'")),
      Catch::Contains("devices_network_ports_valid"));
  // Taking the ports away rebuilds without them.
  as_service(absl::StrCat("UPDATE racks SET switch_ports = NULL WHERE id = '", rack, "'"));
  CHECK(w.PortsUsed(rack, "10g") == -1);
  CHECK(w.Drift() == 0);
}

TEST_CASE("writes around the write path: an insert over the rack's ports and a lowered need are "
          "refused by the schema") {
  CapacityWorld w;
  const std::string rack = w.Rack();
  w.SetSwitchPorts(rack, R"({"10g": 4})");
  auto placed = w.Place(rack, Server(w, R"({"10g": 2})"), 1);
  REQUIRE(placed.ok());
  REQUIRE(w.Place(rack, Server(w, R"({"10g": 2})"), 2).ok());
  const std::string third = Server(w, R"({"10g": 1})");
  pqxx::connection c(w.db.service_url());
  {
    pqxx::work tx(c);
    CHECK_THROWS_WITH(
        tx.exec(absl::StrCat("INSERT INTO bookings (org_id, site_id, rack_id, kind, device_id, "
                             "front, rear, first_unit, last_unit, created_by, network_ports) "
                             "SELECT org_id, site_id, '",
                             rack,
                             "', 'placement', id, true, false, 3, 3, 'sneaky', '{}' "
                             "FROM devices WHERE id = '",
                             third, "'")),
        Catch::Contains("rack_ports_within_budget"));  // its needs are the device's, not '{}'
  }
  {
    pqxx::work tx(c);
    CHECK_THROWS_WITH(tx.exec(absl::StrCat("UPDATE bookings SET network_ports = '{}' WHERE id = '",
                                           placed->id(), "'")),
                      Catch::Contains("fixed when it is made"));
  }
  CHECK(w.PortsUsed(rack, "10g") == 4);
  CHECK(w.Drift() == 0);
  // The audit sees a row changed behind the triggers' back (only the owner can).
  w.db.Exec(absl::StrCat("UPDATE rack_budgets SET used = 3 WHERE rack_id = '", rack,
                         "' AND dimension = 'ports' AND key = '10g'"));
  CHECK(w.Drift() == 1);
}

}  // namespace
}  // namespace dcl::testing
