// The LISTEN side of WatchMove: one hub per server process fans move events out to every open
// stream, so streams hold no database connection of their own. The hub owns two connections,
// both outside the pool: one LISTENs on the channel the move_events trigger notifies
// (dcl_move_events, payload "<move id>:<sequence>"), the other reads the notified event rows.
// A change committed through any replica reaches the watchers on every replica.
//
// A notification is delivered as the event it names, read by the hub once for all of that
// move's subscribers. Subscribers still deliver complete and in order: each keeps the last
// sequence it delivered, drops what it has seen and re-reads from the events table when it sees
// a gap or when the hub asks it to (after the hub's connection broke and came back, when
// notifications may have been missed).
#ifndef DCL_SERVICES_MOVES_MOVE_WATCH_H_
#define DCL_SERVICES_MOVES_MOVE_WATCH_H_

#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <pqxx/pqxx>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "services/moves/move_store.h"

namespace dcl::moves {

inline constexpr char kMoveEventsChannel[] = "dcl_move_events";
// pg_stat_activity.application_name of the hub's connections.
inline constexpr char kWatcherApplicationName[] = "dcl-move-watch";

class MoveEventHub {
 public:
  // What a subscriber is handed after a wait: new events of its move (in notification order),
  // and whether it must re-read the events table because notifications may have been missed.
  struct Delivery {
    std::vector<MoveEventRecord> events;
    bool resync = false;
  };

  class Subscription {
   public:
    Subscription(const Subscription&) = delete;
    Subscription& operator=(const Subscription&) = delete;
    ~Subscription();  // unsubscribes

    // Waits up to `timeout` for events or a resync request; returns what arrived (possibly
    // nothing, on timeout).
    Delivery Wait(absl::Duration timeout);

   private:
    friend class MoveEventHub;
    Subscription(MoveEventHub* hub, std::string move_id, std::string org_id)
        : hub_(hub), move_id_(std::move(move_id)), org_id_(std::move(org_id)) {}
    void Push(const MoveEventRecord& event);
    void RequestResync();

    MoveEventHub* const hub_;
    const std::string move_id_;
    const std::string org_id_;
    absl::Mutex mu_;
    absl::CondVar ready_;
    Delivery pending_ ABSL_GUARDED_BY(mu_);
  };

  // Connects lazily, on the first subscription; reconnects after a failure, every
  // `reconnect_delay`. `url` must reach PostgreSQL directly (LISTEN does not survive a
  // transaction-pooling PgBouncer).
  explicit MoveEventHub(std::string url, absl::Duration reconnect_delay = absl::Milliseconds(500));
  MoveEventHub(const MoveEventHub&) = delete;
  MoveEventHub& operator=(const MoveEventHub&) = delete;
  ~MoveEventHub();  // stops the hub's thread and closes its connections

  // Subscribes before returning: anything committed afterwards reaches the subscription (or
  // makes the hub ask it to resync). The caller has checked that `org_id` owns the move.
  // UNAVAILABLE when the hub cannot listen within `timeout` (the database is unreachable).
  absl::StatusOr<std::unique_ptr<Subscription>> Subscribe(const std::string& move_id,
                                                          const std::string& org_id,
                                                          absl::Duration timeout);

  int subscriptions() const;

 private:
  class Receiver;
  void Run();
  // One connected session: returns when the connection breaks or the hub stops.
  void Serve(pqxx::connection& listen, pqxx::connection& read);
  void Dispatch(pqxx::connection& read, const std::vector<std::string>& payloads);
  void ResyncAll();
  void Unsubscribe(Subscription* subscription);

  const std::string url_;
  const absl::Duration reconnect_delay_;
  mutable absl::Mutex mu_;
  std::map<std::string, std::set<Subscription*>> by_move_ ABSL_GUARDED_BY(mu_);
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  // Set once the LISTEN is in place; a Subscribe before that waits for it.
  bool listening_ ABSL_GUARDED_BY(mu_) = false;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace dcl::moves

#endif  // DCL_SERVICES_MOVES_MOVE_WATCH_H_
