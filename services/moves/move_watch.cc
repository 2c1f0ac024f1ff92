#include "services/moves/move_watch.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "absl/strings/numbers.h"
#include "services/common/status.h"

namespace dcl::moves {

// Collects the payloads of one wait on the listening connection.
class MoveEventHub::Receiver final : public pqxx::notification_receiver {
 public:
  explicit Receiver(pqxx::connection_base& conn)
      : pqxx::notification_receiver(conn, kMoveEventsChannel) {}
  void operator()(const std::string& payload, int /*backend_pid*/) override {
    payloads_.push_back(payload);
  }
  std::vector<std::string> Take() { return std::exchange(payloads_, {}); }

 private:
  std::vector<std::string> payloads_;
};

MoveEventHub::Subscription::~Subscription() { hub_->Unsubscribe(this); }

MoveEventHub::Delivery MoveEventHub::Subscription::Wait(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  const absl::Time deadline = absl::Now() + timeout;
  while (pending_.events.empty() && !pending_.resync) {
    if (ready_.WaitWithDeadline(&mu_, deadline)) break;
  }
  return std::exchange(pending_, Delivery{});
}

void MoveEventHub::Subscription::Push(const MoveEventRecord& event) {
  absl::MutexLock lock(&mu_);
  pending_.events.push_back(event);
  ready_.Signal();
}

void MoveEventHub::Subscription::RequestResync() {
  absl::MutexLock lock(&mu_);
  pending_.resync = true;
  ready_.Signal();
}

MoveEventHub::MoveEventHub(std::string url, absl::Duration reconnect_delay)
    : url_(std::move(url)), reconnect_delay_(reconnect_delay) {}

MoveEventHub::~MoveEventHub() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

absl::StatusOr<std::unique_ptr<MoveEventHub::Subscription>> MoveEventHub::Subscribe(
    const std::string& move_id, const std::string& org_id, absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  if (!started_) {
    started_ = true;
    thread_ = std::thread([this] { Run(); });
  }
  auto listening = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return listening_; };
  if (!mu_.AwaitWithTimeout(absl::Condition(&listening), timeout)) {
    return Error(absl::StatusCode::kUnavailable, v1::DATABASE_UNAVAILABLE,
                 "the move event listener is not connected; retry later");
  }
  std::unique_ptr<Subscription> subscription(new Subscription(this, move_id, org_id));
  by_move_[move_id].insert(subscription.get());
  return subscription;
}

int MoveEventHub::subscriptions() const {
  absl::MutexLock lock(&mu_);
  int n = 0;
  for (const auto& [move, subscribers] : by_move_) n += static_cast<int>(subscribers.size());
  return n;
}

void MoveEventHub::Unsubscribe(Subscription* subscription) {
  absl::MutexLock lock(&mu_);
  auto it = by_move_.find(subscription->move_id_);
  if (it == by_move_.end()) return;
  it->second.erase(subscription);
  if (it->second.empty()) by_move_.erase(it);
}

void MoveEventHub::ResyncAll() {
  absl::MutexLock lock(&mu_);
  for (const auto& [move, subscribers] : by_move_) {
    for (Subscription* s : subscribers) s->RequestResync();
  }
}

void MoveEventHub::Run() {
  bool reconnect = false;
  while (!stop_) {
    try {
      auto open = [this] {
        auto conn = std::make_unique<pqxx::connection>(url_);
        pqxx::nontransaction tx(*conn);
        // Named, so that operators (and tests) can tell the hub's connections apart.
        tx.exec(std::string("SET application_name = '") + kWatcherApplicationName + "'");
        return conn;
      };
      std::unique_ptr<pqxx::connection> listen = open();
      std::unique_ptr<pqxx::connection> read = open();
      Receiver receiver(*listen);  // sends LISTEN at once (no transaction is open)
      {
        absl::MutexLock lock(&mu_);
        listening_ = true;
      }
      // After a break, notifications may have been lost: every subscriber re-reads.
      if (reconnect) ResyncAll();
      while (!stop_) {
        listen->await_notification(0, 200 * 1000);
        std::vector<std::string> payloads = receiver.Take();
        if (!payloads.empty()) Dispatch(*read, payloads);
      }
    } catch (const std::exception& e) {
      spdlog::warn("move event listener lost its connection; reconnecting: {}", e.what());
    }
    {
      absl::MutexLock lock(&mu_);
      listening_ = false;
    }
    reconnect = true;
    const absl::Time until = absl::Now() + reconnect_delay_;
    while (!stop_ && absl::Now() < until) absl::SleepFor(absl::Milliseconds(20));
  }
}

void MoveEventHub::Dispatch(pqxx::connection& read, const std::vector<std::string>& payloads) {
  // The smallest notified sequence per watched move: one read per move covers the rest.
  std::map<std::string, int64_t> first_notified;
  for (const std::string& payload : payloads) {
    const size_t colon = payload.rfind(':');
    int64_t sequence = 0;
    if (colon == std::string::npos || !absl::SimpleAtoi(payload.substr(colon + 1), &sequence)) {
      continue;
    }
    const std::string move = payload.substr(0, colon);
    auto [it, inserted] = first_notified.emplace(move, sequence);
    if (!inserted) it->second = std::min(it->second, sequence);
  }
  for (const auto& [move, sequence] : first_notified) {
    // Every subscriber proved its organization owns the move before subscribing; the read is
    // scoped by it all the same (one read per organization, normally one).
    std::set<std::string> orgs;
    {
      absl::MutexLock lock(&mu_);
      auto it = by_move_.find(move);
      if (it == by_move_.end()) continue;  // nobody here watches it
      for (const Subscription* s : it->second) orgs.insert(s->org_id_);
    }
    for (const std::string& org : orgs) {
      std::vector<MoveEventRecord> events;
      {
        pqxx::read_transaction tx(read);
        events = EventsAfter(tx, org, move, sequence - 1);
        tx.commit();
      }
      absl::MutexLock lock(&mu_);
      auto it = by_move_.find(move);
      if (it == by_move_.end()) break;
      for (Subscription* s : it->second) {
        if (s->org_id_ != org) continue;
        for (const MoveEventRecord& event : events) s->Push(event);
      }
    }
  }
}

}  // namespace dcl::moves
