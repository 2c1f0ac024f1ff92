#include "tests/sweeper/reserve_load.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "services/common/status.h"

namespace dcl::testing {

ReserveLoad::ReserveLoad(reservation::ReservationLogic& logic, Principal principal,
                         std::string site_id, int clients, double calls_per_second)
    : logic_(logic),
      principal_(std::move(principal)),
      site_id_(std::move(site_id)),
      calls_per_second_(calls_per_second),
      samples_(clients),
      phase_started_(std::chrono::steady_clock::now()) {
  for (int c = 0; c < clients; ++c) threads_.emplace_back(&ReserveLoad::Client, this, c);
}

ReserveLoad::~ReserveLoad() { Stop(); }

void ReserveLoad::SetPhase(int phase) {
  const auto now = std::chrono::steady_clock::now();
  phase_seconds_[phase_.load()] += std::chrono::duration<double>(now - phase_started_).count();
  phase_started_ = now;
  phase_.store(phase);
}

void ReserveLoad::Stop() {
  if (stop_.exchange(true)) return;
  for (std::thread& t : threads_) t.join();
  SetPhase(-1);
}

void ReserveLoad::Client(int client) {
  const std::string prefix = absl::StrCat("load-", client, "-", reinterpret_cast<uintptr_t>(this), "-");
  using Clock = std::chrono::steady_clock;
  // Paced: this client's calls are samples_.size() / rate seconds apart, the clients' schedules
  // staggered evenly.
  const auto interval = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
      calls_per_second_ > 0 ? samples_.size() / calls_per_second_ : 0));
  Clock::time_point next = Clock::now() + interval * client / std::max<size_t>(1, samples_.size());
  for (int64_t n = 0; !stop_.load(); ++n) {
    if (calls_per_second_ > 0) {
      std::this_thread::sleep_until(next);
      next = std::max(next + interval, Clock::now());  // behind schedule: no burst to catch up
    }
    v1::ReserveRequest request;
    request.set_idempotency_key(absl::StrCat(prefix, n));
    request.mutable_criteria()->set_site_id(site_id_);
    v1::ReserveResponse response;
    const int phase = phase_.load();
    const auto start = std::chrono::steady_clock::now();
    const absl::Status status = logic_.Reserve(principal_, request, &response);
    const int64_t micros = std::chrono::duration_cast<std::chrono::microseconds>(
                               std::chrono::steady_clock::now() - start)
                               .count();
    samples_[client].push_back(
        {phase, micros, status.ok(), status.ok() ? "" : v1::Reason_Name(ReasonOf(status))});
    if (status.ok()) {
      v1::CancelRequest cancel;
      cancel.mutable_reservation()->set_reservation_id(response.reservation().id());
      v1::CancelResponse cancelled;
      logic_.Cancel(principal_, cancel, &cancelled).IgnoreError();
    }
  }
}

PhaseStats ReserveLoad::Stats(int phase) const {
  PhaseStats stats;
  std::vector<int64_t> micros;
  for (const auto& client : samples_) {
    for (const Sample& s : client) {
      if (s.phase != phase) continue;
      ++stats.calls;
      micros.push_back(s.micros);
      if (!s.ok) {
        ++stats.failures;
        ++stats.failure_reasons[s.reason];
      }
    }
  }
  if (micros.empty()) return stats;
  std::sort(micros.begin(), micros.end());
  auto percentile = [&](double p) {
    const size_t rank = static_cast<size_t>(std::ceil(p * micros.size()));
    return micros[std::min(micros.size() - 1, rank == 0 ? 0 : rank - 1)] / 1000.0;
  };
  stats.p50_ms = percentile(0.50);
  stats.p95_ms = percentile(0.95);
  stats.p99_ms = percentile(0.99);
  stats.max_ms = micros.back() / 1000.0;
  if (auto it = phase_seconds_.find(phase); it != phase_seconds_.end() && it->second > 0) {
    stats.calls_per_second = stats.calls / it->second;
  }
  return stats;
}

}  // namespace dcl::testing
