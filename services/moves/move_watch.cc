#include "services/moves/move_watch.h"

#include "services/common/db_errors.h"

namespace dcl::moves {

// Counts notifications whose payload names this move; other moves' events are ignored.
class MoveEventListener::Receiver final : public pqxx::notification_receiver {
 public:
  Receiver(pqxx::connection_base& conn, const std::string& move_id)
      : pqxx::notification_receiver(conn, kMoveEventsChannel), prefix_(move_id + ":") {}
  void operator()(const std::string& payload, int /*backend_pid*/) override {
    if (payload.compare(0, prefix_.size(), prefix_) == 0) ++pending_;
  }
  bool Take() {
    const bool any = pending_ > 0;
    pending_ = 0;
    return any;
  }

 private:
  const std::string prefix_;
  int pending_ = 0;
};

MoveEventListener::MoveEventListener(std::unique_ptr<pqxx::connection> conn,
                                     const std::string& move_id)
    : conn_(std::move(conn)), receiver_(std::make_unique<Receiver>(*conn_, move_id)) {}

MoveEventListener::~MoveEventListener() {
  // The receiver UNLISTENs through the connection, so it goes first.
  try {
    receiver_.reset();
  } catch (const std::exception&) {
    // A broken connection cannot unlisten; closing it ends the subscription anyway.
  }
}

absl::StatusOr<std::unique_ptr<MoveEventListener>> MoveEventListener::Open(
    const std::string& url, const std::string& move_id) {
  try {
    auto conn = std::make_unique<pqxx::connection>(url);
    {
      // Named, so that operators (and tests) can tell watcher connections apart.
      pqxx::nontransaction tx(*conn);
      tx.exec(std::string("SET application_name = '") + kWatcherApplicationName + "'");
    }
    // The receiver's constructor sends LISTEN at once (no transaction is open).
    return std::unique_ptr<MoveEventListener>(new MoveEventListener(std::move(conn), move_id));
  } catch (const std::exception& e) {
    return DbErrorToStatus(e);
  }
}

absl::StatusOr<bool> MoveEventListener::Wait(absl::Duration timeout) {
  try {
    // Deliver anything already queued first, then block on the socket.
    if (conn_->get_notifs() == 0 || !receiver_->Take()) {
      const int64_t us = absl::ToInt64Microseconds(timeout);
      conn_->await_notification(us / 1000000, us % 1000000);
      return receiver_->Take();
    }
    return true;
  } catch (const std::exception& e) {
    return DbErrorToStatus(e);
  }
}

}  // namespace dcl::moves
