// Load generator for ReservationService over gRPC (a program you run, not a timed test).
//
// Starts the real service (gate + logic) on an in-process gRPC server on 127.0.0.1:0 against
// --database_url (a migrated, disposable database: it seeds its own organization), and drives it
// with N concurrent clients, each on its own thread with a blocking stub over TCP. Prints, per
// scenario: reservations/s, latency p50/p95/p99, outcome counts; then audits the database (no
// machine with two holds or two active bindings, no service on two machines).
//
// Every throughput figure is printed beside the commit ceiling measured in the same run on the
// same cluster: one-row INSERTs, one per transaction, at the same number of clients (each on its
// own connection), for the same duration; "ratio" = Reserve calls/s / INSERT tx/s. Each
// throughput run through gRPC is followed by one of the database alone (the store's prepared
// dcl_reserve call from as many connections, no gRPC, no gate), and both print their CPU per call
// (this process and the PostgreSQL cluster, from /proc) and the calls/s the cores allow at that
// cost: on a machine where load generator, server and database share two cores, that bound, not
// the commit, is what limits calls/s. A third run sends the same calls without a token, refused
// by the gate before any database work: the calls/s that gRPC and the server alone allow.
// The floor (issue 26): after each Reserve run, the echo-insert call (echo_insert_service.h) on
// the same server, gate and pool, at the same clients for as long: Reserve's calls/s, p99 and
// CPU per call (server + PostgreSQL, the load generator's threads apart) beside the least any
// call on this stack spends to commit one row, with the goals at 32 clients (calls/s >= 0.5x the
// floor's, p99 <= 25 ms, CPU per call <= 2x the floor's) marked met or MISSED.
//
// Scenarios:
//   1. throughput: 1, 8, 32, 64 clients reserving for --seconds each on a pool of
//      --machines machines (holds are cancelled between runs);
//   shared: a database that looks like production: several organizations, sites of 1,000,
//      10,000, 20,000 and 100,000 machines, statistics as one ANALYZE after seeding the first
//      site left them (the others arrive after it; no VACUUM ANALYZE before measuring): Reserve
//      p50 per site size at one client, the sites taking turns call by call (ratio 100,000 /
//      1,000 printed), throughput on the
//      10,000-machine site with the ceiling beside it, and 256 clients on 10 machines;
//   2. 256 clients on 10 machines, one Reserve each (contention: 10 holds, 246 rejections),
//      --bursts times, each beside the floor's burst of the same shape (the shared scenario's
//      burst likewise);
//   3. a pool of --big_pool machines, empty vs 95 % bound and 1 % held: Reserve latency must
//      not grow with the number of sold machines (ratio printed);
//   anatomy: each part of a hold (the key, the walk, the candidate's lock with and without its
//      probes, the hold's INSERT with and without its JSON reason), the whole dcl_reserve_call
//      and the floor's INSERT, and a refusal on a full site of 10 (the walk, the explanation,
//      the whole call), --anatomy_iterations times each in one session with a commit
//      after each: the database's CPU and WAL per part, without network or protocol;
//   token-cache: Reserve and the floor at 8 clients through the gate with the token cache and
//      through the same services behind a gate without it, taking turns (4 rounds of 2 s);
//   burst: one client reserving and cancelling for --quiet_seconds on sites of 1,000, 10,000 and
//      30,000 machines in two organizations, then bursts of --burst_seconds each at 1, 8 and 32
//      clients reserving and cancelling there, then the one client again for --quiet_seconds:
//      its p50 before, its p50 after (goal <= 1.5x before) and its p95/p50 after (goal <= 2.5x),
//      per second as well, with what the database did meanwhile (WAL, full-page images,
//      checkpoints, autovacuum) so that a stall names its cause.
//
// Run:  tests/bench/run_reservation_bench   (throwaway PostgreSQL, migrate, run)
//   or: bazel run //tests/bench:reservation_bench -- --database_url='host=... dbname=...'
//
// main() and the scenarios are here; the Bench they drive is declared in reservation_bench.h and
// defined by job in reservation_bench_{world,load,anatomy,report}.cc.
#include "tests/bench/reservation_bench.h"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "services/common/server.h"
#include "tests/bench/cpu_meter.h"

