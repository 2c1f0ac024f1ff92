// Reserve calls in a loop from several clients through the reservation service's domain logic,
// each followed by a Cancel so that the pool of free machines stays the same; the latency of
// every Reserve is tagged with the phase it started in (e.g. 0 = before, 1 = during a sweep).
// Either as fast as the clients go (a closed loop: the machine is saturated, and any other work
// on it shows in the latencies) or at a set rate of calls per second in all (each client keeps
// its own schedule and does not catch up on calls it fell behind on).
// Used by the sweeper load test and the sweeper benchmark.
#ifndef DCL_TESTS_SWEEPER_RESERVE_LOAD_H_
#define DCL_TESTS_SWEEPER_RESERVE_LOAD_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "services/common/auth.h"
#include "services/reservation/reservation_logic.h"

namespace dcl::testing {

struct PhaseStats {
  int64_t calls = 0;
  int64_t failures = 0;
  std::map<std::string, int64_t> failure_reasons;  // reason name → count
  double p50_ms = 0, p95_ms = 0, p99_ms = 0, max_ms = 0;
  double calls_per_second = 0;
};

class ReserveLoad {
 public:
  // Starts `clients` threads at once; `site_id` must have free machines for them.
  // calls_per_second: the rate of Reserve calls of all clients together, 0 = unpaced.
  ReserveLoad(reservation::ReservationLogic& logic, Principal principal, std::string site_id,
              int clients, double calls_per_second = 0);
  ReserveLoad(const ReserveLoad&) = delete;
  ReserveLoad& operator=(const ReserveLoad&) = delete;
  ~ReserveLoad();

  void SetPhase(int phase);
  // Stops and joins the clients (idempotent); Stats() is complete afterwards.
  void Stop();
  PhaseStats Stats(int phase) const;

 private:
  struct Sample {
    int phase;
    int64_t micros;
    bool ok;
    std::string reason;
  };
  void Client(int client);

  reservation::ReservationLogic& logic_;
  const Principal principal_;
  const std::string site_id_;
  const double calls_per_second_;
  std::atomic<int> phase_{0};
  std::atomic<bool> stop_{false};
  std::vector<std::vector<Sample>> samples_;  // one vector per client, merged after Stop()
  std::map<int, double> phase_seconds_;       // wall time spent in each phase
  std::chrono::steady_clock::time_point phase_started_;
  std::vector<std::thread> threads_;
};

}  // namespace dcl::testing

#endif  // DCL_TESTS_SWEEPER_RESERVE_LOAD_H_
