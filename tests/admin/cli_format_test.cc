// dclctl's pure parts without a server: the exit status of every gRPC code, a refusal's
// readable lines and its JSON, the parsers of what operators type, and where targets and
// tokens come from.
#include "dclctl/format/cli_format.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include <google/protobuf/util/json_util.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"

#include "google/rpc/status.pb.h"
#include "dclctl/grpc_client.h"
#include "services/common/grpc_status.h"
#include "services/common/status.h"

namespace dcl::admin {
namespace {

// The exit statuses as docs/operators-guide.md's table "Exit status" gives them: gRPC code name →
// status, from the codes in backticks in each row's last cell ("from").
std::map<std::string, int> DocumentedExitStatuses() {
  std::ifstream in("docs/operators-guide.md");
  REQUIRE(in);
  std::map<std::string, int> by_code;
  bool in_table = false;
  for (std::string line; std::getline(in, line);) {
    if (line == "## Exit status") in_table = true;
    if (!in_table || !absl::StartsWith(line, "| ")) {
      if (in_table && !by_code.empty()) break;
      continue;
    }
    const std::vector<std::string> cells = absl::StrSplit(line, '|');
    REQUIRE(cells.size() == 5);  // "", status, meaning, from, ""
    int status = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(cells[1]), &status)) continue;  // header
    const std::vector<std::string> quoted = absl::StrSplit(cells[3], '`');
    for (size_t i = 1; i < quoted.size(); i += 2) by_code[quoted[i]] = status;
  }
  REQUIRE(!by_code.empty());
  return by_code;
}

TEST_CASE("every gRPC code has the exit status docs/operators-guide.md gives it") {
  // gRPC's codes in their numeric order (0..16), by the names the table uses.
  const char* const kNames[] = {"OK",
                                "CANCELLED",
                                "UNKNOWN",
                                "INVALID_ARGUMENT",
                                "DEADLINE_EXCEEDED",
                                "NOT_FOUND",
                                "ALREADY_EXISTS",
                                "PERMISSION_DENIED",
                                "RESOURCE_EXHAUSTED",
                                "FAILED_PRECONDITION",
                                "ABORTED",
                                "OUT_OF_RANGE",
                                "UNIMPLEMENTED",
                                "INTERNAL",
                                "UNAVAILABLE",
                                "DATA_LOSS",
                                "UNAUTHENTICATED"};
  const std::map<std::string, int> documented = DocumentedExitStatuses();
  for (const auto& [name, status] : documented) {
    INFO("the table names " << name);
    CHECK(std::find(std::begin(kNames), std::end(kNames), name) != std::end(kNames));
  }
  for (int code = 0; code <= 16; ++code) {
    // A code no row names is "anything else": status 1.
    const auto it = documented.find(kNames[code]);
    const int expected = it == documented.end() ? kExitOther : it->second;
    INFO("code " << kNames[code]);
    CHECK(ExitCodeFor(static_cast<grpc::StatusCode>(code)) == expected);
  }
}

grpc::Status UnitOccupied() {
  Error error(absl::StatusCode::kFailedPrecondition, v1::UNIT_OCCUPIED, "U10 is taken");
  error.Meta("rack_id", "r-1");
  for (v1::Side side : {v1::SIDE_FRONT, v1::SIDE_REAR}) {
    v1::Slot* slot = error.detail().add_colliding_slots();
    slot->set_side(side);
    slot->set_unit(10);
  }
  return ToGrpcStatus(error);
}

TEST_CASE("a refusal reads as its kind, code, reason, message, colliding units and metadata") {
  CHECK(DescribeError(UnitOccupied()) ==
        std::vector<std::string>{
            "refused (FAILED_PRECONDITION, UNIT_OCCUPIED): U10 is taken",
            "  colliding units: front+rear U10",
            "  rack_id: r-1",
        });
  Error transition(absl::StatusCode::kFailedPrecondition, v1::INVALID_TRANSITION, "no");
  transition.detail().add_allowed_targets("approved");
  transition.detail().add_allowed_targets("cancelled");
  CHECK(DescribeError(ToGrpcStatus(transition))[1] == "  allowed next states: approved, cancelled");
  // A transport failure has no ErrorDetail: the status' own message.
  CHECK(DescribeError(grpc::Status(grpc::StatusCode::UNAVAILABLE, "connection refused")) ==
        std::vector<std::string>{"unavailable, try again later (UNAVAILABLE): connection refused"});
}

