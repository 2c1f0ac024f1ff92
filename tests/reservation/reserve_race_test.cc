// Reserve under real concurrency: every call goes through ReservationLogic (the service's own
// code path) on its own pooled connection, released together by a barrier; the partial unique
// index decides, and every loser hears a correct rejection.
#include <atomic>
#include <chrono>
#include <memory>
#include <pqxx/pqxx>
#include <thread>
#include <vector>
#include <catch2/catch.hpp>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "tests/reservation/reservation_test_util.h"

namespace dcl::reservation {
namespace {

using testing::DeviceSpec;

int64_t Holds(const ReservationEnv& env) {
  return env.db.Count("SELECT count(*) FROM reservations WHERE state = 'held'");
}

TEST_CASE(
    "eight orders on three eligible machines: three holds on three machines, five correct "
    "rejections") {
  ReservationEnv env(/*pool_size=*/12);
  // Three eligible machines and one of each kind that must drop out.
  for (int i = 0; i < 3; ++i) env.Device();
  DeviceSpec other_model;
  other_model.model = "R750";
  env.Device(other_model);
  DeviceSpec staging;
  staging.process_state = "staging";
  env.Device(staging);
  const std::string bound = env.Device();
  const std::string service = env.Service();
  env.db.Exec(absl::StrCat("INSERT INTO service_bindings (org_id, service_id, device_id) VALUES ('",
                           env.org, "', '", service, "', '", bound, "')"));

  auto results = RunTogether(8, [&](int i) {
    CallResult r;
    r.status = env.logic.Reserve(
        env.commerce, ReserveRequest(absl::StrCat("order-", i), env.site, "R650"), &r.response);
    return r;
  });
  std::set<std::string> devices;
  int holds = 0, contended = 0, no_capacity = 0;
  for (const CallResult& r : results) {
    INFO(r.status.ToString());
    if (r.status.ok()) {
      ++holds;
      CHECK_FALSE(r.response.replay());
      CHECK(r.response.reservation().state() == v1::RESERVATION_HELD);
      devices.insert(r.response.reservation().device_id());
    } else if (IsContended(r.status)) {
      ++contended;
    } else if (IsNoCapacity(r.status)) {
      ++no_capacity;
      // Only when nothing was left: all three machines visibly held, the rest excluded.
      CHECK(ExclusionCountOf(r.status, "held_by_another_order") == 3);
      CHECK(ExclusionCountOf(r.status, "wrong_model") == 1);
      CHECK(ExclusionCountOf(r.status, "not_ready_staging") == 1);
      CHECK(ExclusionCountOf(r.status, "bound_to_service") == 1);
      CHECK(GetErrorDetail(r.status)->excluded_devices_size() == 6);
    } else {
      FAIL("unexpected outcome " << r.status.ToString());
    }
  }
  CHECK(holds == 3);
  CHECK(devices.size() == 3);
  CHECK(contended + no_capacity == 5);
  CHECK(Holds(env) == 3);
  CHECK(env.db.Count("SELECT count(DISTINCT device_id) FROM reservations") == 3);
}

TEST_CASE("two orders for one machine: one hold, one rejection") {
  ReservationEnv env(4);
  const std::string device = env.Device();
  for (int round = 0; round < 5; ++round) {
    env.db.Exec(
        "UPDATE reservations SET state = 'cancelled', ended_at = now(), "
        "end_reason = 'cancelled', ended_by = 'test' WHERE state = 'held'");
    auto results = RunTogether(2, [&](int i) {
      CallResult r;
      r.status = env.logic.Reserve(
          env.commerce, ReserveRequest(absl::StrCat("r", round, "-", i), env.site), &r.response);
      return r;
    });
    int holds = 0, rejections = 0;
    for (const CallResult& r : results) {
      if (r.status.ok()) {
        ++holds;
        CHECK(r.response.reservation().device_id() == device);
      } else {
        INFO(r.status.ToString());
        CHECK((IsContended(r.status) || IsNoCapacity(r.status)));
        ++rejections;
      }
    }
    CHECK(holds == 1);
    CHECK(rejections == 1);
    CHECK(Holds(env) == 1);
  }
}

TEST_CASE(
    "five calls with the same key on four machines: exactly one hold, never a second hold, "
    "never NO_CAPACITY") {
  ReservationEnv env(8);
  for (int i = 0; i < 4; ++i) env.Device();
  for (int round = 0; round < 3; ++round) {
    const std::string key = absl::StrCat("order-", round);
    auto results = RunTogether(5, [&](int) {
      CallResult r;
      r.status = env.logic.Reserve(env.commerce, ReserveRequest(key, env.site), &r.response);
      return r;
    });
    const std::string hold_id = env.db.Scalar(
        absl::StrCat("SELECT id FROM reservations WHERE idempotency_key = '", key, "'"));
    int fresh = 0;
    for (const CallResult& r : results) {
      INFO(r.status.ToString());
      if (r.status.ok()) {
        CHECK(r.response.reservation().id() == hold_id);
        if (!r.response.replay()) ++fresh;
      } else {
        CHECK(IsContended(r.status));
      }
    }
    CHECK(fresh == 1);
    CHECK(env.db.Count(absl::StrCat("SELECT count(*) FROM reservations WHERE idempotency_key = '",
                                    key, "'")) == 1);
    // Free the machine for the next round.
    env.db.Exec(
        "UPDATE reservations SET state = 'cancelled', ended_at = now(), "
        "end_reason = 'cancelled', ended_by = 'test' WHERE state = 'held'");
  }
}

TEST_CASE("a hundred orders on a hundred machines: a hundred holds, no lost sale") {
  ReservationEnv env(20);
  env.db.Exec(absl::StrCat(
      "INSERT INTO devices (org_id, site_id, vendor, model, height_units, "
      "depth_class) SELECT '",
      env.org, "', '", env.site, "', 'Dell', 'R650', 1, 'full' FROM generate_series(1, 100)"));
  auto results = RunTogether(100, [&](int i) {
    CallResult r;
    r.status = env.logic.Reserve(env.commerce, ReserveRequest(absl::StrCat("o", i), env.site),
                                 &r.response);
    return r;
  });
  std::set<std::string> devices;
  for (const CallResult& r : results) {
    INFO(r.status.ToString());
    CHECK(r.status.ok());
    if (r.status.ok()) devices.insert(r.response.reservation().device_id());
  }
  CHECK(devices.size() == 100);
  CHECK(Holds(env) == 100);
}

TEST_CASE("a hundred orders on ten machines: ten holds, ninety rejections, no server error") {
  ReservationEnv env(20);
  for (int i = 0; i < 10; ++i) env.Device();
  auto results = RunTogether(100, [&](int i) {
    CallResult r;
    r.status = env.logic.Reserve(env.commerce, ReserveRequest(absl::StrCat("o", i), env.site),
                                 &r.response);
    return r;
  });
  std::set<std::string> devices;
  int rejections = 0, no_capacity = 0;
  for (const CallResult& r : results) {
    INFO(r.status.ToString());
    if (r.status.ok()) {
      devices.insert(r.response.reservation().device_id());
    } else {
      CHECK((IsContended(r.status) || IsNoCapacity(r.status)));
      ++rejections;
      if (IsNoCapacity(r.status)) {
        ++no_capacity;
        CHECK(ExclusionCountOf(r.status, "held_by_another_order") == 10);
      }
    }
  }
  CHECK(devices.size() == 10);
  CHECK(rejections == 90);
  CHECK(no_capacity > 0);
  CHECK(Holds(env) == 10);
}

// A rival order's hold written on its own connection without taking the device's row lock (as
// a careless future code path might) and left uncommitted: Reserve's snapshot does not see it,
// so Reserve locks the device and inserts, and the arbiter index makes that insert wait for the
// rival. The test commits the rival only once Reserve is seen waiting on it, so the race is real
// and lost every time: only the index can stop the second hold.
class Rival {
 public:
  Rival(const ReservationEnv& env, const std::string& key, const std::string& device_id)
      : conn_(env.db.Connect()), tx_(std::make_unique<pqxx::work>(*conn_)) {
    tx_->exec(absl::StrCat(
        "INSERT INTO reservations (org_id, idempotency_key, device_id, criteria_site_id, "
        "selection_reason, expires_at) VALUES ('",
        env.org, "', '", key, "', '", device_id, "', '", env.site,
        "', '{}', now() + interval '15 minutes')"));
    // pg_locks shows a transaction id as 32-bit xid.
    xid_ = tx_->exec1("SELECT (pg_current_xact_id()::text::bigint % 4294967296)::text")[0]
               .as<std::string>();
  }
  // True once another backend waits for this transaction to end.
  bool SomeoneWaits(const ReservationEnv& env) const {
    return env.db.Count(absl::StrCat("SELECT count(*) FROM pg_locks WHERE locktype = "
                                     "'transactionid' AND NOT granted AND transactionid::text = '",
                                     xid_, "'")) > 0;
  }
  void Commit() {
    tx_->commit();
    committed_ = true;
  }
  bool committed() const { return committed_; }

