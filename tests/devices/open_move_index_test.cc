// The open-move question has one answer: the terminal states of the move transition table
// (move_state.h), the partial index moves_one_open_per_device and the CHECK
// moves_ended_when_terminal in the migrated schema, and device custody's OpenMoveCondition()
// all name the same states. Each condition is evaluated by the database on every state name,
// so a predicate rewritten in another form (IN, <> ALL, OR) still passes and a state added to
// one place but not the others fails.
#include <catch2/catch.hpp>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "services/devices/device_custody.h"
#include "services/move_workflow/move_state.h"
#include "tests/support/test_db.h"

namespace dcl::devices {
namespace {

using testing::TestDatabase;

// Every state the transition table knows, as a SQL array literal of its stored names.
std::string AllStatesArray() {
  std::vector<std::string> names;
  for (const moves::StateTransitions& row : moves::kTransitions) {
    names.push_back(absl::StrCat("'", row.name, "'"));
  }
  return absl::StrCat("ARRAY[", absl::StrJoin(names, ", "), "]::text[]");
}

std::set<std::string> OpenStatesOfTable() {
  std::set<std::string> open;
  for (const moves::StateTransitions& row : moves::kTransitions) {
    if (!moves::IsTerminal(row.state)) open.insert(row.name);
  }
  return open;
}

// The state names for which `condition` (an expression over the columns `state` and
// `ended_at`, here NULL) holds, as the database evaluates it.
std::set<std::string> StatesWhere(const TestDatabase& db, const std::string& condition) {
  std::set<std::string> states;
  for (const auto& row : db.Exec(absl::StrCat(
           "SELECT state FROM (SELECT s AS state, NULL::timestamptz AS ended_at FROM unnest(",
           AllStatesArray(), ") AS s) AS moves WHERE ", condition))) {
    states.insert(row[0].as<std::string>());
  }
  return states;
}

TEST_CASE("the open-move index, the terminal CHECK and the code agree with the transition table") {
  TestDatabase db;
  const std::set<std::string> open = OpenStatesOfTable();
  // The table has both open and terminal states (and the helper read them).
  REQUIRE_FALSE(open.empty());
  REQUIRE(open.size() < moves::kMoveStateCount);

  // The index as the catalog has it: unique, on device_id, partial.
  CHECK(db.Scalar("SELECT indisunique::text FROM pg_index WHERE indexrelid = "
                  "'moves_one_open_per_device'::regclass") == "true");
  CHECK(db.Scalar("SELECT pg_get_indexdef('moves_one_open_per_device'::regclass)")
            .find("(device_id) WHERE") != std::string::npos);

  const std::string index_predicate = db.Scalar(
      "SELECT pg_get_expr(indpred, indrelid) FROM pg_index WHERE indexrelid = "
      "'moves_one_open_per_device'::regclass");
  INFO("index predicate: " << index_predicate);
  CHECK(StatesWhere(db, index_predicate) == open);

  INFO("device custody: " << OpenMoveCondition());
  CHECK(StatesWhere(db, OpenMoveCondition()) == open);

  // moves_ended_when_terminal: with ended_at NULL it holds exactly for the open states.
  const std::string ended_check = db.Scalar(
      "SELECT pg_get_expr(conbin, conrelid) FROM pg_constraint "
      "WHERE conname = 'moves_ended_when_terminal'");
  INFO("ended CHECK: " << ended_check);
  CHECK(StatesWhere(db, ended_check) == open);
}

}  // namespace
}  // namespace dcl::devices