ABSL_FLAG(std::string, database_url, "", "a migrated, disposable database");
ABSL_FLAG(int, seconds, 5, "duration of each throughput run");
ABSL_FLAG(int, machines, 10000, "pool size of the throughput runs");
ABSL_FLAG(int, size_calls, 400, "Reserve calls per site in the shared scenario's size comparison");
ABSL_FLAG(int, big_pool, 100000, "pool size of the sold-machines comparison");
ABSL_FLAG(int, big_clients, 8, "clients in the sold-machines comparison");
ABSL_FLAG(int, big_calls, 800, "Reserve calls per side of the sold-machines comparison");
ABSL_FLAG(int, pool_size, 16, "database connections of the service");
ABSL_FLAG(int, burst_seconds, 6,
          "length of each burst phase (1, 8 and 32 clients) in the burst scenario");
ABSL_FLAG(int, quiet_seconds, 10, "one client's measured seconds before and after the bursts");
ABSL_FLAG(int, bursts, 5, "bursts of 256 clients on 10 machines (the median is judged)");
ABSL_FLAG(int, anatomy_iterations, 3000, "iterations of each part in the anatomy scenario");
ABSL_FLAG(std::string, scenarios, "shared,anatomy,token-cache,throughput,contention,sold,burst",
          "which scenarios to run (comma-separated)");
ABSL_FLAG(std::vector<std::string>, clients, {},
          "client counts of the throughput runs (comma-separated; default 1,8,32 in the shared "
          "scenario and 1,8,32,64 in the throughput one)");

