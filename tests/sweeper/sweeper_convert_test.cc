// The sweeper against the reservation service's own Convert (its domain logic, called
// directly): a hold that lapses while Convert runs ends exactly one way — converted with a
// binding, or expired without one — never both, never a binding on an expired hold.
#include <catch2/catch.hpp>

#include <signal.h>

#include <atomic>
#include <chrono>
#include <iostream>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include <pqxx/pqxx>

#include "absl/strings/str_cat.h"
#include "services/common/status.h"
#include "services/common/time_util.h"
#include "services/reservation/reservation_logic.h"
#include "sweeper/sweeper.h"
#include "tests/support/fixtures.h"
#include "tests/support/test_db.h"
#include "tests/sweeper/holds_seed.h"
#include "tests/sweeper/sweeper_process.h"

namespace dcl {
namespace {

using namespace std::chrono_literals;
using testing::HoldsOrg;
using testing::SweeperProcess;
using testing::TestDatabase;

struct Hold {
  std::string id;
  std::string service_id;
  std::chrono::system_clock::time_point expires_at;
};

struct ConvertOutcome {
  absl::Status status;
  std::string binding_id;
};

TEST_CASE("a hold that lapses while Convert runs ends converted with a binding or expired "
          "without one, never both") {
  TestDatabase db;
  auto conn = db.Connect();
  const HoldsOrg org = testing::SeedHoldsOrg(*conn, "acme");
  constexpr int kHolds = 400;
  testing::InsertReservations(*conn, org, kHolds, "held", 3600, "race-");
  // Deadlines 10 ms apart, starting 1.5 s from now; one dedicated service per hold.
  db.Exec("UPDATE reservations SET expires_at = clock_timestamp() + interval '1500 ms' + "
          "substring(idempotency_key from 6)::int * interval '10 ms' "
          "WHERE idempotency_key LIKE 'race-%'");
  std::vector<Hold> holds;
  {
    pqxx::work tx(*conn);
    for (const auto& row : tx.exec(absl::StrCat(
             "SELECT id, ", SqlMicros("expires_at"),
             " FROM reservations WHERE idempotency_key LIKE 'race-%' ORDER BY expires_at"))) {
      Hold hold;
      hold.id = row[0].as<std::string>();
      hold.expires_at = std::chrono::system_clock::time_point(
          std::chrono::microseconds(row[1].as<int64_t>()));
      hold.service_id = tx.exec_params1("INSERT INTO services (org_id, kind, customer) VALUES "
                                        "($1, 'dedicated', 'c') RETURNING id",
                                        org.org_id)[0]
                            .as<std::string>();
      holds.push_back(hold);
    }
    tx.commit();
  }
  REQUIRE(holds.size() == kHolds);

  auto pool = db.MakePool(16);
  reservation::ReservationLogic logic(*pool, reservation::ReservationOptions{});
  const Principal commerce = testing::PrincipalFor(org.org_id, Role::kCommerce);

  // Sweepers: the real daemon every second, and the sweep function in a tight loop so that a
  // sweep's batch and a Convert meet on the same rows as often as possible.
  SweeperProcess daemon({"--database_url=" + db.service_url(), "--interval_seconds=1", "--batch_size=5"});
  SweeperOptions tight_options;
  tight_options.name = "tight";
  tight_options.batch_size = 5;
  Sweeper tight(*pool, tight_options);
  std::atomic<bool> sweeping{true};
  std::thread tight_loop([&] {
    while (sweeping.load()) {
      tight.SweepOnce().IgnoreError();
      std::this_thread::sleep_for(1ms);
    }
  });

  // Each hold is converted at its deadline ± 40 ms, by 8 converters at once.
  std::vector<ConvertOutcome> outcomes(holds.size());
  std::vector<std::thread> converters;
  constexpr int kConverters = 8;
  for (int c = 0; c < kConverters; ++c) {
    converters.emplace_back([&, c] {
      std::mt19937 random(1234 + c);
      std::uniform_int_distribution<int> jitter_ms(-40, 40);
      for (size_t i = c; i < holds.size(); i += kConverters) {
        std::this_thread::sleep_until(holds[i].expires_at +
                                      std::chrono::milliseconds(jitter_ms(random)));
        v1::ConvertRequest request;
        request.mutable_reservation()->set_reservation_id(holds[i].id);
        request.set_service_id(holds[i].service_id);
        v1::ConvertResponse response;
        outcomes[i].status = logic.Convert(commerce, request, &response);
        outcomes[i].binding_id = response.binding().id();
      }
    });
  }
  for (std::thread& t : converters) t.join();
  sweeping.store(false);
  tight_loop.join();
  daemon.Signal(SIGTERM);
  CHECK(daemon.WaitForExit(10s) == std::optional<int>(0));

  std::map<std::string, int> by_outcome;
  for (size_t i = 0; i < holds.size(); ++i) {
    const Hold& hold = holds[i];
    const ConvertOutcome& outcome = outcomes[i];
    const pqxx::row row =
        db.Exec("SELECT state, coalesce(end_reason, ''), coalesce(service_id::text, ''), "
                "(SELECT count(*) FROM service_bindings b WHERE b.reservation_id = r.id), "
                "(SELECT count(*) FROM service_bindings b WHERE b.device_id = r.device_id) "
                "FROM reservations r WHERE id = '" + hold.id + "'")[0];
    const std::string state = row[0].as<std::string>();
    const std::string end_reason = row[1].as<std::string>();
    const int64_t bindings_of_hold = row[3].as<int64_t>();
    const int64_t bindings_of_device = row[4].as<int64_t>();
    INFO("hold " << hold.id << ": " << state << "/" << end_reason << ", Convert said "
                 << outcome.status.ToString());
    if (state == "converted") {
      // Converted: Convert succeeded, exactly one binding, the sweeper did not touch it.
      CHECK(outcome.status.ok());
      CHECK(bindings_of_hold == 1);
      CHECK(bindings_of_device == 1);
      CHECK(row[2].as<std::string>() == hold.service_id);
      CHECK(db.Count("SELECT count(*) FROM service_bindings WHERE id = '" + outcome.binding_id +
                     "' AND reservation_id = '" + hold.id + "' AND ended_at IS NULL") == 1);
    } else {
      // Expired, by the sweeper or at conversion: Convert refused with HOLD_EXPIRED, no binding.
      CHECK(state == "expired");
      CHECK((end_reason == "expired_by_sweeper" || end_reason == "expired_at_conversion"));
      CHECK(outcome.status.code() == absl::StatusCode::kFailedPrecondition);
      CHECK(ReasonOf(outcome.status) == v1::HOLD_EXPIRED);
      CHECK(bindings_of_device == 0);
    }
    ++by_outcome[state + "/" + end_reason];
  }
  // Both endings happened, and the sweeper won some races (otherwise nothing was tested).
  CHECK(by_outcome["converted/converted"] > 0);
  CHECK(by_outcome["expired/expired_by_sweeper"] > 0);
  std::cout << "lapse during Convert, " << kHolds << " holds:";
  for (const auto& [outcome, count] : by_outcome) std::cout << " " << outcome << "=" << count;
  std::cout << "\n";
}

}  // namespace
}  // namespace dcl