 private:
  std::unique_ptr<pqxx::connection> conn_;
  std::unique_ptr<pqxx::work> tx_;
  std::string xid_;
  bool committed_ = false;
};

// Runs Reserve on a thread and commits each rival as soon as Reserve waits on it.
CallResult ReserveAgainstRivals(ReservationEnv& env, const std::string& key,
                                std::vector<std::unique_ptr<Rival>>& rivals) {
  CallResult result;
  std::atomic<bool> done{false};
  std::thread caller([&] {
    result.status = env.logic.Reserve(env.commerce, ReserveRequest(key, env.site), &result.response);
    done = true;
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!done && std::chrono::steady_clock::now() < deadline) {
    for (auto& rival : rivals) {
      if (!rival->committed() && rival->SomeoneWaits(env)) rival->Commit();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  caller.join();
  return result;
}

TEST_CASE("after a lost insert race the same call goes on and holds the next candidate") {
  ReservationEnv env(4);
  const std::string first = env.Device();
  const std::string second = env.Device();
  const std::string lower = first < second ? first : second;
  const std::string higher = first < second ? second : first;
  // The walk starts before both devices, so it reaches the rival's device first.
  env.logic.SetWalkStartForTest("00000000-0000-0000-0000-000000000000");
  std::vector<std::unique_ptr<Rival>> rivals;
  rivals.push_back(std::make_unique<Rival>(env, "rival", lower));

  CallResult r = ReserveAgainstRivals(env, "mine", rivals);
  INFO(r.status.ToString());
  REQUIRE(r.status.ok());
  CHECK(rivals[0]->committed());
  CHECK(r.response.attempts() == 1);
  CHECK(r.response.candidates_examined() == 2);
  CHECK(r.response.reservation().device_id() == higher);
  CHECK(env.db.Scalar(absl::StrCat("SELECT selection_reason->>'lost_races' FROM reservations "
                                   "WHERE idempotency_key = 'mine'")) == "1");
  CHECK(Holds(env) == 2);
  CHECK(env.db.Count("SELECT count(DISTINCT device_id) FROM reservations WHERE state = 'held'") ==
        2);
}

TEST_CASE("more lost races than the attempt limit end in CONTENDED, not in a hold or an error") {
  ReservationOptions options;
  options.max_attempts = 2;
  ReservationEnv env(4, options);
  std::vector<std::unique_ptr<Rival>> rivals;
  for (int i = 0; i < 4; ++i) {
    rivals.push_back(std::make_unique<Rival>(env, absl::StrCat("rival-", i), env.Device()));
  }
  CallResult r = ReserveAgainstRivals(env, "mine", rivals);
  INFO(r.status.ToString());
  CHECK(IsContended(r.status));
  int committed = 0;
  for (const auto& rival : rivals) committed += rival->committed() ? 1 : 0;
  CHECK(committed == 2);
  CHECK(env.db.Count("SELECT count(*) FROM reservations WHERE idempotency_key = 'mine'") == 0);
}

TEST_CASE("a same-key hold committed by a path without the key lock is answered as a replay") {
  ReservationEnv env(4);
  const std::string rivals_device = env.Device();
  env.Device();
  // The rival writes the order's own key (on one device) and commits while Reserve, which did
  // not see it, waits on the key's unique index with its own insert on the other device.
  std::vector<std::unique_ptr<Rival>> rivals;
  rivals.push_back(std::make_unique<Rival>(env, "mine", rivals_device));
  CallResult r = ReserveAgainstRivals(env, "mine", rivals);
  INFO(r.status.ToString());
  REQUIRE(r.status.ok());
  CHECK(rivals[0]->committed());
  CHECK(r.response.replay());
  CHECK(r.response.reservation().device_id() == rivals_device);
  CHECK(env.db.Count("SELECT count(*) FROM reservations WHERE idempotency_key = 'mine'") == 1);
}

}  // namespace
}  // namespace dcl::reservation