TEST_CASE("a refusal in JSON is the google.rpc.Status with the ErrorDetail inside") {
  google::rpc::Status parsed;
  REQUIRE(google::protobuf::util::JsonStringToMessage(ErrorJson(UnitOccupied()), &parsed).ok());
  CHECK(parsed.code() == 9);
  v1::ErrorDetail detail;
  bool found = false;
  for (const auto& any : parsed.details()) found = found || any.UnpackTo(&detail);
  REQUIRE(found);
  CHECK(detail.reason() == v1::UNIT_OCCUPIED);
  CHECK(detail.colliding_slots_size() == 2);

  REQUIRE(google::protobuf::util::JsonStringToMessage(
              ErrorJson(grpc::Status(grpc::StatusCode::UNAVAILABLE, "down")), &parsed)
              .ok());
  CHECK(parsed.code() == 14);
  CHECK(parsed.message() == "down");
}

TEST_CASE("operators' words: case, dashes and the enum prefix do not matter") {
  v1::MoveState state;
  for (const char* text : {"in_progress", "in-progress", "IN_PROGRESS", "MOVE_IN_PROGRESS"}) {
    INFO(text);
    REQUIRE(ParseMoveState(text, &state));
    CHECK(state == v1::MOVE_IN_PROGRESS);
  }
  CHECK_FALSE(ParseMoveState("unspecified", &state));
  CHECK_FALSE(ParseMoveState("moving", &state));
  CHECK(MoveStateName(v1::MOVE_AWAITING_VERIFICATION) == "awaiting_verification");

  v1::Side side;
  REQUIRE(ParseSide("Rear", &side));
  CHECK(side == v1::SIDE_REAR);
  CHECK_FALSE(ParseSide("sideways", &side));
  v1::BookingKind kind;
  REQUIRE(ParseBookingKind("move-hold", &kind));
  CHECK(kind == v1::BOOKING_MOVE_HOLD);
  v1::ReservationState reservation;
  REQUIRE(ParseReservationState("held", &reservation));
  CHECK(reservation == v1::RESERVATION_HELD);
  v1::Observation observation;
  REQUIRE(ParseObservation("not_moved", &observation));
  CHECK(observation == v1::OBSERVATION_NOT_MOVED);
}

TEST_CASE("a plan reads as the units it would claim, or as its refusal") {
  v1::PlanBookingResponse ok;
  ok.set_ok(true);
  for (int unit : {9, 10}) {
    v1::Slot* slot = ok.add_slots();
    slot->set_side(v1::SIDE_FRONT);
    slot->set_unit(unit);
  }
  CHECK(PlanText(ok) == std::vector<std::string>{"would claim: front U9-U10"});
  v1::PlanBookingResponse refused;
  refused.mutable_rejection()->set_reason(v1::OUT_OF_BOUNDS);
  refused.mutable_rejection()->set_message("U43 is outside U1-U42");
  CHECK(PlanText(refused) ==
        std::vector<std::string>{"would be refused (OUT_OF_BOUNDS): U43 is outside U1-U42"});
}

