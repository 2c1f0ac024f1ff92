// The move state machine, exhaustively: all 81 (from, to) pairs against an independent
// expectation written out below, the destination table, and the observation rules.
#include "services/move_workflow/move_state.h"

#include <catch2/catch.hpp>
#include <set>
#include <string>
#include <utility>

namespace dcl::moves {
namespace {

// The expected transitions, written as names so that this list does not share code with the
// table it checks.
const std::set<std::pair<std::string, std::string>>& Expected() {
  static const auto* expected = new std::set<std::pair<std::string, std::string>>{
      {"draft", "planned"},
      {"draft", "cancelled"},
      {"planned", "approved"},
      {"planned", "draft"},
      {"planned", "cancelled"},
      {"approved", "in_progress"},
      {"approved", "cancelled"},
      {"in_progress", "awaiting_verification"},
      {"in_progress", "needs_reconcile"},
      {"in_progress", "failed"},
      {"awaiting_verification", "completed"},
      {"awaiting_verification", "needs_reconcile"},
      {"needs_reconcile", "completed"},
      {"needs_reconcile", "failed"},
  };
  return *expected;
}

MoveState At(size_t i) { return static_cast<MoveState>(i); }

TEST_CASE("all 81 (from, to) pairs match the expected transitions") {
  int pairs = 0;
  int allowed = 0;
  for (size_t f = 0; f < kMoveStateCount; ++f) {
    for (size_t t = 0; t < kMoveStateCount; ++t) {
      const std::string from = StateName(At(f));
      const std::string to = StateName(At(t));
      INFO(from << " -> " << to);
      const bool expected = Expected().count({from, to}) > 0;
      CHECK(IsAllowed(At(f), At(t)) == expected);
      ++pairs;
      if (expected) ++allowed;
    }
  }
  CHECK(pairs == 81);
  CHECK(allowed == static_cast<int>(Expected().size()));
}

TEST_CASE("there are nine states with distinct names that parse back") {
  REQUIRE(kMoveStateCount == 9);
  std::set<std::string> names;
  for (size_t i = 0; i < kMoveStateCount; ++i) {
    names.insert(StateName(At(i)));
    MoveState parsed = MoveState::kCount;
    REQUIRE(ParseState(StateName(At(i)), &parsed));
    CHECK(parsed == At(i));
  }
  CHECK(names.size() == 9);
  MoveState unused;
  CHECK_FALSE(ParseState("moving", &unused));
  CHECK_FALSE(ParseState("", &unused));
}

TEST_CASE("terminal states carry empty target lists and everything else can go on") {
  for (size_t i = 0; i < kMoveStateCount; ++i) {
    const std::string name = StateName(At(i));
    INFO(name);
    const bool terminal = name == "completed" || name == "cancelled" || name == "failed";
    CHECK(IsTerminal(At(i)) == terminal);
    CHECK(AllowedTargetNames(At(i)).empty() == terminal);
  }
}

TEST_CASE("a move in progress has no way back to approved and no way to cancelled") {
  CHECK(AllowedTargetNames(MoveState::kInProgress) ==
        std::vector<std::string>{"awaiting_verification", "needs_reconcile", "failed"});
  CHECK(CheckTransition(MoveState::kInProgress, MoveState::kCancelled, Observation::kNone) ==
        TransitionCheck::kNotAllowed);
  CHECK(CheckTransition(MoveState::kInProgress, MoveState::kApproved, Observation::kNone) ==
        TransitionCheck::kNotAllowed);
}

TEST_CASE("the destination stays held in every open state, including needs_reconcile") {
  for (size_t i = 0; i < kMoveStateCount; ++i) {
    INFO(StateName(At(i)));
    CHECK(DestinationMustStayHeld(At(i)) == !IsTerminal(At(i)));
  }
  CHECK(DestinationMustStayHeld(MoveState::kNeedsReconcile));
}

TEST_CASE("needs_reconcile is left only through the observation that settles it") {
  using O = Observation;
  const MoveState nr = MoveState::kNeedsReconcile;
  CHECK(CheckTransition(nr, MoveState::kCompleted, O::kFoundAtDestination) == TransitionCheck::kOk);
  CHECK(CheckTransition(nr, MoveState::kFailed, O::kNotMoved) == TransitionCheck::kOk);
  CHECK(CheckTransition(nr, MoveState::kCompleted, O::kNone) ==
        TransitionCheck::kObservationRequired);
  CHECK(CheckTransition(nr, MoveState::kFailed, O::kNone) == TransitionCheck::kObservationRequired);
  CHECK(CheckTransition(nr, MoveState::kCompleted, O::kNotMoved) ==
        TransitionCheck::kObservationMismatch);
  CHECK(CheckTransition(nr, MoveState::kFailed, O::kFoundAtDestination) ==
        TransitionCheck::kObservationMismatch);
  CHECK(CheckTransition(nr, MoveState::kCancelled, O::kNotMoved) == TransitionCheck::kNotAllowed);
}

TEST_CASE("an observation outside needs_reconcile is refused") {
  CHECK(CheckTransition(MoveState::kApproved, MoveState::kInProgress, Observation::kNone) ==
        TransitionCheck::kOk);
  CHECK(CheckTransition(MoveState::kApproved, MoveState::kInProgress,
                        Observation::kFoundAtDestination) == TransitionCheck::kObservationMismatch);
}

TEST_CASE("out-of-range values are never allowed") {
  CHECK_FALSE(IsAllowed(MoveState::kCount, MoveState::kDraft));
  CHECK_FALSE(IsAllowed(MoveState::kDraft, MoveState::kCount));
  CHECK(AllowedTargetNames(MoveState::kCount).empty());
}

}  // namespace
}  // namespace dcl::moves
