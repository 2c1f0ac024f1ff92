// Conversions between the pure move state machine (move_state.h) and the dcl.v1 contract. One
// explicit record per direction, checked complete at compile time like the tables themselves.
#ifndef DCL_SERVICES_MOVES_MOVE_CONVERT_H_
#define DCL_SERVICES_MOVES_MOVE_CONVERT_H_

#include <array>
#include <cstddef>

#include "dcl/v1/moves.pb.h"
#include "services/move_workflow/move_state.h"

namespace dcl::moves {

inline constexpr std::array<v1::MoveState, kMoveStateCount> kProtoStates = {{
    v1::MOVE_DRAFT,
    v1::MOVE_PLANNED,
    v1::MOVE_APPROVED,
    v1::MOVE_IN_PROGRESS,
    v1::MOVE_AWAITING_VERIFICATION,
    v1::MOVE_NEEDS_RECONCILE,
    v1::MOVE_COMPLETED,
    v1::MOVE_CANCELLED,
    v1::MOVE_FAILED,
}};

constexpr bool ProtoStatesAreDistinctAndSet() {
  for (size_t i = 0; i < kMoveStateCount; ++i) {
    if (kProtoStates[i] == v1::MOVE_STATE_UNSPECIFIED) return false;
    for (size_t j = 0; j < i; ++j) {
      if (kProtoStates[i] == kProtoStates[j]) return false;
    }
  }
  return true;
}
static_assert(ProtoStatesAreDistinctAndSet(), "every MoveState maps to its own v1::MoveState");

inline v1::MoveState ToProtoState(MoveState s) { return kProtoStates[static_cast<size_t>(s)]; }

// false for MOVE_STATE_UNSPECIFIED and unknown values.
inline bool FromProtoState(v1::MoveState p, MoveState* out) {
  for (size_t i = 0; i < kMoveStateCount; ++i) {
    if (kProtoStates[i] == p) {
      *out = static_cast<MoveState>(i);
      return true;
    }
  }
  return false;
}

// false for values outside the enum.
inline bool FromProtoObservation(v1::Observation p, Observation* out) {
  switch (p) {
    case v1::OBSERVATION_UNSPECIFIED:
      *out = Observation::kNone;
      return true;
    case v1::OBSERVATION_FOUND_AT_DESTINATION:
      *out = Observation::kFoundAtDestination;
      return true;
    case v1::OBSERVATION_NOT_MOVED:
      *out = Observation::kNotMoved;
      return true;
    default:  // proto3 enums are open: unknown numbers arrive here and are refused
      return false;
  }
}

// As stored in move_events.observation.
inline const char* ObservationName(Observation o) {
  switch (o) {
    case Observation::kFoundAtDestination:
      return "found_at_destination";
    case Observation::kNotMoved:
      return "not_moved";
    case Observation::kNone:
      return "";
  }
  return "";
}

}  // namespace dcl::moves

#endif  // DCL_SERVICES_MOVES_MOVE_CONVERT_H_
