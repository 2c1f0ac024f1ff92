#include "services/move_workflow/move_state.h"

namespace dcl::moves {

const char* StateName(MoveState s) {
  if (s >= MoveState::kCount) return "unknown";
  return kTransitions[static_cast<size_t>(s)].name;
}

bool ParseState(const std::string& name, MoveState* state) {
  for (const StateTransitions& row : kTransitions) {
    if (name == row.name) {
      *state = row.state;
      return true;
    }
  }
  return false;
}

std::vector<std::string> AllowedTargetNames(MoveState from) {
  std::vector<std::string> names;
  if (from >= MoveState::kCount) return names;
  const StateTransitions& row = kTransitions[static_cast<size_t>(from)];
  for (size_t i = 0; i < row.count; ++i) names.emplace_back(StateName(row.targets[i]));
  return names;
}

TransitionCheck CheckTransition(MoveState from, MoveState to, Observation observation) {
  if (!IsAllowed(from, to)) return TransitionCheck::kNotAllowed;
  if (from != MoveState::kNeedsReconcile) {
    return observation == Observation::kNone ? TransitionCheck::kOk
                                             : TransitionCheck::kObservationMismatch;
  }
  // Leaving needs_reconcile is the record of what someone saw, never a bare state change.
  if (observation == Observation::kNone) return TransitionCheck::kObservationRequired;
  const MoveState settles =
      observation == Observation::kFoundAtDestination ? MoveState::kCompleted : MoveState::kFailed;
  return settles == to ? TransitionCheck::kOk : TransitionCheck::kObservationMismatch;
}

}  // namespace dcl::moves
