// A delivery with the real dclctl binary against the real occupancy service (in-process gRPC
// server on a test database): plan with a table and --svg, an item that fits nowhere (exit 4
// with the reason per rack), reserve in one step (--json parses back), then every server placed
// out of its own reservation with `delivery place`, until nothing is left reserved.
#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <google/protobuf/util/json_util.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "dcl/v1/occupancy.pb.h"
#include "services/common/rpc_gate.h"
#include "services/occupancy/occupancy_logic.h"
#include "services/occupancy/occupancy_service.h"
#include "tests/admin/token_file.h"
#include "tests/support/child_process.h"
#include "tests/support/fixtures.h"
#include "tests/support/grpc_harness.h"
#include "tests/support/test_db.h"

namespace dcl {
namespace {

struct World {
  World()
      : org(testing::CreateOrg(db, "acme")),
        site(testing::CreateSite(db, org, "FRA1")),
        rack_a(testing::CreateRack(db, org, site, [] {
          testing::RackSpec r;
          r.name = "R101";
          r.unit_count = 12;
          r.power_budget_watts = 2000;
          return r;
        }())),
        rack_b(testing::CreateRack(db, org, site, [] {
          testing::RackSpec r;
          r.name = "R102";
          r.unit_count = 6;
          return r;
        }())),
        pool(db.MakePool(4)),
        gate(*pool),
        logic(*pool),
        occupancy(gate, logic),
        server(pool.get(), {{"dcl.v1.OccupancyService", &occupancy}}),
        token(testing::CreateTokenFor(db, org, Role::kDcOperator)) {}
  std::string Device(int height, const std::string& depth, int power) {
    testing::DeviceSpec spec;
    spec.height_units = height;
    spec.depth_class = depth;
    spec.power_draw_watts = power;
    return testing::CreateDevice(db, org, site, spec);
  }

  testing::TestDatabase db;
  std::string org, site, rack_a, rack_b;
  std::unique_ptr<DbPool> pool;
  RpcGate gate;
  occupancy::OccupancyLogic logic;
  occupancy::OccupancyServiceImpl occupancy;
  testing::InProcessServer server;
  std::string token;
};

struct Result {
  int exit = -1;
  std::string out;
  std::string err;
};

Result Run(const World& w, std::vector<std::string> args) {
  args.push_back("--target=" + w.server.address());
  args.push_back("--dcl_token_file=" + testing::DclTokenFile(w.token));
  testing::ChildProcess dclctl(testing::RunfilesBinary("dclctl/dclctl"), args,
                               /*separate_stderr=*/true);
  const std::optional<int> exit = dclctl.WaitForExit(std::chrono::seconds(60));
  REQUIRE(exit.has_value());
  return Result{*exit, dclctl.Log(), dclctl.Stderr()};
}

TEST_CASE("a delivery from plan to last placement with dclctl") {
  World w;
  const std::vector<std::string> servers = {w.Device(2, "full", 600), w.Device(1, "half", 400),
                                            w.Device(1, "half", 400)};
  const std::string svg = std::string(std::getenv("TEST_TMPDIR")) + "/delivery.svg";

  Result plan = Run(w, {"delivery", "plan", "--site", w.site, servers[0], servers[1], servers[2],
                        "--svg", svg});
  INFO(plan.out << plan.err);
  REQUIRE(plan.exit == 0);
  CHECK(absl::StrContains(plan.out, "3 of 3 items planned"));
  CHECK(absl::StrContains(plan.out, "POWER W"));
  CHECK(absl::StrContains(plan.out, "wrote 1 rack elevations to"));
  std::ifstream in(svg);
  std::stringstream picture;
  picture << in.rdbuf();
  CHECK(absl::StrContains(picture.str(), "<svg x=\"0\" y=\"0\""));
  CHECK(w.db.Count("SELECT count(*) FROM bookings") == 0);  // a plan writes nothing

  // A 7U full-depth spec of 2,100 W fits nowhere: power in R101, units in R102.
  Result nowhere = Run(w, {"delivery", "plan", "--site", w.site, "7U/full/2100W/x1/big"});
  CHECK(nowhere.exit == 4);
  CHECK(absl::StrContains(nowhere.out, "big fits nowhere:"));
  CHECK(absl::StrContains(nowhere.out, "R102: no 7 contiguous units free on both sides"));

  Result reserved = Run(w, {"delivery", "reserve", "--site", w.site, servers[0], servers[1],
                            servers[2], "--ttl_seconds", "3600", "--json"});
  INFO(reserved.out << reserved.err);
  REQUIRE(reserved.exit == 0);
  v1::DeliveryReservation r;
  REQUIRE(google::protobuf::util::JsonStringToMessage(reserved.out, &r).ok());
  REQUIRE(r.reservations_size() == 3);
  CHECK(w.db.Count("SELECT count(*) FROM bookings WHERE kind = 'reservation'") == 3);

  for (int i = 0; i < 3; ++i) {
    const v1::PlannedDeliveryItem& item = r.plan().planned(i);
    Result placed = Run(w, {"delivery", "place", r.reservations(i).id(), "--rack",
                            item.rack_id(), "--device", item.device_id(), "--side",
                            item.side() == v1::SIDE_FRONT ? "front" : "rear", "--unit",
                            std::to_string(item.unit())});
    INFO(placed.out << placed.err);
    CHECK(placed.exit == 0);
  }
  CHECK(w.db.Count("SELECT count(*) FROM bookings WHERE kind = 'reservation'") == 0);
  CHECK(w.db.Count("SELECT count(*) FROM bookings WHERE kind = 'placement'") == 3);
  CHECK(w.db.Count("SELECT count(*) FROM booking_slots WHERE released_at IS NOT NULL") == 0);

  Result usage = Run(w, {"delivery", "plan", servers[0]});
  CHECK(usage.exit == 2);
  CHECK(absl::StrContains(usage.err, "--site is required"));
}

}  // namespace
}  // namespace dcl
