// The move workflow as data: nine states, the transitions allowed out of each, and whether the
// destination must stay held in each. Both tables are records over all nine states, indexed by
// the enum and checked complete at compile time: a state added to the enum without a row fails
// the build instead of falling through a `default:` to "allowed". Terminal states carry empty
// target lists on purpose ("nothing goes on from here" is a decision, not an omission).
//
// Pure: no database, no gRPC types. services/moves/move_logic.cc applies the side effects per
// target state; device custody (services/devices) reads the terminal states. It keeps the
// namespace of the move service it was written for.
#ifndef DCL_SERVICES_MOVE_WORKFLOW_MOVE_STATE_H_
#define DCL_SERVICES_MOVE_WORKFLOW_MOVE_STATE_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dcl::moves {

enum class MoveState : uint8_t {
  kDraft,
  kPlanned,
  kApproved,
  kInProgress,
  kAwaitingVerification,
  kNeedsReconcile,
  kCompleted,
  kCancelled,
  kFailed,
  kCount,
};
inline constexpr size_t kMoveStateCount = static_cast<size_t>(MoveState::kCount);

// What someone saw at the rack; settles a move in needs_reconcile.
enum class Observation : uint8_t { kNone, kFoundAtDestination, kNotMoved };

inline constexpr size_t kMaxTargets = 3;

struct StateTransitions {
  MoveState state;
  const char* name;  // as stored in moves.state
  uint8_t count;     // number of valid entries in `targets`
  std::array<MoveState, kMaxTargets> targets;
};

using S = MoveState;

// The one record of valid transitions, in enum order.
//  - in_progress cannot go back to approved nor be cancelled: someone has the machine in their
//    hands; its only exits are awaiting_verification, needs_reconcile and failed.
//  - needs_reconcile leaves only through an observation: found at destination → completed,
//    not moved → failed (an outcome, not a choice: therefore failed, not cancelled).
inline constexpr std::array<StateTransitions, kMoveStateCount> kTransitions = {{
    {S::kDraft, "draft", 2, {S::kPlanned, S::kCancelled}},
    {S::kPlanned, "planned", 3, {S::kApproved, S::kDraft, S::kCancelled}},
    {S::kApproved, "approved", 2, {S::kInProgress, S::kCancelled}},
    {S::kInProgress, "in_progress", 3, {S::kAwaitingVerification, S::kNeedsReconcile, S::kFailed}},
    {S::kAwaitingVerification, "awaiting_verification", 2, {S::kCompleted, S::kNeedsReconcile}},
    {S::kNeedsReconcile, "needs_reconcile", 2, {S::kCompleted, S::kFailed}},
    {S::kCompleted, "completed", 0, {}},
    {S::kCancelled, "cancelled", 0, {}},
    {S::kFailed, "failed", 0, {}},
}};

struct DestinationRule {
  MoveState state;
  bool must_stay_held;  // the move hold at the destination must be active in this state
};

// The second table: whether the destination must stay held. needs_reconcile keeps it: nobody
// knows where the machine is, and releasing the destination could put a second machine into a
// unit that may already be occupied. In completed the hold has become the placement; in
// cancelled and failed it is released.
inline constexpr std::array<DestinationRule, kMoveStateCount> kDestinationRules = {{
    {S::kDraft, true},
    {S::kPlanned, true},
    {S::kApproved, true},
    {S::kInProgress, true},
    {S::kAwaitingVerification, true},
    {S::kNeedsReconcile, true},
    {S::kCompleted, false},
    {S::kCancelled, false},
    {S::kFailed, false},
}};

constexpr bool IsTerminal(MoveState s) { return kTransitions[static_cast<size_t>(s)].count == 0; }

constexpr bool DestinationMustStayHeld(MoveState s) {
  return kDestinationRules[static_cast<size_t>(s)].must_stay_held;
}

constexpr bool IsAllowed(MoveState from, MoveState to) {
  if (from >= MoveState::kCount || to >= MoveState::kCount) return false;
  const StateTransitions& row = kTransitions[static_cast<size_t>(from)];
  for (size_t i = 0; i < row.count; ++i) {
    if (row.targets[i] == to) return true;
  }
  return false;
}

// Every row present, in enum order, named, with targets that are real states, without
// duplicates or self-loops, and with unused target slots left at their default.
constexpr bool TransitionTableIsComplete() {
  for (size_t i = 0; i < kMoveStateCount; ++i) {
    const StateTransitions& row = kTransitions[i];
    if (static_cast<size_t>(row.state) != i || row.name == nullptr || row.name[0] == '\0' ||
        row.count > kMaxTargets) {
      return false;
    }
    for (size_t t = 0; t < row.count; ++t) {
      if (row.targets[t] >= MoveState::kCount || row.targets[t] == row.state) return false;
      for (size_t u = 0; u < t; ++u) {
        if (row.targets[u] == row.targets[t]) return false;
      }
    }
  }
  return true;
}
static_assert(TransitionTableIsComplete(),
              "kTransitions needs exactly one well-formed row per MoveState, in enum order");

constexpr bool DestinationTableIsComplete() {
  for (size_t i = 0; i < kMoveStateCount; ++i) {
    if (static_cast<size_t>(kDestinationRules[i].state) != i) return false;
    // A state that can still go on must keep the destination: only an outcome lets it go.
    if (!IsTerminal(kDestinationRules[i].state) && !kDestinationRules[i].must_stay_held) {
      return false;
    }
  }
  return true;
}
static_assert(DestinationTableIsComplete(),
              "kDestinationRules needs one row per MoveState, in enum order, holding in every "
              "non-terminal state");
static_assert(IsTerminal(S::kCompleted) && IsTerminal(S::kCancelled) && IsTerminal(S::kFailed),
              "completed, cancelled and failed are the terminal states");
static_assert(!IsAllowed(S::kInProgress, S::kCancelled) && !IsAllowed(S::kInProgress, S::kApproved),
              "a move in progress cannot be cancelled nor sent back to approved");
static_assert(DestinationMustStayHeld(S::kNeedsReconcile),
              "needs_reconcile keeps the destination held");

const char* StateName(MoveState s);
// The state stored under `name`; false for anything else.
bool ParseState(const std::string& name, MoveState* state);
// Names of the states `from` may go to, in table order.
std::vector<std::string> AllowedTargetNames(MoveState from);

// Whether a transition is valid including its observation: leaving needs_reconcile requires the
// observation that settles it (found at destination → completed, not moved → failed); every
// other transition takes no observation.
enum class TransitionCheck { kOk, kNotAllowed, kObservationRequired, kObservationMismatch };
TransitionCheck CheckTransition(MoveState from, MoveState to, Observation observation);

}  // namespace dcl::moves

#endif  // DCL_SERVICES_MOVE_WORKFLOW_MOVE_STATE_H_
