// The LISTEN side of WatchMove. Each watcher owns a dedicated PostgreSQL connection (not a
// pooled one: it stays subscribed for the whole stream) that LISTENs on the channel the
// move_events trigger notifies (dcl_move_events, payload "<move id>:<sequence>"), so a change
// committed through any replica of the move service reaches a watcher on any replica.
//
// A notification is only a wake-up call: the watcher re-reads the events table after the last
// sequence it delivered, so events arrive complete and in order even when notifications are
// merged, or sent between the LISTEN and the first read.
#ifndef DCL_SERVICES_MOVES_MOVE_WATCH_H_
#define DCL_SERVICES_MOVES_MOVE_WATCH_H_

#include <memory>
#include <pqxx/pqxx>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace dcl::moves {

inline constexpr char kMoveEventsChannel[] = "dcl_move_events";
// pg_stat_activity.application_name of a watcher's connection.
inline constexpr char kWatcherApplicationName[] = "dcl-move-watch";

class MoveEventListener {
 public:
  // Connects to `url` and subscribes (LISTEN) before returning, so that anything committed
  // after Open() returns is announced to this listener.
  static absl::StatusOr<std::unique_ptr<MoveEventListener>> Open(const std::string& url,
                                                                 const std::string& move_id);
  MoveEventListener(const MoveEventListener&) = delete;
  MoveEventListener& operator=(const MoveEventListener&) = delete;
  ~MoveEventListener();

  // Waits up to `timeout` for a notification about this move. True when at least one arrived
  // (since the last call); false on timeout. UNAVAILABLE when the connection broke.
  absl::StatusOr<bool> Wait(absl::Duration timeout);

  // The listener's own connection, for the reads that follow a wake-up (run them in a
  // transaction that ends before the next Wait).
  pqxx::connection& conn() { return *conn_; }

 private:
  class Receiver;
  MoveEventListener(std::unique_ptr<pqxx::connection> conn, const std::string& move_id);

  std::unique_ptr<pqxx::connection> conn_;
  std::unique_ptr<Receiver> receiver_;
};

}  // namespace dcl::moves

#endif  // DCL_SERVICES_MOVES_MOVE_WATCH_H_
