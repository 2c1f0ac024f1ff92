// The real dclctl binary as an operator runs it, against the real reservation, occupancy and
// move services (one in-process gRPC server on a test database): rack show before and after a
// place, a refused place (exit 4, the reason and the colliding units on stderr), --json that
// parses back into the contract's messages, bookings released and planned, a move watched
// while another dclctl advances it, Ctrl-C ending a watch, the exit statuses of the other
// failures, and targets and tokens from the environment.
#include <signal.h>
#include <stdlib.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <google/protobuf/util/json_util.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "dcl/v1/moves.pb.h"
#include "dcl/v1/occupancy.pb.h"
#include "dcl/v1/reservation.grpc.pb.h"
#include "google/rpc/status.pb.h"
#include "services/common/rpc_gate.h"
#include "services/moves/move_logic.h"
#include "services/moves/move_service.h"
#include "services/occupancy/occupancy_logic.h"
#include "services/occupancy/occupancy_service.h"
#include "services/reservation/reservation_logic.h"
#include "services/reservation/reservation_service.h"
#include "tests/admin/token_file.h"
#include "tests/support/child_process.h"
#include "tests/support/fixtures.h"
#include "tests/support/grpc_harness.h"
#include "tests/support/test_db.h"

namespace dcl {
namespace {

using testing::ChildProcess;
using testing::WaitUntil;

// An organization with two racks of one site and three devices, served by all three services.
struct World {
  World()
      : org(testing::CreateOrg(db, "acme")),
        site(testing::CreateSite(db, org, "FRA1")),
        rack_a(testing::CreateRack(db, org, site, testing::RackSpec{"FRA1-A01"})),
        rack_b(testing::CreateRack(
            db, org, site, testing::RackSpec{"FRA1-A02", 1, 47, "descending", true})),
        server_2u(testing::CreateDevice(db, org, site, [] {
          testing::DeviceSpec spec;
          spec.height_units = 2;
          return spec;
        }())),
        server_1u(testing::CreateDevice(db, org, site)),
        spare(testing::CreateDevice(db, org, site)),
        pool(db.MakePool(8)),
        gate(*pool),
        occupancy_logic(*pool),
        occupancy(gate, occupancy_logic),
        move_logic(*pool, absl::Milliseconds(50)),
        moves(gate, move_logic),
        reservation_logic(*pool, reservation::ReservationOptions{}),
        reservations(gate, reservation_logic),
        server(pool.get(), {{"dcl.v1.OccupancyService", &occupancy},
                            {"dcl.v1.MoveService", &moves},
                            {"dcl.v1.ReservationService", &reservations}}),
        operator_token(testing::CreateTokenFor(db, org, Role::kDcOperator)),
        commerce_token(testing::CreateTokenFor(db, org, Role::kCommerce)) {}