TEST_CASE("a site's capacity reads as one row per dimension and one forecast line each") {
  v1::SiteCapacity c;
  c.set_site_id("s1");
  c.set_window_days(30);
  c.set_typical_power_watts(450);
  c.set_typical_weight_kg(20);
  c.set_rack_count(3);
  v1::SiteCapacityDimension* units = c.add_dimensions();
  units->set_dimension("units");
  units->set_racks(3);
  units->set_total(252);
  units->set_used(6);
  units->set_free(246);
  units->set_stranded(80);
  units->set_booked_in_window(6);
  units->set_released_in_window(1);
  units->set_net_per_day(5.0 / 30);
  units->set_days_to_exhaustion(1476);
  v1::SiteCapacityDimension* power = c.add_dimensions();
  power->set_dimension("power");
  power->set_racks(2);
  power->set_total(7000);
  power->set_used(2250);
  power->set_free(4550);
  power->set_unknown_racks(1);
  power->set_unknown_free(200);
  power->set_booked_in_window(2250);
  power->set_released_in_window(450);
  power->set_net_per_day(60);
  power->set_days_to_exhaustion(4550 / 60.0);
  v1::SiteCapacityDimension* cooling = c.add_dimensions();
  cooling->set_dimension("cooling");
  const std::vector<std::string> text = SiteCapacityText(c);
  REQUIRE(text.size() == 9);
  CHECK(text[0] == "site s1: 3 racks; a typical device 450 W, 20 kg");
  CHECK(text[1].find("DIMENSION") == 0);
  CHECK(text[2].find("units") == 0);
  CHECK(text[2].find("252 slots") != std::string::npos);
  CHECK(text[2].find("80") != std::string::npos);
  CHECK(text[3].find("<= 200 in 1 rack") != std::string::npos);
  CHECK(text[5] == "forecast over the last 30 days (booked less released, per day):");
  CHECK(text[6] == "  units: +6 -1 slots, 0.17/day: free runs out in 1476.0 days");
  CHECK(text[7] ==
        "  power: +2250 -450 W, 60.00/day: free runs out in 75.8 days (within 90 days)");
  CHECK(text[8] == "  cooling: +0 -0 W, 0.00/day: does not run out at this rate");
}

TEST_CASE("a move event reads as time, sequence, transition, actor and note") {
  v1::MoveEvent event;
  event.set_sequence(2);
  event.set_from_state(v1::MOVE_PLANNED);
  event.set_to_state(v1::MOVE_APPROVED);
  event.set_actor("dc-operator");
  event.set_note("ok");
  event.mutable_at()->set_seconds(1800000000);
  CHECK(MoveEventLine(event) == "2027-01-15 08:00:00Z  #2  planned → approved  by dc-operator  “ok”");
  event.clear_from_state();
  event.set_to_state(v1::MOVE_DRAFT);
  event.clear_note();
  CHECK(MoveEventLine(event) == "2027-01-15 08:00:00Z  #2  created as draft  by dc-operator");
}

TEST_CASE("targets and tokens: per-service flag, shared flag, per-service env, shared env, default") {
  std::map<std::string, std::string> env;
  auto getenv = [&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  ClientFlags flags;
  ClientOptions o = ResolveClientOptions(flags, getenv);
  CHECK(o.reservation.target == "127.0.0.1:50051");
  CHECK(o.occupancy.target == "127.0.0.1:50052");
  CHECK(o.moves.target == "127.0.0.1:50053");
  CHECK(o.moves.token.empty());

  env["DCL_TARGET"] = "env-all:1";
  env["DCL_TOKEN"] = "env-token";
  env["DCL_MOVES_TARGET"] = "env-moves:3";
  env["DCL_RESERVATION_TOKEN"] = "env-commerce";
  o = ResolveClientOptions(flags, getenv);
  CHECK(o.occupancy.target == "env-all:1");
  CHECK(o.moves.target == "env-moves:3");
  CHECK(o.occupancy.token == "env-token");
  CHECK(o.reservation.token == "env-commerce");

  flags.target = "flag-all:1";
  flags.token = "flag-token";
  o = ResolveClientOptions(flags, getenv);
  CHECK(o.moves.target == "flag-all:1");  // a flag beats the environment, even a specific one
  CHECK(o.reservation.token == "flag-token");

  flags.occupancy_target = "flag-occupancy:2";
  flags.reservation_token = "flag-commerce";
  o = ResolveClientOptions(flags, getenv);
  CHECK(o.occupancy.target == "flag-occupancy:2");
  CHECK(o.reservation.token == "flag-commerce");
  CHECK(o.moves.token == "flag-token");
}

}  // namespace
}  // namespace dcl::admin