namespace dcl::bench::reservation_bench {
namespace {

// --clients as numbers, or `fallback` when it is not given.
std::vector<int> ClientCounts(const std::vector<int>& fallback) {
  const std::vector<std::string> given = absl::GetFlag(FLAGS_clients);
  if (given.empty()) return fallback;
  std::vector<int> counts;
  for (const std::string& text : given) {
    int n = 0;
    if (!absl::SimpleAtoi(text, &n) || n < 1 || n > 1024) {
      std::fprintf(stderr, "--clients: '%s' is not a client count (1..1024)\n", text.c_str());
      std::exit(2);
    }
    counts.push_back(n);
  }
  return counts;
}

int Main() {
  const std::string url = absl::GetFlag(FLAGS_database_url);
  if (url.empty()) Bench::Die("--database_url is required (a migrated, disposable database)");
  Bench bench(url);
  bench.SetUpOrg();
  int64_t violations = 0;
  const std::string scenarios = absl::GetFlag(FLAGS_scenarios);
  auto wanted = [&](const std::string& name) { return scenarios.find(name) != std::string::npos; };
  const int bursts = absl::GetFlag(FLAGS_bursts);
  if (bursts < 1 || bursts > 1000) Bench::Die("--bursts must be 1..1000");

  // The shared database.
  if (wanted("shared")) {
    // Statistics from one ANALYZE after the largest site, before the others exist: every later
    // site is unknown to them (the situation right after a customer's first bulk import).
    const Bench::Org big_org = bench.NewOrg("big");
    const Bench::Org other_org = bench.NewOrg("other");
    const std::string s100k = bench.NewSite("shared-100k", 100000, /*analyze=*/true, big_org.id);
    const std::string s20k = bench.NewSite("shared-20k", 20000, false, other_org.id);
    const std::string s1k = bench.NewSite("shared-1k", 1000, false, big_org.id);
    const std::string s10k = bench.NewSite("shared-10k", 10000, false);
    const std::string main_token = bench.token();
    const std::string s10 = bench.NewSite("shared-10", 10, false);
    bench.NewSite("shared-5k-other", 5000, false, other_org.id);
    std::printf(
        "\n== shared database: 3 organizations, sites of 100,000 / 20,000 / 10,000 / "
        "5,000 / 1,000 / 10 machines, statistics from one ANALYZE after the first ==\n");
    std::printf(
        "-- Reserve at 1 client, %d calls per site, the sites taking turns call by call "
        "(after 20 warm-up rounds)\n",
        absl::GetFlag(FLAGS_size_calls));
    Bench::Header();
    const int calls = absl::GetFlag(FLAGS_size_calls);
    struct Sized {
      const char* name;
      int machines;
    };
    const std::vector<Sized> sized = {{"1,000 site", 1000},
                                      {"10,000 site", 10000},
                                      {"20,000 site", 20000},
                                      {"100,000 site", 100000}};
    const std::vector<Bench::SiteUnderTest> sites = {
        {s1k, big_org.token}, {s10k, main_token}, {s20k, other_org.token}, {s100k, big_org.token}};
    bench.RunInterleaved(sites, 20, "warm");
    const std::vector<Outcomes> by_site = bench.RunInterleaved(sites, calls, "size");
    double p50_1k = 0, p50_100k = 0;
    for (size_t i = 0; i < sized.size(); ++i) {
      Bench::Row(sized[i].name, 1, sized[i].machines, by_site[i]);
      Bench::Csv(sized[i].name, "service", 1, by_site[i], -1, -1, -1);
      if (sized[i].machines == 1000) p50_1k = Percentile(by_site[i].latency_ms, 0.5);
      if (sized[i].machines == 100000) p50_100k = Percentile(by_site[i].latency_ms, 0.5);
    }
    std::printf("p50 100,000-machine site / 1,000-machine site: %.2fx (goal <= 1.5x)\n",
                p50_100k / p50_1k);
    violations += bench.Audit();
    bench.CancelHolds(s10k);  // the throughput runs below start from an empty pool

    std::printf("\n-- throughput on the 10,000-machine site, %d s per run\n",
                absl::GetFlag(FLAGS_seconds));
    Bench::Header();
    for (int clients : ClientCounts({1, 8, 32})) {
      violations += bench.Throughput("shared 10k throughput", s10k, clients, 10000,
                                     absl::StrCat("shared-tp", clients));
    }

    std::printf("\n-- 256 clients, one Reserve each, 10 machines, %d bursts\n", bursts);
    violations += bench.BurstsAgainstFloor("shared 256 on 10", s10, 10, 256, bursts, "shared-c256");
    violations += bench.Audit();
  }

  if (wanted("anatomy")) bench.Anatomy(absl::GetFlag(FLAGS_anatomy_iterations));
  if (wanted("token-cache")) {
    const std::string site = bench.NewSite("token-cache", 10000);
    violations += bench.TokenCacheTurns(site, 8, 4, 2.0);
  }

  // 1. Throughput.
  const int machines = absl::GetFlag(FLAGS_machines);
  if (wanted("throughput")) {
    const std::string site = bench.NewSite("throughput", machines);
    std::printf("\n== throughput: Reserve for %d s per run, pool of %d machines ==\n",
                absl::GetFlag(FLAGS_seconds), machines);
    Bench::Header();
    for (int clients : ClientCounts({1, 8, 32, 64})) {
      violations +=
          bench.Throughput("throughput", site, clients, machines, absl::StrCat("tp", clients));
    }
  }

  // 2. Contention: 256 clients, 10 machines, one call each.
  if (wanted("contention")) {
    const std::string small = bench.NewSite("contention", 10);
    // Warm-ups, not measured, as the shared scenario's earlier runs warm its burst: without them
    // the burst would count opening the pool's connections and compiling dcl_reserve on each,
    // and the floor's burst after it would find them open.
    const std::string warm = bench.NewSite("contention-warm", 1000);
    bench.Run(warm, 32, 1.0, 0, "c256-warm", "", 500);
    bench.CancelHolds(warm);
    bench.EchoBurst(256);
    std::printf("\n== contention: 256 clients, one Reserve each, 10 machines, %d bursts ==\n",
                bursts);
    violations += bench.BurstsAgainstFloor("256 on 10", small, 10, 256, bursts, "c256");
    std::printf("\n== refusals: 32 clients reserving on the same 10 machines, all held ==\n");
    violations += bench.Refusals("refused on 10", small, 10, 32);
    violations += bench.Audit();
  }

  // After a burst, one client must not stall (issue 26, item 4).
  if (wanted("burst")) {
    const Bench::Org first = bench.NewOrg("burst-a");
    const Bench::Org second = bench.NewOrg("burst-b");
    const std::vector<Bench::SiteUnderTest> sites = {
        {bench.NewSite("burst-1k", 1000, false, first.id), first.token},
        {bench.NewSite("burst-10k", 10000, false, second.id), second.token},
        {bench.NewSite("burst-30k", 30000, true, first.id), first.token}};
    const double quiet = absl::GetFlag(FLAGS_quiet_seconds);
    const double burst = absl::GetFlag(FLAGS_burst_seconds);
    std::printf(
        "\n== burst: one client reserving and cancelling for %.0f s, bursts of %.0f s at 1, "
        "8 and 32 clients, the one client again for %.0f s (sites of 1,000 / 10,000 / "
        "30,000 machines, two organizations) ==\n",
        quiet, burst, quiet);
    long long failures = 0;
    // Per second of a phase: p50 and p95 of the Reserve calls that ended in it.
    auto per_second = [](const char* phase, const std::vector<Bench::TimedLatency>& calls) {
      std::map<int, std::vector<double>> by_second;
      for (const auto& c : calls) by_second[static_cast<int>(c.at_seconds)].push_back(c.ms);
      std::printf("   %s, per second (p50/p95 ms):", phase);
      for (const auto& [second, ms] : by_second) {
        std::printf(" %d:%.1f/%.1f", second, Percentile(ms, 0.50), Percentile(ms, 0.95));
      }
      std::printf("\n");
    };
    auto latencies = [](const std::vector<Bench::TimedLatency>& calls) {
      std::vector<double> ms;
      for (const auto& c : calls) ms.push_back(c.ms);
      return ms;
    };
    bench.ReserveAndCancel(sites, 1, 3, "burst-warm", &failures);  // plans, caches
    Bench::DatabaseActivity a0 = bench.ReadActivity();
    const auto before = bench.ReserveAndCancel(sites, 1, quiet, "burst-before", &failures);
    Bench::DatabaseActivity a1 = bench.ReadActivity();
    Bench::PrintActivity("before", a0, a1);
    per_second("before", before);
    for (int clients : {1, 8, 32}) {
      const auto calls =
          bench.ReserveAndCancel(sites, clients, burst, absl::StrCat("burst-", clients), &failures);
      std::printf("   burst at %d clients: %zu holds made and cancelled, p50 %.2f ms\n", clients,
                  calls.size(), Percentile(latencies(calls), 0.50));
    }
    Bench::DatabaseActivity a2 = bench.ReadActivity();
    Bench::PrintActivity("bursts", a1, a2);
    const auto after = bench.ReserveAndCancel(sites, 1, quiet, "burst-after", &failures);
    Bench::DatabaseActivity a3 = bench.ReadActivity();
    Bench::PrintActivity("after", a2, a3);
    per_second("after", after);
    const double p50_before = Percentile(latencies(before), 0.50);
    const double p50_after = Percentile(latencies(after), 0.50);
    const double p95_after = Percentile(latencies(after), 0.95);
    std::printf(
        "one client: p50 before %.2f ms, p50 after %.2f ms = %.2fx before (goal <= 1.5x: "
        "%s), p95 after %.2f ms = %.2fx its p50 (goal <= 2.5x: %s); failed calls %lld\n",
        p50_before, p50_after, p50_after / p50_before,
        p50_after <= 1.5 * p50_before ? "met" : "MISSED", p95_after, p95_after / p50_after,
        p95_after <= 2.5 * p50_after ? "met" : "MISSED", failures);
    if (failures > 0) ++violations;
    violations += bench.Audit();
  }

  // 3. Sold machines must not slow Reserve down.
  if (wanted("sold")) {
    const int big = absl::GetFlag(FLAGS_big_pool);
    const int clients = absl::GetFlag(FLAGS_big_clients);
    const int calls = absl::GetFlag(FLAGS_big_calls) / clients;
    const std::string large = bench.NewSite("large", big);
    std::printf("\n== %d machines: empty vs 95 %% bound + 1 %% held (%d clients, %d calls) ==\n",
                big, clients, calls * clients);
    Bench::Header();
    bench.Vacuum();
    bench.Run(large, clients, 0, 10, "warm-empty");  // warm caches and plans
    bench.CancelHolds(large);
    Outcomes empty = bench.Run(large, clients, 0, calls, "empty");
    Bench::Row("empty pool", clients, big, empty);
    bench.CancelHolds(large);
    // Sell 95 % (one dedicated service per machine) and hold 1 %, scattered over the id space.
    bench.Sql(absl::StrCat(
        "CREATE TEMP TABLE x AS SELECT id, row_number() OVER (ORDER BY random()) AS rn FROM "
        "devices "
        "WHERE site_id = '",
        large,
        "'; "
        "INSERT INTO services (org_id, kind, customer) SELECT '",
        bench.org(), "', 'dedicated', 'bench-' || rn FROM x WHERE rn <= ", big * 95 / 100,
        "; "
        "INSERT INTO service_bindings (org_id, service_id, device_id) "
        "SELECT '",
        bench.org(),
        "', s.id, x.id FROM x JOIN services s ON s.customer = 'bench-' || x.rn "
        "AND s.org_id = '",
        bench.org(), "' WHERE x.rn <= ", big * 95 / 100,
        "; "
        "INSERT INTO reservations (org_id, idempotency_key, device_id, criteria_site_id, "
        "selection_reason, expires_at) SELECT '",
        bench.org(), "', 'seed-' || rn, id, '", large,
        "', '{}', now() + interval '1 day' FROM x WHERE rn > ", big * 95 / 100,
        " AND rn <= ", big * 96 / 100));
    bench.Vacuum();
    bench.Run(large, clients, 0, 10, "warm-sold");
    Outcomes sold = bench.Run(large, clients, 0, calls, "sold");
    Bench::Row("95% bound + 1% held", clients, big, sold);
    violations += bench.Audit();
    const double p50_ratio = Percentile(sold.latency_ms, 0.5) / Percentile(empty.latency_ms, 0.5);
    const double p95_ratio = Percentile(sold.latency_ms, 0.95) / Percentile(empty.latency_ms, 0.95);
    std::printf("sold/empty latency ratio: p50 %.2fx, p95 %.2fx (bound: 1.5x)\n", p50_ratio,
                p95_ratio);
  }

  bench.PrintOneClientGoal();
  if (bench.missed_goals() > 0) {
    std::printf("\ngoals missed: %d (see the lines marked MISSED)\n", bench.missed_goals());
  }
  std::printf("\n%s\n", violations == 0 ? "audit: clean" : "audit: VIOLATIONS FOUND");
  return violations == 0 ? 0 : 1;
}

}  // namespace
}  // namespace dcl::bench::reservation_bench

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  dcl::TurnOffMutexDeadlockDetection();  // as the servers run
  return dcl::bench::reservation_bench::Main();
}
