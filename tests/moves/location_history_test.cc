// A device's location history through MoveService over a real in-process gRPC server, as an
// operator's tooling reads and corrects it: newest first, paged, corrections inside the row they
// correct; a correction needs a reason, is a new row, and never changes the row it corrects.
#include <catch2/catch.hpp>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "dcl/v1/moves.grpc.pb.h"
#include "services/common/grpc_status.h"
#include "tests/moves/move_test_world.h"
#include "tests/support/grpc_harness.h"
#include "tests/support/suite.h"

namespace dcl::moves {
namespace {

using testing::ContextWithToken;
using testing::MoveWorld;

struct Served {
  explicit Served(MoveWorld& w)
      : world(w),
        suite(*w.pool),
        stub(suite.moves),
        token(testing::CreateTokenFor(w.db, w.org, Role::kDcOperator)) {}

  v1::Move Start() {
    v1::StartMoveRequest req;
    req.set_device_id(world.device);
    req.set_destination_rack_id(world.rack_b);
    req.set_destination_side(v1::SIDE_FRONT);
    req.set_destination_unit(20);
    req.set_note("planned by test");
    v1::Move move;
    grpc::Status status = stub->StartMove(ContextWithToken(token).get(), req, &move);
    REQUIRE(status.ok());
    return move;
  }
  void Advance(const std::string& move_id, v1::MoveState target) {
    v1::AdvanceMoveRequest req;
    req.set_move_id(move_id);
    req.set_target(target);
    v1::Move move;
    REQUIRE(stub->AdvanceMove(ContextWithToken(token).get(), req, &move).ok());
  }
  grpc::Status List(const std::string& device, int page_size, const std::string& page_token,
                    v1::ListLocationHistoryResponse* out) {
    v1::ListLocationHistoryRequest req;
    req.set_device_id(device);
    req.set_page_size(page_size);
    req.set_page_token(page_token);
    return stub->ListLocationHistory(ContextWithToken(token).get(), req, out);
  }
  grpc::Status Correct(const v1::CorrectLocationRequest& req, v1::LocationRecord* out) {
    return stub->CorrectLocation(ContextWithToken(token).get(), req, out);
  }

