#include "services/moves/move_logic.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "services/common/metrics.h"
#include "services/common/page_token.h"
#include "services/common/request_ledger.h"
#include "services/common/status.h"
#include "services/common/validation.h"
#include "services/devices/device_custody.h"
#include "services/moves/move_convert.h"
#include "services/move_workflow/move_state.h"
#include "services/moves/move_store.h"
#include "services/moves/move_watch.h"
#include "services/occupancy/booking_store.h"
#include "services/occupancy/rack_plan.h"

namespace dcl::moves {

// The device lock and the open-move question are device custody's (below this service and the
// occupancy service, which asks the same before it releases a placement).
using devices::DeviceRow;
using devices::FindOpenMove;
using devices::LockDevice;

namespace {

// How long a new watch waits for the hub's listener to be connected.
constexpr absl::Duration kWatchSubscribeTimeout = absl::Seconds(5);

struct WatchMetrics {
  Gauge& streams_open;
  Counter& events_sent;
};

WatchMetrics& Watch() {
  static WatchMetrics* metrics = [] {
    MetricsRegistry& registry = MetricsRegistry::Default();
    return new WatchMetrics{
        registry
            .AddGauge("dcl_watch_streams_open",
                      "WatchMove streams open now (admitted by the stream limits)")
            .Get(),
        registry
            .AddCounter("dcl_watch_events_sent_total",
                        "move events written to WatchMove streams (history replays included)")
            .Get(),
    };
  }();
  return *metrics;
}

// Counts a stream open for as long as it lives.
class OpenStream {
 public:
  OpenStream() { Watch().streams_open.Add(1); }
  OpenStream(const OpenStream&) = delete;
  OpenStream& operator=(const OpenStream&) = delete;
  ~OpenStream() { Watch().streams_open.Add(-1); }
};

// Where a booking's slots are: one side when it claims one, "" when it claims both; the unit
// range lowest number first.
struct Position {
  std::string side;
  int first_unit = 0;
  int last_unit = 0;
};

Position PositionOf(const v1::Booking& booking) {
  Position pos;
  bool front = false, rear = false;
  bool first = true;
  for (const v1::Slot& slot : booking.slots()) {
    front |= slot.side() == v1::SIDE_FRONT;
    rear |= slot.side() == v1::SIDE_REAR;
    if (first || slot.unit() < pos.first_unit) pos.first_unit = slot.unit();
    if (first || slot.unit() > pos.last_unit) pos.last_unit = slot.unit();
    first = false;
  }
  if (front != rear) pos.side = front ? "front" : "rear";
  return pos;
}

// The end of a watch the client abandoned: nobody reads this status, but the gate logs it, and
// it is not an internal error.
absl::Status Cancelled(const std::string& message) {
  return Error(absl::StatusCode::kCancelled, v1::CANCELLED_BY_CLIENT, message);
}

absl::Status InvalidTransition(const MoveRecord& m, MoveState target) {
  const std::vector<std::string> allowed = AllowedTargetNames(m.state);
  Error error(
      absl::StatusCode::kFailedPrecondition, v1::INVALID_TRANSITION,
      absl::StrCat(
          "a move in state ", StateName(m.state), " cannot go to ", StateName(target),
          "; allowed: ", allowed.empty() ? "none (terminal state)" : absl::StrJoin(allowed, ", ")));
  error.Meta("from", StateName(m.state)).Meta("to", StateName(target)).Meta("move_id", m.id);
  for (const std::string& name : allowed) error.detail().add_allowed_targets(name);
  return error;
}

// The location history row for `move` after it reached `state`, positioned at `booking`'s
// slots; `known` false records the position as unknown.
LocationRow LocationAt(const Principal& p, const MoveRecord& m, MoveState state,
                       const std::string& rack_id, const v1::Booking* booking,
                       const std::string& note) {
  LocationRow row;
  row.org_id = p.org_id;
  row.device_id = m.device_id;
  row.event = absl::StrCat("move_", StateName(state));
  row.move_id = m.id;
  row.move_state = StateName(state);
  row.note = note;
  row.actor = p.Actor();
  if (booking != nullptr) {
    const Position pos = PositionOf(*booking);
    row.site_id = m.site_id;
    row.rack_id = rack_id;
    row.side = pos.side;
    row.first_unit = pos.first_unit;
    row.last_unit = pos.last_unit;
    row.booking_id = booking->id();
  }
  return row;
}

// Restores the process state frozen in the preflight when the move ends (completed, cancelled,
// failed), if it is still the 'moving' StartMove set; a change somebody else made in between is
// left alone.
absl::Status RestoreProcessState(pqxx::transaction_base& tx, const Principal& p,
                                 const MoveRecord& m) {
  absl::StatusOr<std::optional<DeviceRow>> device = LockDevice(tx, p.org_id, m.device_id);
  if (!device.ok()) return device.status();
  if (!device->has_value()) return NotFound("device", m.device_id);
  if ((*device)->process_state == "moving") {
    SetProcessState(tx, m.device_id,
                    m.preflight_process_state.empty() ? "normal" : m.preflight_process_state);
  }
  return absl::OkStatus();
}

// The history row for `m` after it reached `state`, at its source placement: where the
// machine is recorded until the move completes.
absl::StatusOr<LocationRow> AtSource(pqxx::transaction_base& tx, const Principal& p,
                                     const MoveRecord& m, MoveState state,
                                     const std::string& note) {
  absl::StatusOr<v1::Booking> source = occupancy::LoadBooking(tx, p, m.source_booking_id);
  if (!source.ok()) return source.status();
  return LocationAt(p, m, state, m.source_rack_id, &*source, note);
}

// The side effects of completing `m`; returns the history row at the destination.
absl::StatusOr<LocationRow> Complete(pqxx::transaction_base& tx, const Principal& p,
                                     const MoveRecord& m, const std::string& why,
                                     const std::string& note) {
  // Release the old placement first: the device index allows one active placement per
  // device, and the promotion below makes the hold one. Both in this transaction, and the
  // destination's slot rows are never touched: it is never free.
  // ReleaseBooking refuses the source of an open move (MOVE_ALREADY_OPEN), so the source is
  // active here unless a write outside the services released it; then there is nothing left
  // to release, and the machine is at the destination all the same.
  absl::StatusOr<v1::Booking> source = occupancy::LoadBooking(tx, p, m.source_booking_id);
  if (!source.ok()) return source.status();
  if (!source->has_released_at()) {
    absl::StatusOr<v1::Booking> released =
        occupancy::ReleaseBooking(tx, p, m.source_booking_id, v1::BOOKING_PLACEMENT, why);
    if (!released.ok()) return released.status();
  }
  absl::StatusOr<v1::Booking> placement = occupancy::PromoteMoveHold(tx, p, m.move_hold_booking_id);
  if (!placement.ok()) return placement.status();
  DCL_RETURN_IF_ERROR(RestoreProcessState(tx, p, m));
  FinishJob(tx, m.job_id, "succeeded");
  return LocationAt(p, m, MoveState::kCompleted, m.destination_rack_id, &*placement, note);
}

// The side effects of m.state → target, and the history row for the new state.
absl::StatusOr<LocationRow> TransitionEffects(pqxx::transaction_base& tx, const Principal& p,
                                              const MoveRecord& m, MoveState target,
                                              const std::string& note) {
  const std::string why = absl::StrCat("move ", m.id, " ", StateName(target));
  switch (target) {
    case MoveState::kCompleted:
      return Complete(tx, p, m, why, note);
    case MoveState::kFailed:
    case MoveState::kCancelled: {
      absl::StatusOr<v1::Booking> released =
          occupancy::ReleaseBooking(tx, p, m.move_hold_booking_id, v1::BOOKING_MOVE_HOLD, why);
      if (!released.ok()) return released.status();
      DCL_RETURN_IF_ERROR(RestoreProcessState(tx, p, m));
      FinishJob(tx, m.job_id, target == MoveState::kFailed ? "failed" : "cancelled");
      return AtSource(tx, p, m, target, note);
    }
    case MoveState::kNeedsReconcile:
      // Nobody knows where the machine is: the history says so instead of guessing. Both
      // bookings stay active (kDestinationRules: the destination stays held).
      return LocationAt(p, m, target, "", nullptr, note);
    case MoveState::kInProgress:
    case MoveState::kDraft:
    case MoveState::kPlanned:
    case MoveState::kApproved:
    case MoveState::kAwaitingVerification:
      // On its way, paperwork, or work reported but not verified: the recorded position is
      // unchanged.
      return AtSource(tx, p, m, target, note);
    case MoveState::kCount:
      break;
  }
  return Internal("no such move state");
}

// Applies the side effects of m.state → target and records the change. Runs inside the
// caller's transaction with the device and the move locked.
absl::Status ApplyTransition(pqxx::transaction_base& tx, const Principal& p, const MoveRecord& m,
                             MoveState target, Observation observation, const std::string& note) {
  absl::StatusOr<LocationRow> location = TransitionEffects(tx, p, m, target, note);
  if (!location.ok()) return location.status();
  UpdateState(tx, m.id, target, p.Actor());
  AppendEvent(tx, p.org_id, m.id, m.state, target, ObservationName(observation), note, p.Actor());
  AppendLocation(tx, *location);
  return absl::OkStatus();
}

// `request` and `request_id`: the AdvanceMove or CancelMove call, for the client request ledger.
absl::Status Advance(DbPool& pool, const Principal& p, const std::string& move_id, MoveState target,
                     Observation observation, const std::string& note, Rpc rpc,
                     const google::protobuf::Message& request, const std::string& request_id,
                     v1::Move* out, bool* replayed) {
  return request_ledger::TransactOnce(
      pool, p.org_id, rpc, request_id, request, out, replayed, [&](pqxx::work& tx) -> absl::Status {
        // Lock order everywhere: device, then move (StartMove locks the device first too).
        absl::StatusOr<MoveRecord> peek = LoadMove(tx, p.org_id, move_id, /*for_update=*/false);
        if (!peek.ok()) return peek.status();
        absl::StatusOr<std::optional<DeviceRow>> device = LockDevice(tx, p.org_id, peek->device_id);
        if (!device.ok()) return device.status();
        absl::StatusOr<MoveRecord> m = LoadMove(tx, p.org_id, move_id, /*for_update=*/true);
        if (!m.ok()) return m.status();
        switch (CheckTransition(m->state, target, observation)) {
          case TransitionCheck::kOk:
            break;
          case TransitionCheck::kNotAllowed:
            return InvalidTransition(*m, target);
          case TransitionCheck::kObservationRequired:
            return InvalidInput("observation",
                                "leaving needs_reconcile needs what was seen at the rack: "
                                "FOUND_AT_DESTINATION (→ completed) or NOT_MOVED (→ failed)");
          case TransitionCheck::kObservationMismatch:
            return InvalidInput(
                "observation",
                m->state == MoveState::kNeedsReconcile
                    ? "FOUND_AT_DESTINATION settles to completed, NOT_MOVED to failed"
                    : "an observation is recorded only when leaving needs_reconcile");
        }
        if (absl::Status s = ApplyTransition(tx, p, *m, target, observation, note); !s.ok()) {
          return s;
        }
        absl::StatusOr<MoveRecord> after = LoadMove(tx, p.org_id, move_id, false);
        if (!after.ok()) return after.status();
        *out = ToProto(*after);
        return absl::OkStatus();
      });
}

// StartMove's input, checked before any transaction.
absl::Status CheckStartMoveRequest(const v1::StartMoveRequest& req) {
  DCL_RETURN_IF_ERROR(CheckId("device_id", req.device_id()));
  DCL_RETURN_IF_ERROR(CheckId("destination_rack_id", req.destination_rack_id()));
  if (req.destination_side() != v1::SIDE_FRONT && req.destination_side() != v1::SIDE_REAR) {
    return InvalidInput("destination_side", "must be SIDE_FRONT or SIDE_REAR");
  }
  return CheckText("note", req.note(), kMaxNoteLength, false);
}

// Where a move goes from and to, as the preflight finds it.
struct Route {
  v1::Booking source;  // the device's active placement
  std::string source_site_id;
  std::string destination_site_id;
};

// The preflight's reads after the device lock: the placement the move starts from and the sites
// of both racks.
absl::StatusOr<Route> FindRoute(pqxx::transaction_base& tx, const Principal& p,
                                const v1::StartMoveRequest& req) {
  absl::StatusOr<std::optional<v1::Booking>> placement =
      occupancy::FindActivePlacement(tx, p, req.device_id());
  if (!placement.ok()) return placement.status();
  if (!placement->has_value()) {
    return Error(absl::StatusCode::kFailedPrecondition, v1::DEVICE_NOT_PLACED,
                 "the device has no active placement to move from")
        .Meta("device_id", req.device_id());
  }
  Route route;
  route.source = **std::move(placement);
  std::optional<RackRow> source_rack = FindRack(tx, p.org_id, route.source.rack_id());
  if (!source_rack) return Internal("the source placement's rack is not readable");
  route.source_site_id = source_rack->site_id;
  // Only existence and ownership here. Same site is the CHECK moves_same_site's decision
  // (InsertMove turns it into CROSS_SITE_MOVE); occupancy and bounds are the booking path's.
  std::optional<RackRow> destination_rack = FindRack(tx, p.org_id, req.destination_rack_id());
  if (!destination_rack) return NotFound("rack", req.destination_rack_id());
  route.destination_site_id = destination_rack->site_id;
  return route;
}

// What the preflight found, kept with the move; the checks in the order StartMove makes them.
v1::MovePreflight PreflightOf(const DeviceRow& device, const Route& route,
                              const v1::StartMoveRequest& req) {
  v1::MovePreflight preflight;
  preflight.set_process_state(device.process_state);
  v1::MovePreflight::Source& source = *preflight.mutable_source();
  source.set_booking_id(route.source.id());
  source.set_rack_id(route.source.rack_id());
  source.set_site_id(route.source_site_id);
  for (const v1::Slot& slot : route.source.slots()) {
    v1::MovePreflight::SourceSlot& kept = *source.add_slots();
    kept.set_side(occupancy::SideName(slot.side()));
    kept.set_unit(slot.unit());
  }
  v1::MovePreflight::Destination& destination = *preflight.mutable_destination();
  destination.set_rack_id(req.destination_rack_id());
  destination.set_side(occupancy::SideName(req.destination_side()));
  destination.set_unit(req.destination_unit());
  for (const char* check : {"device_in_organization", "not_in_transit", "no_open_move",
                            "device_placed", "destination_rack_in_organization"}) {
    preflight.add_checks(check);
  }
  return preflight;
}

// Inserts the move and its job, without the hold yet. Returns the move's id, or the schema's
// readable refusal (CROSS_SITE_MOVE, MOVE_ALREADY_OPEN).
absl::StatusOr<std::string> InsertStartedMove(pqxx::transaction_base& tx, const Principal& p,
                                              const v1::StartMoveRequest& req, MoveState initial,
                                              const Route& route, v1::MovePreflight preflight) {
  NewMove move;
  move.org_id = p.org_id;
  move.device_id = req.device_id();
  move.source_site_id = route.source_site_id;
  move.source_rack_id = route.source.rack_id();
  move.source_booking_id = route.source.id();
  move.destination_site_id = route.destination_site_id;
  move.destination_rack_id = req.destination_rack_id();
  move.destination_side = occupancy::SideName(req.destination_side());
  move.destination_unit = req.destination_unit();
  move.state = initial;
  move.preflight = std::move(preflight);
  move.job_id = InsertJob(tx, p.org_id, "move", absl::StrCat("device ", req.device_id()));
  move.note = req.note();
  move.actor = p.Actor();
  return InsertMove(tx, move);
}

// The new move's first event and history row: the machine is still at its source placement.
void RecordStart(pqxx::transaction_base& tx, const Principal& p, const MoveRecord& m,
                 const v1::Booking& source, const std::string& note) {
  AppendEvent(tx, p.org_id, m.id, std::nullopt, m.state, "", note, p.Actor());
  AppendLocation(tx, LocationAt(p, m, m.state, source.rack_id(), &source, note));
}

// CorrectLocation's input, checked before any transaction: an unknown position names nothing, a
// known one a rack and a unit range (checked against the rack by PlaceCorrection).
absl::Status CheckCorrectLocationRequest(const v1::CorrectLocationRequest& req) {
  if (req.corrects_id() <= 0) {
    return InvalidInput("corrects_id", "must name a row of the device's location history");
  }
  DCL_RETURN_IF_ERROR(CheckText("reason", req.reason(), kMaxNoteLength, true));
  if (req.position_unknown()) {
    if (!req.rack_id().empty() || req.side() != v1::SIDE_UNSPECIFIED || req.first_unit() != 0 ||
        req.last_unit() != 0) {
      return InvalidInput("position_unknown", "an unknown position names no rack, side or units");
    }
    return absl::OkStatus();
  }
  DCL_RETURN_IF_ERROR(CheckId("rack_id", req.rack_id()));
  if (req.side() != v1::SIDE_UNSPECIFIED && req.side() != v1::SIDE_FRONT &&
      req.side() != v1::SIDE_REAR) {
    return InvalidInput("side", "must be SIDE_FRONT, SIDE_REAR or unspecified (both sides)");
  }
  if (req.last_unit() < req.first_unit()) {
    return InvalidInput("last_unit", "must not be below first_unit (lowest number first)");
  }
  return absl::OkStatus();
}

// Sets the correction's position to the request's rack, side and units, once the rack is the
// organization's and has those units and that side.
absl::Status PlaceCorrection(pqxx::transaction_base& tx, const Principal& p,
                             const v1::CorrectLocationRequest& req, LocationRow* row) {
  std::optional<RackRow> rack = FindRack(tx, p.org_id, req.rack_id());
  if (!rack) return NotFound("rack", req.rack_id());
  const std::string units =
      absl::StrCat("the rack's units are ", rack->lowest_unit, " to ", rack->highest_unit);
  if (req.first_unit() < rack->lowest_unit) return InvalidInput("first_unit", units);
  if (req.last_unit() > rack->highest_unit) return InvalidInput("last_unit", units);
  if (req.side() == v1::SIDE_REAR && !rack->has_rear) {
    return InvalidInput("side", "the rack has no rear");
  }
  row->site_id = rack->site_id;
  row->rack_id = req.rack_id();
  row->side = req.side() == v1::SIDE_UNSPECIFIED ? "" : occupancy::SideName(req.side());
  row->first_unit = req.first_unit();
  row->last_unit = req.last_unit();
  return absl::OkStatus();
}

// The device a move starts with, locked: the row lock queues concurrent StartMove calls for
// one device, so the second sees the first's open move here (the index
// moves_one_open_per_device is the boundary all the same). A device in transit between sites
// or with an open move is refused by name.
absl::StatusOr<DeviceRow> LockMovableDevice(pqxx::transaction_base& tx, const Principal& p,
                                            const std::string& device_id) {
  absl::StatusOr<std::optional<DeviceRow>> device = LockDevice(tx, p.org_id, device_id);
  if (!device.ok()) return device.status();
  if (!device->has_value()) return NotFound("device", device_id);
  if ((*device)->process_state == "in_transit") {
    return Error(absl::StatusCode::kFailedPrecondition, v1::WRONG_STATE,
                 "the device is in transit between sites; a move starts from a placement")
        .Meta("process_state", (*device)->process_state);
  }
  if (std::optional<std::string> open = FindOpenMove(tx, device_id)) {
    return Error(absl::StatusCode::kFailedPrecondition, v1::MOVE_ALREADY_OPEN,
                 "the device already has an open move")
        .Meta("device_id", device_id)
        .Meta("move_id", *open);
  }
  return **std::move(device);
}

// The move hold at the destination, through the one booking write path: an occupied
// destination comes back as its readable UNIT_OCCUPIED with the colliding units, and nothing of
// this move stays. From then on the machine is being moved and is not for sale (eligibility.h
// excludes 'moving'); the state it had is frozen in the preflight and comes back when the move
// ends, whichever way it ends.
absl::Status HoldDestination(pqxx::transaction_base& tx, const Principal& p,
                             const v1::StartMoveRequest& req, const std::string& move_id) {
  const occupancy::BookingSpec hold = occupancy::DeviceFootprintSpec(
      v1::BOOKING_MOVE_HOLD, req.destination_rack_id(), req.device_id(), req.destination_side(),
      req.destination_unit(), absl::StrCat("move ", move_id));
  absl::StatusOr<v1::Booking> booking = occupancy::CreateBooking(tx, p, hold);
  if (!booking.ok()) return booking.status();
  SetMoveHold(tx, move_id, booking->id());
  SetProcessState(tx, req.device_id(), "moving");
  return absl::OkStatus();
}

}  // namespace

absl::Status MoveLogic::StartMove(const Principal& p, const v1::StartMoveRequest& req,
                                  v1::Move* out, bool* replayed) {
  DCL_RETURN_IF_ERROR(CheckStartMoveRequest(req));
  const MoveState initial = req.as_draft() ? MoveState::kDraft : MoveState::kPlanned;
  // TransactOnce claims the request id first: a concurrent retry with the same id waits there,
  // before any lock below.
  return request_ledger::TransactOnce(
      pool_, p.org_id, Rpc::kStartMove, req.request_id(), req, out, replayed,
      [&](pqxx::work& tx) -> absl::Status {
        absl::StatusOr<DeviceRow> device = LockMovableDevice(tx, p, req.device_id());
        if (!device.ok()) return device.status();
        absl::StatusOr<Route> route = FindRoute(tx, p, req);
        if (!route.ok()) return route.status();
        absl::StatusOr<std::string> move_id =
            InsertStartedMove(tx, p, req, initial, *route, PreflightOf(*device, *route, req));
        if (!move_id.ok()) return move_id.status();
        DCL_RETURN_IF_ERROR(HoldDestination(tx, p, req, *move_id));
        absl::StatusOr<MoveRecord> m = LoadMove(tx, p.org_id, *move_id, false);
        if (!m.ok()) return m.status();
        RecordStart(tx, p, *m, route->source, req.note());
        *out = ToProto(*m);
        return absl::OkStatus();
      });
}

absl::Status MoveLogic::AdvanceMove(const Principal& p, const v1::AdvanceMoveRequest& req,
                                    v1::Move* out, bool* replayed) {
  if (absl::Status s = CheckId("move_id", req.move_id()); !s.ok()) return s;
  MoveState target;
  if (!FromProtoState(req.target(), &target)) {
    return InvalidInput("target", "must be one of the nine move states");
  }
  Observation observation;
  if (!FromProtoObservation(req.observation(), &observation)) {
    return InvalidInput("observation", "unknown observation");
  }
  if (absl::Status s = CheckText("note", req.note(), kMaxNoteLength, false); !s.ok()) return s;
  return Advance(pool_, p, req.move_id(), target, observation, req.note(), Rpc::kAdvanceMove, req,
                 req.request_id(), out, replayed);
}

absl::Status MoveLogic::CancelMove(const Principal& p, const v1::CancelMoveRequest& req,
                                   v1::Move* out, bool* replayed) {
  if (absl::Status s = CheckId("move_id", req.move_id()); !s.ok()) return s;
  if (absl::Status s = CheckText("note", req.note(), kMaxNoteLength, false); !s.ok()) return s;
  return Advance(pool_, p, req.move_id(), MoveState::kCancelled, Observation::kNone, req.note(),
                 Rpc::kCancelMove, req, req.request_id(), out, replayed);
}

absl::Status MoveLogic::GetMove(const Principal& p, const v1::GetMoveRequest& req, v1::Move* out) {
  if (absl::Status s = CheckId("move_id", req.move_id()); !s.ok()) return s;
  return pool_.Transact([&](pqxx::work& tx) -> absl::Status {
    absl::StatusOr<MoveRecord> m = LoadMove(tx, p.org_id, req.move_id(), false);
    if (!m.ok()) return m.status();
    *out = ToProto(*m);
    return absl::OkStatus();
  });
}

absl::Status MoveLogic::ListMoves(const Principal& p, const v1::ListMovesRequest& req,
                                  v1::ListMovesResponse* out) {
  MoveFilter filter;
  if (req.state() != v1::MOVE_STATE_UNSPECIFIED) {
    MoveState state;
    if (!FromProtoState(req.state(), &state)) return InvalidInput("state", "unknown move state");
    filter.state = state;
  }
  if (!req.device_id().empty()) {
    if (absl::Status s = CheckId("device_id", req.device_id()); !s.ok()) return s;
    filter.device_id = req.device_id();
  }
  const int page_size = PageSize(req.page_size());
  absl::StatusOr<std::optional<PageCursor>> after =
      DecodePageToken(req.page_token(), PageOrder::kCreation);
  if (!after.ok()) return after.status();
  return pool_.Transact([&](pqxx::work& tx) -> absl::Status {
    Page<MoveRecord> moves = moves::ListMoves(tx, p.org_id, filter, *after, page_size + 1);
    out->Clear();
    out->set_next_page_token(EndPage(moves, page_size));
    for (const MoveRecord& m : moves.rows) *out->add_moves() = ToProto(m);
    return absl::OkStatus();
  });
}

absl::Status MoveLogic::ListLocationHistory(const Principal& p,
                                            const v1::ListLocationHistoryRequest& req,
                                            v1::ListLocationHistoryResponse* out) {
  if (absl::Status s = CheckId("device_id", req.device_id()); !s.ok()) return s;
  const int page_size = PageSize(req.page_size());
  absl::StatusOr<std::optional<PageCursor>> after =
      DecodePageToken(req.page_token(), PageOrder::kSerialId);
  if (!after.ok()) return after.status();
  return pool_.Transact([&](pqxx::work& tx) -> absl::Status {
    if (!DeviceInOrganization(tx, p.org_id, req.device_id())) {
      return NotFound("device", req.device_id());
    }
    Page<LocationRecordRow> page =
        LocationPage(tx, p.org_id, req.device_id(), *after, page_size + 1);
    const std::string next_page_token = EndPage(page, page_size);
    const std::vector<LocationRecordRow>& rows = page.rows;
    std::vector<int64_t> ids;
    ids.reserve(rows.size());
    for (const LocationRecordRow& row : rows) ids.push_back(row.id);
    const std::vector<LocationRecordRow> corrections = CorrectionsOf(tx, p.org_id, ids);
    out->Clear();
    for (const LocationRecordRow& row : rows) {
      v1::LocationRecord* record = out->add_records();
      *record = ToProto(row);
      for (const LocationRecordRow& correction : corrections) {  // newest first
        if (correction.row.corrects_id == row.id) *record->add_corrections() = ToProto(correction);
      }
    }
    out->set_next_page_token(next_page_token);
    return absl::OkStatus();
  });
}

absl::Status MoveLogic::CorrectLocation(const Principal& p, const v1::CorrectLocationRequest& req,
                                        v1::LocationRecord* out, bool* replayed) {
  DCL_RETURN_IF_ERROR(CheckCorrectLocationRequest(req));
  return request_ledger::TransactOnce(
      pool_, p.org_id, Rpc::kCorrectLocation, req.request_id(), req, out, replayed,
      [&](pqxx::work& tx) -> absl::Status {
        std::optional<LocationRecordRow> corrected = LoadLocation(tx, p.org_id, req.corrects_id());
        if (!corrected) return NotFound("location record", absl::StrCat(req.corrects_id()));
        if (corrected->row.corrects_id != 0) {
          return InvalidInput(
              "corrects_id",
              absl::StrCat("row ", corrected->id, " is itself a correction of row ",
                           corrected->row.corrects_id, "; correct row ", corrected->row.corrects_id,
                           " instead (its newest correction is what holds)"));
        }
        LocationRow row;
        row.org_id = p.org_id;
        row.device_id = corrected->row.device_id;
        row.event = "correction";
        row.corrects_id = corrected->id;
        row.note = req.reason();
        row.actor = p.Actor();
        if (!req.position_unknown()) DCL_RETURN_IF_ERROR(PlaceCorrection(tx, p, req, &row));
        const int64_t id = AppendLocation(tx, row);
        std::optional<LocationRecordRow> appended = LoadLocation(tx, p.org_id, id);
        if (!appended) return Internal("the appended correction is not readable");
        *out = ToProto(*appended);
        return absl::OkStatus();
      });
}

absl::Status MoveLogic::WatchMove(const Principal& p, const v1::WatchMoveRequest& req,
                                  const std::function<bool(const v1::MoveEvent&)>& emit,
                                  const std::function<bool()>& cancelled) {
  if (absl::Status s = CheckId("move_id", req.move_id()); !s.ok()) return s;
  // Bounded per server and per organization, so one tenant cannot take every stream. The
  // answer depends on the caller's own streams only, never on the move named.
  absl::StatusOr<StreamQuota::Ticket> ticket = watchers_.Acquire(p.org_id);
  if (!ticket.ok()) return ticket.status();
  const OpenStream counted;

  // The move's events after `last`, read through the pool in a short transaction: the stream
  // holds no database connection between reads.
  auto read = [&](int64_t last) -> absl::StatusOr<std::vector<MoveEventRecord>> {
    return pool_.Transact([&](pqxx::work& tx) -> absl::StatusOr<std::vector<MoveEventRecord>> {
      absl::StatusOr<MoveRecord> m = LoadMove(tx, p.org_id, req.move_id(), false);
      if (!m.ok()) return m.status();
      return EventsAfter(tx, p.org_id, req.move_id(), last);
    });
  };
  // Ownership first: nothing is subscribed for a move the caller cannot see.
  absl::Status owned = pool_.Transact([&](pqxx::work& tx) -> absl::Status {
    return LoadMove(tx, p.org_id, req.move_id(), false).status();
  });
  if (!owned.ok()) return owned;
  // Subscribed before the history is read: whatever commits afterwards is either in that read
  // or delivered by the hub (duplicates are dropped by sequence).
  absl::StatusOr<std::unique_ptr<MoveEventHub::Subscription>> subscription =
      Hub().Subscribe(req.move_id(), p.org_id, kWatchSubscribeTimeout);
  if (!subscription.ok()) return subscription.status();

  int64_t last = 0;
  // Emits `event` unless already delivered; true when the stream is done (terminal state).
  auto deliver = [&](const MoveEventRecord& event, bool* done) -> absl::Status {
    if (event.sequence <= last) return absl::OkStatus();
    if (!emit(ToProto(req.move_id(), event))) return Cancelled("the client went away");
    Watch().events_sent.Increment();
    last = event.sequence;
    *done = IsTerminal(event.to_state);
    return absl::OkStatus();
  };
  bool due = true;  // read the table now: the first read replays the history
  while (true) {
    if (due) {
      absl::StatusOr<std::vector<MoveEventRecord>> events = read(last);
      if (!events.ok()) return events.status();
      for (const MoveEventRecord& event : *events) {
        bool done = false;
        if (absl::Status s = deliver(event, &done); !s.ok()) return s;
        if (done) return absl::OkStatus();
      }
      due = false;
    }
    if (cancelled()) return Cancelled("the client cancelled the watch");
    MoveEventHub::Delivery delivery = (*subscription)->Wait(watch_poll_);
    due = delivery.resync;
    for (const MoveEventRecord& event : delivery.events) {
      if (event.sequence > last + 1) {
        due = true;  // a gap: the table has what the hub did not hand over
        break;
      }
      bool done = false;
      if (absl::Status s = deliver(event, &done); !s.ok()) return s;
      if (done) return absl::OkStatus();
    }
  }
}

MoveEventHub& MoveLogic::Hub() {
  std::call_once(hub_once_, [this] {
    hub_ = std::make_unique<MoveEventHub>(watch_url_.empty() ? pool_.options().url : watch_url_);
  });
  return *hub_;
}

int MoveLogic::open_watch_streams() const { return watchers_.open(); }

void MoveLogic::RegisterWatchMetrics() { Watch(); }

}  // namespace dcl::moves
