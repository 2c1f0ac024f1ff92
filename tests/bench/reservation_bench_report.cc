// The reservation benchmark's report (reservation_bench.h): the table's header and rows, the
// ceiling beside a run, the CSV row, the one-client goal and the audit of rows that must not
// exist.
#include "tests/bench/reservation_bench.h"

#include <cstdio>
#include <string>

#include "tests/bench/bench_csv.h"
#include "tests/bench/cpu_meter.h"

namespace dcl::bench::reservation_bench {

int64_t Bench::Audit() {
  const int64_t double_holds = std::stoll(
      Scalar("SELECT count(*) FROM (SELECT device_id FROM reservations WHERE state = 'held' "
             "GROUP BY device_id HAVING count(*) > 1) x"));
  const int64_t double_device = std::stoll(
      Scalar("SELECT count(*) FROM (SELECT device_id FROM service_bindings WHERE ended_at IS NULL "
             "GROUP BY device_id HAVING count(*) > 1) x"));
  const int64_t double_service = std::stoll(
      Scalar("SELECT count(*) FROM (SELECT service_id FROM service_bindings WHERE ended_at IS NULL "
             "GROUP BY service_id HAVING count(*) > 1) x"));
  const int64_t held_and_bound = std::stoll(Scalar(
      "SELECT count(*) FROM reservations r JOIN service_bindings b ON b.device_id = r.device_id "
      "AND b.ended_at IS NULL WHERE r.state = 'held'"));
  std::printf(
      "audit: machines with 2+ holds %lld, with 2+ active bindings %lld, services on "
      "2+ machines %lld, held and bound at once %lld\n",
      static_cast<long long>(double_holds), static_cast<long long>(double_device),
      static_cast<long long>(double_service), static_cast<long long>(held_and_bound));
  return double_holds + double_device + double_service + held_and_bound;
}

void Bench::CeilingRow(int clients, double ceiling, const Outcomes& o) {
  const double rate = o.latency_ms.size() / o.seconds;
  std::printf("   ceiling (one-row INSERT, %d clients): %.0f tx/s; Reserve/ceiling ratio %.3f\n",
              clients, ceiling, rate / ceiling);
  std::fflush(stdout);
}

void Bench::Csv(const std::string& scenario, const std::string& run, int clients, const Outcomes& o,
                double ceiling, double cpu_process_ms, double cpu_database_ms) {
  AppendCsv({"reservation", scenario, run, clients, o.latency_ms.size() / o.seconds,
             Percentile(o.latency_ms, 0.50), Percentile(o.latency_ms, 0.95),
             Percentile(o.latency_ms, 0.99), ceiling, cpu_process_ms, cpu_database_ms});
}

void Bench::Header() {
  std::printf("%-34s %7s %8s %7s %9s %8s %8s %8s %6s %6s %9s %7s %6s\n", "scenario", "clients",
              "machines", "calls", "calls/s", "p50 ms", "p95 ms", "p99 ms", "held", "replay",
              "contended", "no_cap", "errors");
}

void Bench::Row(const std::string& name, int clients, int machines, const Outcomes& o) {
  std::printf("%-34s %7d %8d %7zu %9.1f %8.2f %8.2f %8.2f %6d %6d %9d %7d %6d\n", name.c_str(),
              clients, machines, o.latency_ms.size(), o.latency_ms.size() / o.seconds,
              Percentile(o.latency_ms, 0.50), Percentile(o.latency_ms, 0.95),
              Percentile(o.latency_ms, 0.99), o.held, o.replay, o.contended, o.no_capacity,
              o.other);
  std::fflush(stdout);
}

void Bench::PrintOneClientGoal() {
  if (one_client_.reserve_p50_ms < 0) return;
  const bool met = one_client_.reserve_p50_ms <= 1.5;
  if (!met) ++missed_goals_;
  std::printf("\none client's Reserve p50: %.2f ms (goal <= 1.5 ms: %s)\n",
              one_client_.reserve_p50_ms, met ? "met" : "MISSED");
  // One client waits for every part of its call: the p50 is about the floor's plus the CPU
  // a Reserve costs beyond the floor's call.
  if (one_client_.reserve_cpu_ms >= 0 && one_client_.floor_cpu_ms >= 0) {
    const double beyond = one_client_.reserve_cpu_ms - one_client_.floor_cpu_ms;
    std::printf(
        "   the floor's p50 %.2f ms + Reserve's CPU per call beyond the floor's %.3f ms "
        "(server + PostgreSQL, the same run) = %.2f ms\n",
        one_client_.floor_p50_ms, beyond, one_client_.floor_p50_ms + beyond);
  }
  if (one_client_.decision_beyond_insert_ms < 0) return;
  const double least = one_client_.floor_p50_ms + one_client_.decision_beyond_insert_ms +
                       one_client_.round_trip_beyond_floor_ms;
  std::printf(
      "   the least it can be: the floor's p50 %.2f ms + beyond the floor's statement, the "
      "decision's SQL %.3f ms and its round trip %.3f ms (anatomy) = %.2f ms%s\n",
      one_client_.floor_p50_ms, one_client_.decision_beyond_insert_ms,
      one_client_.round_trip_beyond_floor_ms, least,
      least > 1.5 ? ": above the goal in this run" : "");
}

}  // namespace dcl::bench::reservation_bench