  testing::TestDatabase db;
  std::string org, site, rack_a, rack_b, server_2u, server_1u, spare;
  std::unique_ptr<DbPool> pool;
  RpcGate gate;
  occupancy::OccupancyLogic occupancy_logic;
  occupancy::OccupancyServiceImpl occupancy;
  moves::MoveLogic move_logic;
  moves::MoveServiceImpl moves;
  reservation::ReservationLogic reservation_logic;
  reservation::ReservationServiceImpl reservations;
  testing::InProcessServer server;
  std::string operator_token, commerce_token;
};

struct Result {
  int exit = -1;
  std::string out;
  std::string err;
};

std::string Dclctl() { return testing::RunfilesBinary("dclctl/dclctl"); }

// Runs dclctl to its end; `args` come after the target and the operator's token.
Result Run(const World& w, std::vector<std::string> args, bool with_connection = true) {
  if (with_connection) {
    args.push_back("--target=" + w.server.address());
    args.push_back("--dcl_token_file=" + testing::DclTokenFile(w.operator_token));
  }
  ChildProcess dclctl(Dclctl(), args, /*separate_stderr=*/true);
  const std::optional<int> exit = dclctl.WaitForExit(std::chrono::seconds(60));
  REQUIRE(exit.has_value());
  return Result{*exit, dclctl.Log(), dclctl.Stderr()};
}

template <typename Message>
Message FromJson(const std::string& json) {
  Message message;
  const auto status = google::protobuf::util::JsonStringToMessage(json, &message);
  INFO(json);
  REQUIRE(status.ok());
  return message;
}

// The printed row of one unit of `rack show`.
std::string RowOf(const std::string& out, int unit) {
  const std::string prefix = absl::StrCat(unit, "  ");
  size_t start = 0;
  while (start < out.size()) {
    size_t end = out.find('\n', start);
    if (end == std::string::npos) end = out.size();
    const std::string line = out.substr(start, end - start);
    const size_t first = line.find_first_not_of(' ');
    if (first != std::string::npos && line.compare(first, prefix.size(), prefix) == 0) return line;
    start = end + 1;
  }
  return "";
}

std::string Tail8(const std::string& id) { return id.substr(id.size() - 8); }

TEST_CASE("rack show before and after a place; a refused place exits 4 with the reason") {
  World w;
  Result before = Run(w, {"rack", "show", w.rack_a});
  INFO(before.out << before.err);
  REQUIRE(before.exit == 0);
  CHECK(absl::StrContains(before.out, "Rack FRA1-A01"));
  CHECK(absl::StrContains(before.out, "U1 at the bottom, U42 at the top (ascending)"));
  CHECK(absl::StrContains(RowOf(before.out, 10), "·"));
  CHECK_FALSE(absl::StrContains(before.out, "placement"));

  Result placed = Run(w, {"place", "--rack", w.rack_a, "--device", w.server_2u, "--side", "front",
                          "--unit", "9", "--reason", "new customer"});
  INFO(placed.out << placed.err);
  REQUIRE(placed.exit == 0);
  CHECK(absl::StrContains(placed.out, "front+rear U9-U10"));
  CHECK(absl::StrContains(placed.out, "new customer"));

  Result after = Run(w, {"rack", "show", w.rack_a});
  REQUIRE(after.exit == 0);
  CHECK(absl::StrContains(RowOf(after.out, 10), "┌ placement    …" + Tail8(w.server_2u)));
  CHECK(absl::StrContains(RowOf(after.out, 9), "└ placement    …" + Tail8(w.server_2u)));
  CHECK(absl::StrContains(after.out, "free: 40 of 42 units on the front, 40 on the rear"));

  Result refused = Run(w, {"place", "--rack", w.rack_a, "--device", w.server_1u, "--side",
                           "front", "--unit", "10"});
  INFO(refused.err);
  CHECK(refused.exit == 4);
  CHECK(refused.out.empty());
  CHECK(absl::StrContains(refused.err, "refused (FAILED_PRECONDITION, UNIT_OCCUPIED)"));
  CHECK(absl::StrContains(refused.err, "colliding units: front+rear U10"));

  // Nothing changed for the refusal.
  CHECK(Run(w, {"rack", "show", w.rack_a}).out == after.out);
}

TEST_CASE("--json: answers parse back into the contract's messages, failures into a status") {
  World w;
  REQUIRE(Run(w, {"place", "--rack", w.rack_a, "--device", w.server_2u, "--side", "front",
                  "--unit", "9"})
              .exit == 0);
  Result shown = Run(w, {"rack", "show", w.rack_a, "--json"});
  REQUIRE(shown.exit == 0);
  const v1::Rack rack = FromJson<v1::Rack>(shown.out);
  CHECK(rack.name() == "FRA1-A01");
  CHECK(rack.occupied_size() == 4);
  CHECK(rack.occupied(0).device_id() == w.server_2u);
  CHECK(absl::StrContains(shown.out, "\"kind\": \"BOOKING_PLACEMENT\""));

  Result refused = Run(w, {"place", "--rack", w.rack_a, "--device", w.server_1u, "--side",
                           "rear", "--unit", "9", "--json"});
  CHECK(refused.exit == 4);
  const google::rpc::Status status = FromJson<google::rpc::Status>(refused.err);
  CHECK(status.code() == static_cast<int>(grpc::StatusCode::FAILED_PRECONDITION));
  CHECK(absl::StrContains(refused.err, "UNIT_OCCUPIED"));

  // A plan that would be refused says so in JSON too, with "ok": false printed.
  Result plan = Run(w, {"plan", "--rack", w.rack_a, "--device", w.server_1u, "--side", "front",
                        "--unit", "10", "--json"});
  CHECK(plan.exit == 4);
  const v1::PlanBookingResponse parsed = FromJson<v1::PlanBookingResponse>(plan.out);
  CHECK_FALSE(parsed.ok());
  CHECK(parsed.rejection().reason() == v1::UNIT_OCCUPIED);
  CHECK(absl::StrContains(plan.out, "\"ok\": false"));
}

TEST_CASE("dclctl capacity reads the site: a row per dimension and its forecast") {
  World w;
  REQUIRE(Run(w, {"block", "--rack", w.rack_a, "--both_sides", "--first", "30", "--last", "31",
                  "--reason", "broken rail"})
              .exit == 0);
  Result capacity = Run(w, {"capacity", w.site});
  INFO(capacity.out << capacity.err);
  REQUIRE(capacity.exit == 0);
  CHECK(absl::StrContains(capacity.out, "site " + w.site + ": 2 racks"));
  CHECK(absl::StrContains(capacity.out, "178 slots"));  // 42 and 47 units, front and rear
  // 4 slots booked in 30 days, 174 free: 174 / (4 / 30) days.
  CHECK(absl::StrContains(capacity.out,
                          "units: +4 -0 slots, 0.13/day: free runs out in 1305.0 days"));
  CHECK(absl::StrContains(capacity.out, "power: +0 -0 W, 0.00/day: does not run out"));

  Result json = Run(w, {"capacity", w.site, "--window_days", "10", "--json"});
  REQUIRE(json.exit == 0);
  const v1::SiteCapacity read = FromJson<v1::SiteCapacity>(json.out);
  CHECK(read.window_days() == 10);
  REQUIRE(read.dimensions_size() == 4);
  CHECK(read.dimensions(0).free() == 174);

  Result too_long = Run(w, {"capacity", w.site, "--window_days", "400"});
  CHECK(too_long.exit != 0);
}

TEST_CASE("block, plan against it, release it, plan again; capacity follows") {
  World w;
  Result blocked = Run(w, {"block", "--rack", w.rack_a, "--both_sides", "--first", "30", "--last",
                           "31", "--reason", "broken rail", "--json"});
  INFO(blocked.out << blocked.err);
  REQUIRE(blocked.exit == 0);
  const v1::Booking block = FromJson<v1::Booking>(blocked.out);
  CHECK(block.kind() == v1::BOOKING_BLOCKING);
  CHECK(block.slots_size() == 4);

  Result capacity = Run(w, {"rack", "capacity", w.rack_a});
  REQUIRE(capacity.exit == 0);
  CHECK(absl::StrContains(capacity.out, "free front units  40"));

  Result refused_plan = Run(w, {"plan", "--rack", w.rack_a, "--device", w.spare, "--side",
                                "front", "--unit", "31"});
  CHECK(refused_plan.exit == 4);
  CHECK(absl::StrContains(refused_plan.out, "would be refused (UNIT_OCCUPIED)"));
  CHECK(absl::StrContains(refused_plan.out, "colliding units: front+rear U31"));

  // A release that names the wrong kind is refused and releases nothing.
  Result wrong_kind =
      Run(w, {"release", block.id(), "--expect_kind", "reservation", "--reason", "rail fixed"});
  CHECK(wrong_kind.exit == 4);
  CHECK(absl::StrContains(wrong_kind.out + wrong_kind.err, "is a blocking now, not a reservation"));
  Result released =
      Run(w, {"release", block.id(), "--expect_kind", "blocking", "--reason", "rail fixed"});
  INFO(released.err);
  REQUIRE(released.exit == 0);
  CHECK(absl::StrContains(released.out, "released"));

  Result plan = Run(w, {"plan", "--rack", w.rack_a, "--device", w.spare, "--side", "front",
                        "--unit", "31"});
  CHECK(plan.exit == 0);
  CHECK(plan.out == "would claim: front+rear U31\n");

  Result reserved = Run(w, {"reserve-units", "--rack", w.rack_b, "--side", "rear", "--first",
                            "1", "--last", "2", "--reason", "delivery Tuesday"});
  REQUIRE(reserved.exit == 0);
  Result shown = Run(w, {"rack", "show", w.rack_b});
  CHECK(absl::StrContains(shown.out, "U1 at the top, U47 at the bottom (descending)"));
  CHECK(absl::StrContains(RowOf(shown.out, 1), "┌ reservation"));
  CHECK(absl::StrContains(RowOf(shown.out, 2), "└ reservation"));
}

TEST_CASE("move watch prints the transitions another dclctl makes, and ends with the move") {
  World w;
  REQUIRE(Run(w, {"place", "--rack", w.rack_a, "--device", w.server_2u, "--side", "front",
                  "--unit", "9"})
              .exit == 0);
  Result started = Run(w, {"move", "start", "--device", w.server_2u, "--rack", w.rack_b,
                           "--side", "front", "--unit", "20", "--note", "make room", "--json"});
  INFO(started.out << started.err);
  REQUIRE(started.exit == 0);
  const v1::Move move = FromJson<v1::Move>(started.out);
  CHECK(move.state() == v1::MOVE_PLANNED);

  ChildProcess watch(Dclctl(),
                     {"move", "watch", move.id(), "--target=" + w.server.address(),
                      "--dcl_token_file=" + testing::DclTokenFile(w.operator_token)},
                     /*separate_stderr=*/true);
  REQUIRE(WaitUntil([&] { return absl::StrContains(watch.Log(), "created as planned"); },
                    std::chrono::seconds(30)));
  CHECK(absl::StrContains(watch.Log(), "make room"));

  REQUIRE(Run(w, {"move", "advance", move.id(), "--to", "approved", "--note", "ok by ops"}).exit ==
          0);
  REQUIRE(WaitUntil([&] { return absl::StrContains(watch.Log(), "planned → approved"); },
                    std::chrono::seconds(30)));
  CHECK(watch.Running());

  for (const char* state : {"in-progress", "awaiting_verification", "completed"}) {
    Result advanced = Run(w, {"move", "advance", move.id(), "--to", state});
    INFO(state << ": " << advanced.err);
    REQUIRE(advanced.exit == 0);
  }
  REQUIRE(watch.WaitForExit(std::chrono::seconds(30)) == std::optional<int>(0));
  CHECK(absl::StrContains(watch.Log(), "awaiting_verification → completed"));
  CHECK(absl::StrContains(watch.Stderr(), "is completed"));

  // The device now stands in rack B, and a second advance is refused with where it may go.
  Result shown = Run(w, {"rack", "show", w.rack_b});
  CHECK(absl::StrContains(RowOf(shown.out, 20), "placement    …" + Tail8(w.server_2u)));
  Result again = Run(w, {"move", "advance", move.id(), "--to", "approved"});
  CHECK(again.exit == 4);
  CHECK(absl::StrContains(again.err, "INVALID_TRANSITION"));

  Result listed = Run(w, {"move", "list", "--state", "completed"});
  CHECK(absl::StrContains(listed.out, move.id()));
  CHECK(absl::StrContains(listed.out, "completed"));
}

TEST_CASE("Ctrl-C ends a watch cleanly: exit 130, the move goes on") {
  World w;
  REQUIRE(Run(w, {"place", "--rack", w.rack_a, "--device", w.server_1u, "--side", "front",
                  "--unit", "5"})
              .exit == 0);
  Result started = Run(w, {"move", "start", "--device", w.server_1u, "--rack", w.rack_a,
                           "--side", "front", "--unit", "40", "--json"});
  REQUIRE(started.exit == 0);
  const v1::Move move = FromJson<v1::Move>(started.out);
  ChildProcess watch(Dclctl(),
                     {"move", "watch", move.id(), "--target=" + w.server.address(),
                      "--dcl_token_file=" + testing::DclTokenFile(w.operator_token)},
                     /*separate_stderr=*/true);
  REQUIRE(WaitUntil([&] { return absl::StrContains(watch.Log(), "created as planned"); },
                    std::chrono::seconds(30)));
  watch.Signal(SIGINT);
  CHECK(watch.WaitForExit(std::chrono::seconds(10)) == std::optional<int>(130));
  CHECK(absl::StrContains(watch.Stderr(), "stopped watching; the move goes on"));
  Result shown = Run(w, {"move", "show", move.id(), "--json"});
  CHECK(FromJson<v1::Move>(shown.out).state() == v1::MOVE_PLANNED);
}

TEST_CASE("exit statuses: not found 3, bad input 2, no valid token 7, unreachable 6") {
  World w;
  Result missing = Run(w, {"rack", "show", "00000000-0000-4000-8000-00000000dead"});
  CHECK(missing.exit == 3);
  CHECK(absl::StrContains(missing.err, "not found (NOT_FOUND"));

  Result bad = Run(w, {"rack", "show", "not-a-rack-id"});
  CHECK(bad.exit == 2);
  CHECK(absl::StrContains(bad.err, "INVALID_ARGUMENT"));

  Result flags = Run(w, {"place", "--rack", w.rack_a, "--side", "sideways"});
  CHECK(flags.exit == 2);

  Result unknown_flag = Run(w, {"rack", "show", w.rack_a, "--colour"});
  CHECK(unknown_flag.exit == 2);
  CHECK(absl::StrContains(unknown_flag.err, "unknown flag --colour"));

  Result token = Run(w,
                     {"rack", "show", w.rack_a, "--target=" + w.server.address(),
                      "--dcl_token_file=" + testing::DclTokenFile("not-a-token")},
                     false);
  CHECK(token.exit == 7);

  // A commerce token may not book rack units.
  Result role = Run(w,
                    {"rack", "show", w.rack_a, "--target=" + w.server.address(),
                     "--dcl_token_file=" + testing::DclTokenFile(w.commerce_token)},
                    false);
  CHECK(role.exit == 7);
  CHECK(absl::StrContains(role.err, "PERMISSION_DENIED"));

  Result down = Run(w,
                    {"rack", "show", w.rack_a, "--target=127.0.0.1:1",
                     "--dcl_token_file=" + testing::DclTokenFile("x")},
                    false);
  CHECK(down.exit == 6);
}

TEST_CASE("reservation list and show with a commerce token beside the operator's") {
  World w;
  auto stub = v1::ReservationService::NewStub(w.server.Channel());
  v1::ReserveRequest reserve;
  reserve.set_idempotency_key("order-1001");
  reserve.mutable_criteria()->set_site_id(w.site);
  v1::ReserveResponse reserved;
  REQUIRE(stub->Reserve(testing::ContextWithToken(w.commerce_token).get(), reserve, &reserved)
              .ok());
  const std::string id = reserved.reservation().id();

  // The operator's token alone is refused; the per-service token wins for reservations.
  CHECK(Run(w, {"reservation", "list"}).exit == 7);
  Result listed = Run(w, {"reservation", "list", "--state", "held",
                          "--reservation_token_file=" + testing::DclTokenFile(w.commerce_token)});
  INFO(listed.err);
  REQUIRE(listed.exit == 0);
  CHECK(absl::StrContains(listed.out, id));
  CHECK(absl::StrContains(listed.out, "order-1001"));
  CHECK(absl::StrContains(listed.out, "held"));

  Result none = Run(w, {"reservation", "list", "--state", "cancelled",
                        "--reservation_token_file=" + testing::DclTokenFile(w.commerce_token)});
  CHECK(none.exit == 0);
  CHECK_FALSE(absl::StrContains(none.out, id));

  Result shown =
      Run(w, {"reservation", "show", "--key", "order-1001",
              "--reservation_token_file=" + testing::DclTokenFile(w.commerce_token), "--json"});
  REQUIRE(shown.exit == 0);
  CHECK(FromJson<v1::Reservation>(shown.out).id() == id);
}

TEST_CASE(
    "a token on the command line is refused, naming the variable and the file to use "
    "instead; a token file is read") {
  World w;
  const std::string target = "--target=" + w.server.address();
  const std::pair<std::string, std::string> refused_flags[] = {
      {"--token",
       "Set DCL_TOKEN in the environment, or name a file holding it with "
       "--dcl_token_file FILE"},
      {"--reservation_token",
       "DCL_RESERVATION_TOKEN in the environment, or name a file holding it "
       "with --reservation_token_file FILE"},
      {"--occupancy_token", "DCL_OCCUPANCY_TOKEN"},
      {"--moves_token", "DCL_MOVES_TOKEN"}};
  for (const auto& [flag, instead] : refused_flags) {
    Result refused =
        Run(w, {"rack", "capacity", w.rack_a, target, flag + "=" + w.operator_token}, false);
    INFO(flag << ": " << refused.out << refused.err);
    CHECK(refused.exit == 2);
    CHECK(absl::StrContains(refused.err, flag + " is refused"));
    CHECK(absl::StrContains(refused.err, "(ps)"));
    CHECK(absl::StrContains(refused.err, instead));
    CHECK_FALSE(absl::StrContains(refused.out, "free front units"));
  }

  Result from_file = Run(w,
                         {"rack", "capacity", w.rack_a, target,
                          "--dcl_token_file=" + testing::DclTokenFile(w.operator_token)},
                         false);
  INFO(from_file.err);
  CHECK(from_file.exit == 0);
  CHECK(absl::StrContains(from_file.out, "free front units  42"));
  // The per-service file wins over the shared one.
  Result per_service = Run(w,
                           {"rack", "capacity", w.rack_a, target,
                            "--dcl_token_file=" + testing::DclTokenFile("not-a-token"),
                            "--occupancy_token_file=" + testing::DclTokenFile(w.operator_token)},
                           false);
  CHECK(per_service.exit == 0);

  for (const std::string& bad : {std::string(""), w.operator_token + " " + w.operator_token}) {
    Result unusable = Run(
        w, {"rack", "capacity", w.rack_a, target, "--dcl_token_file=" + testing::DclTokenFile(bad)},
        false);
    CHECK(unusable.exit == 2);
    CHECK(absl::StrContains(unusable.err, "must hold one token, nothing else"));
  }
  Result missing = Run(
      w, {"rack", "capacity", w.rack_a, target, "--dcl_token_file=/nonexistent/dcl-token"}, false);
  CHECK(missing.exit == 2);
  CHECK(absl::StrContains(missing.err, "--dcl_token_file: cannot read /nonexistent/dcl-token"));
}

TEST_CASE("target and token from DCL_TARGET and DCL_TOKEN; a per-service flag wins") {
  World w;
  setenv("DCL_TARGET", w.server.address().c_str(), 1);
  setenv("DCL_TOKEN", w.operator_token.c_str(), 1);
  Result from_env = Run(w, {"rack", "capacity", w.rack_a}, false);
  Result overridden =
      Run(w, {"rack", "capacity", w.rack_a, "--occupancy_target=127.0.0.1:1"}, false);
  unsetenv("DCL_TARGET");
  unsetenv("DCL_TOKEN");
  INFO(from_env.err);
  CHECK(from_env.exit == 0);
  CHECK(absl::StrContains(from_env.out, "free front units  42"));
  CHECK(overridden.exit == 6);
}

}  // namespace
}  // namespace dcl
