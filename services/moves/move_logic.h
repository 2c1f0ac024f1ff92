// The move workflow's domain logic, free of gRPC: input validation, the preflight, transitions
// checked against the table in move_state.h with their side effects, and the watch loop.
//
// Every write is one transaction composed of move_store.h (the move, its events, the location
// history, the device's process state) and the occupancy booking write path (booking_store.h),
// which alone writes bookings and slot rows:
//   StartMove     creates the move, then its move hold at the destination (CreateBooking); an
//                 occupied destination is the booking path's readable UNIT_OCCUPIED. With the
//                 destination held the device's process state becomes 'moving' (in every
//                 open state, draft included: Reserve does not sell a moving device), and the
//                 state it had is frozen in the preflight.
//   → completed   the old placement is released and the move hold promoted (PromoteMoveHold:
//                 same booking id, same slot rows), in that order, in one transaction: there is
//                 no moment in which the destination is free. The process state is restored
//                 (a device from 'staging' goes back to 'staging').
//   → failed / cancelled  the move hold is released, the source placement kept, the process
//                 state restored from the frozen preflight (a device from 'staging' goes back to
//                 'staging').
// Every state change appends a move event (announced by NOTIFY on commit) and a location
// history row. Both tables are append-only (triggers refuse UPDATE, DELETE, TRUNCATE); the
// history is corrected by compensating rows (CorrectLocation) and read by ListLocationHistory.
#ifndef DCL_SERVICES_MOVES_MOVE_LOGIC_H_
#define DCL_SERVICES_MOVES_MOVE_LOGIC_H_

#include <atomic>
#include <functional>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "dcl/v1/moves.pb.h"
#include "services/common/db.h"
#include "services/common/principal.h"
#include "services/common/stream_quota.h"
#include "services/moves/move_watch.h"

namespace dcl::moves {

class MoveLogic {
 public:
  // `watch_poll` bounds how long WatchMove waits before it checks for a cancelled client.
  // `watch_limits` bounds the concurrent WatchMove streams of the server and of each
  // organization, so no tenant takes every stream. Streams hold no database connection: one
  // hub per MoveLogic listens for all of them (move_watch.h), connecting to `watch_url` (empty:
  // the pool's URL; it must reach PostgreSQL directly, LISTEN does not pass a transaction
  // pooler).
  explicit MoveLogic(DbPool& pool, absl::Duration watch_poll = absl::Milliseconds(200),
                     StreamLimits watch_limits = {}, std::string watch_url = "")
      : pool_(pool),
        watch_poll_(watch_poll),
        watchers_(watch_limits),
        watch_url_(std::move(watch_url)) {
    RegisterWatchMetrics();
  }
  MoveLogic(const MoveLogic&) = delete;
  MoveLogic& operator=(const MoveLogic&) = delete;

  // The writes take the request's client request id (request_ledger.h), claimed in the write's
  // own transaction (the booking store calls of a move run inside it): a call with an id
  // already answered sets *replayed (may be null) and returns the first answer.
  absl::Status StartMove(const Principal& p, const v1::StartMoveRequest& req, v1::Move* out,
                         bool* replayed = nullptr);
  absl::Status AdvanceMove(const Principal& p, const v1::AdvanceMoveRequest& req, v1::Move* out,
                           bool* replayed = nullptr);
  absl::Status CancelMove(const Principal& p, const v1::CancelMoveRequest& req, v1::Move* out,
                          bool* replayed = nullptr);
  absl::Status GetMove(const Principal& p, const v1::GetMoveRequest& req, v1::Move* out);
  absl::Status ListMoves(const Principal& p, const v1::ListMovesRequest& req,
                         v1::ListMovesResponse* out);

  // The device's location history, newest first, paged by rows that are not corrections; each
  // row carries its corrections, newest first (the first is what holds now).
  absl::Status ListLocationHistory(const Principal& p, const v1::ListLocationHistoryRequest& req,
                                   v1::ListLocationHistoryResponse* out);
  // Appends a correction of one history row: a new row (event "correction", corrects_id, the
  // reason as its note) with the position the device really had, or none when it is not known.
  // The corrected row is never changed (the table refuses it). A correction corrects an original
  // row, never another correction: a wrong correction is corrected by a newer one of the same row.
  absl::Status CorrectLocation(const Principal& p, const v1::CorrectLocationRequest& req,
                               v1::LocationRecord* out, bool* replayed = nullptr);

  // Replays the move's events from the first, then emits each new one as it is committed, in
  // order, exactly once; returns OK after emitting a terminal state. Returns CANCELLED when
  // `cancelled()` turns true (checked at least every watch_poll) or `emit` returns false (client
  // gone), and RESOURCE_EXHAUSTED when the server's or the caller's organization's streams are at
  // their limit.
  absl::Status WatchMove(const Principal& p, const v1::WatchMoveRequest& req,
                         const std::function<bool(const v1::MoveEvent&)>& emit,
                         const std::function<bool()>& cancelled);

  // Streams open right now, on this MoveLogic (for tests; the process's metrics count the
  // same as dcl_watch_streams_open, with dcl_watch_events_sent_total).
  int open_watch_streams() const;

 private:
  DbPool& pool_;
  const absl::Duration watch_poll_;
  MoveEventHub& Hub();
  // dcl_watch_* in the process's registry, so that a scrape shows them (as 0) before the first
  // watch.
  static void RegisterWatchMetrics();

  StreamQuota watchers_;
  const std::string watch_url_;
  std::once_flag hub_once_;
  std::unique_ptr<MoveEventHub> hub_;  // created on the first watch
};

}  // namespace dcl::moves

#endif  // DCL_SERVICES_MOVES_MOVE_LOGIC_H_