  MoveWorld& world;
  testing::InProcessSuite suite;
  std::unique_ptr<v1::MoveService::Stub>& stub;
  std::string token;
};

std::vector<std::string> Events(const v1::ListLocationHistoryResponse& page) {
  std::vector<std::string> events;
  for (const v1::LocationRecord& r : page.records()) events.push_back(r.event());
  return events;
}

// The stored row, as text, to prove it never changes.
std::string RowText(const MoveWorld& w, int64_t id) {
  return w.db.Scalar(absl::StrCat("SELECT l::text FROM location_history l WHERE id = ", id));
}

std::string FieldOf(const grpc::Status& status) {
  auto detail = ErrorDetailFromGrpc(status);
  if (!detail.has_value()) return "(no detail)";
  auto it = detail->metadata().find("field");
  return it == detail->metadata().end() ? "(no field)" : it->second;
}

TEST_CASE("a device's history reads newest first in pages, with its position at each step") {
  MoveWorld w;
  Served s(w);
  const v1::Move move = s.Start();
  s.Advance(move.id(), v1::MOVE_APPROVED);
  s.Advance(move.id(), v1::MOVE_IN_PROGRESS);
  s.Advance(move.id(), v1::MOVE_AWAITING_VERIFICATION);
  s.Advance(move.id(), v1::MOVE_COMPLETED);

  v1::ListLocationHistoryResponse page;
  grpc::Status status = s.List(w.device, 2, "", &page);
  INFO(status.error_code() << " " << status.error_message());
  REQUIRE(status.ok());
  CHECK(Events(page) == std::vector<std::string>{"move_completed", "move_awaiting_verification"});
  REQUIRE_FALSE(page.next_page_token().empty());
  const v1::LocationRecord& done = page.records(0);
  CHECK(done.device_id() == w.device);
  CHECK(done.position_known());
  CHECK(done.rack_id() == w.rack_b);
  CHECK(done.site_id() == w.site);
  CHECK(done.side() == v1::SIDE_UNSPECIFIED);  // full depth: front and rear
  CHECK(done.first_unit() == 20);
  CHECK(done.last_unit() == 21);
  CHECK(done.move_id() == move.id());
  CHECK(done.move_state() == v1::MOVE_COMPLETED);
  CHECK(done.corrects_id() == 0);
  CHECK(done.corrections_size() == 0);
  CHECK(page.records(1).rack_id() == w.rack_a);  // verified only at completion

  v1::ListLocationHistoryResponse second;
  REQUIRE(s.List(w.device, 2, page.next_page_token(), &second).ok());
  CHECK(Events(second) == std::vector<std::string>{"move_in_progress", "move_approved"});
  v1::ListLocationHistoryResponse third;
  REQUIRE(s.List(w.device, 2, second.next_page_token(), &third).ok());
  CHECK(Events(third) == std::vector<std::string>{"move_planned"});
  CHECK(third.records(0).note() == "planned by test");
  CHECK(third.next_page_token().empty());

  // Bad paging and unknown devices are refused, naming the field.
  v1::ListLocationHistoryResponse refused;
  status = s.List(w.device, 2, "not-a-token", &refused);
  CHECK(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(FieldOf(status) == "page_token");
  status = s.List(w.device, -1, "", &refused);
  CHECK(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(FieldOf(status) == "page_size");
  // AIP-158: a size above the maximum is coerced to it, not refused.
  v1::ListLocationHistoryResponse coerced;
  REQUIRE(s.List(w.device, INT32_MAX, "", &coerced).ok());
  CHECK(coerced.records_size() == 5);
  const std::string other = testing::CreateOrg(w.db, "other");
  status = s.List(testing::CreateDevice(w.db, other, testing::CreateSite(w.db, other, "AMS1")), 0,
                  "", &refused);
  CHECK(status.error_code() == grpc::StatusCode::NOT_FOUND);
}

TEST_CASE("a correction is a new row beside the one it corrects, which never changes") {
  MoveWorld w;
  Served s(w);
  const v1::Move move = s.Start();
  s.Advance(move.id(), v1::MOVE_APPROVED);
  v1::ListLocationHistoryResponse before;
  REQUIRE(s.List(w.device, 0, "", &before).ok());
  REQUIRE(before.records_size() == 2);
  const int64_t planned_id = before.records(1).id();
  const std::string planned_row = RowText(w, planned_id);

  v1::CorrectLocationRequest fix;
  fix.set_corrects_id(planned_id);
  fix.set_reason("the machine stood one unit lower than recorded");
  fix.set_rack_id(w.rack_a);
  fix.set_side(v1::SIDE_FRONT);
  fix.set_first_unit(9);
  fix.set_last_unit(10);
  v1::LocationRecord correction;
  grpc::Status status = s.Correct(fix, &correction);
  INFO(status.error_code() << " " << status.error_message());
  REQUIRE(status.ok());
  CHECK(correction.corrects_id() == planned_id);
  CHECK(correction.event() == "correction");
  CHECK(correction.note() == "the machine stood one unit lower than recorded");
  CHECK(correction.device_id() == w.device);
  CHECK(correction.position_known());
  CHECK(correction.site_id() == w.site);
  CHECK(correction.side() == v1::SIDE_FRONT);
  CHECK(correction.first_unit() == 9);
  CHECK(correction.actor().find("dc-operator") != std::string::npos);
  CHECK(RowText(w, planned_id) == planned_row);

  // A second correction: nobody knows after all. Newest first inside the corrected row.
  v1::CorrectLocationRequest unknown;
  unknown.set_corrects_id(planned_id);
  unknown.set_reason("the audit found no record of that unit either");
  unknown.set_position_unknown(true);
  v1::LocationRecord second;
  REQUIRE(s.Correct(unknown, &second).ok());
  CHECK_FALSE(second.position_known());
  CHECK(second.rack_id().empty());

  v1::ListLocationHistoryResponse after;
  REQUIRE(s.List(w.device, 0, "", &after).ok());
  REQUIRE(after.records_size() == 2);  // corrections are not rows of their own in the list
  CHECK(after.records(0).corrections_size() == 0);
  const v1::LocationRecord& corrected = after.records(1);
  CHECK(corrected.id() == planned_id);
  CHECK(corrected.rack_id() == w.rack_a);
  CHECK(corrected.first_unit() == 10);  // what was recorded, unchanged
  REQUIRE(corrected.corrections_size() == 2);
  CHECK(corrected.corrections(0).id() == second.id());
  CHECK(corrected.corrections(1).id() == correction.id());
  CHECK(RowText(w, planned_id) == planned_row);
  CHECK(w.db.Count("SELECT count(*) FROM location_history") == 4);

  // Refusals write nothing.
  v1::LocationRecord refused;
  v1::CorrectLocationRequest no_reason = fix;
  no_reason.clear_reason();
  status = s.Correct(no_reason, &refused);
  CHECK(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(FieldOf(status) == "reason");
  v1::CorrectLocationRequest of_correction = fix;
  of_correction.set_corrects_id(correction.id());
  status = s.Correct(of_correction, &refused);
  CHECK(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(FieldOf(status) == "corrects_id");
  CHECK(status.error_message().find(absl::StrCat(planned_id)) != std::string::npos);
  v1::CorrectLocationRequest outside = fix;
  outside.set_first_unit(42);
  outside.set_last_unit(43);  // the rack has 42 units
  status = s.Correct(outside, &refused);
  CHECK(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(FieldOf(status) == "last_unit");
  v1::CorrectLocationRequest reversed = fix;
  reversed.set_first_unit(12);
  reversed.set_last_unit(11);
  status = s.Correct(reversed, &refused);
  CHECK(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  v1::CorrectLocationRequest missing = fix;
  missing.set_corrects_id(planned_id + 1000);
  status = s.Correct(missing, &refused);
  CHECK(status.error_code() == grpc::StatusCode::NOT_FOUND);
  v1::CorrectLocationRequest elsewhere = fix;
  const std::string other = testing::CreateOrg(w.db, "other");
  elsewhere.set_rack_id(
      testing::CreateRack(w.db, other, testing::CreateSite(w.db, other, "AMS1")));
  status = s.Correct(elsewhere, &refused);
  CHECK(status.error_code() == grpc::StatusCode::NOT_FOUND);
  CHECK(w.db.Count("SELECT count(*) FROM location_history") == 4);
}

TEST_CASE("the services' role owns no table and cannot switch the append-only rule off") {
  MoveWorld w;
  pqxx::connection service(w.db.service_url());
  {
    pqxx::nontransaction tx(service);
    CHECK(tx.exec1("SELECT count(*) FROM pg_tables WHERE schemaname = 'public' "
                   "AND tableowner = current_user")[0]
              .as<int>() == 0);
    CHECK(tx.exec1("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")[0].as<bool>() ==
          false);
  }
  // The history tables as the services see them: readable, appendable, nothing more.
  for (const std::string& statement :
       {std::string("ALTER TABLE location_history DISABLE TRIGGER USER"),
        std::string("ALTER TABLE move_events DISABLE TRIGGER USER"),
        std::string("SET session_replication_role = replica"),
        std::string("TRUNCATE location_history"), std::string("DELETE FROM move_events"),
        std::string("UPDATE location_history SET note = 'rewritten'"),
        std::string("INSERT INTO schema_migrations (version, name, checksum) "
                    "VALUES (999, 'x', 'y')")}) {
    INFO(statement);
    pqxx::work tx(service);
    CHECK_THROWS_AS(tx.exec(statement), pqxx::insufficient_privilege);
  }
  pqxx::work reads(service);
  CHECK(reads.exec1("SELECT count(*) FROM location_history")[0].as<int>() >= 0);
}

}  // namespace
}  // namespace dcl::moves
