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
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "dcl/v1/reservation.grpc.pb.h"
#include "services/common/auth.h"
#include "services/common/db.h"
#include "services/common/grpc_status.h"
#include "services/common/rpc_gate.h"
#include "services/common/server.h"
#include "services/reservation/reservation_logic.h"
#include "services/reservation/reservation_service.h"
#include "services/reservation/reservation_store.h"
#include "tests/bench/bench_csv.h"
#include "tests/bench/cpu_meter.h"
#include "tests/bench/echo_floor.h"
#include "tests/bench/echo_insert_service.h"
#include "tests/bench/insert_ceiling.h"
#include "tests/bench/run_together.h"

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

namespace dcl::bench {
namespace {

using Clock = std::chrono::steady_clock;

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

struct Outcomes {
  int held = 0, replay = 0, contended = 0, no_capacity = 0, other = 0;
  int unauthenticated = 0;  // the gate's refusal of a call without a token (the gRPC-only run)
  std::vector<double> latency_ms;
  double seconds = 0;
  double load_generator_cpu_seconds = 0;  // the client threads' CPU while they made calls
  void Merge(const Outcomes& o) {
    held += o.held;
    replay += o.replay;
    contended += o.contended;
    no_capacity += o.no_capacity;
    other += o.other;
    unauthenticated += o.unauthenticated;
    load_generator_cpu_seconds += o.load_generator_cpu_seconds;
    latency_ms.insert(latency_ms.end(), o.latency_ms.begin(), o.latency_ms.end());
  }
};

LoadRun AsLoadRun(const Outcomes& o) {
  LoadRun run;
  run.latency_ms = o.latency_ms;
  run.seconds = o.seconds;
  run.load_generator_cpu_seconds = o.load_generator_cpu_seconds;
  run.failed = o.other;
  return run;
}

class Bench {
 public:
  explicit Bench(const std::string& url) : url_(url) {
    DbOptions options;
    options.url = url;
    options.pool_size = absl::GetFlag(FLAGS_pool_size);
    pool_ = std::make_unique<DbPool>(options);
    tokens_ = StartTokenCacheFromFlags(url);
    gate_ = std::make_unique<RpcGate>(*pool_, tokens_.get());
    logic_ =
        std::make_unique<reservation::ReservationLogic>(*pool_, reservation::ReservationOptions{});
    service_ = std::make_unique<reservation::ReservationServiceImpl>(*gate_, *logic_);
    // The floor is admitted as Reserve: the same token lookup, role check and metrics.
    EchoInsertServiceImpl::CreateTable(url);
    echo_ = std::make_unique<EchoInsertServiceImpl>(*gate_, *pool_, Rpc::kReserve);
    ServerConfig config;
    config.listen_address = "127.0.0.1:0";
    config.reflection = false;
    auto runtime = ServerRuntime::Start(
        config, pool_.get(),
        {{"dcl.v1.ReservationService", service_.get()}, {kEchoInsertServiceName, echo_.get()}});
    if (!runtime.ok()) Die(runtime.status().ToString());
    runtime_ = std::move(*runtime);
    channels_ = DistinctChannels(runtime_->port(), 4);
    if (tokens_ != nullptr) {
      // The same services, pool and logic behind a gate without the cache, on a port of its own:
      // the token-cache scenario takes turns between the two in one run.
      uncached_gate_ = std::make_unique<RpcGate>(*pool_);
      uncached_service_ =
          std::make_unique<reservation::ReservationServiceImpl>(*uncached_gate_, *logic_);
      uncached_echo_ = std::make_unique<EchoInsertServiceImpl>(*uncached_gate_, *pool_,
                                                               Rpc::kReserve);
      auto uncached = ServerRuntime::Start(config, pool_.get(),
                                           {{"dcl.v1.ReservationService", uncached_service_.get()},
                                            {kEchoInsertServiceName, uncached_echo_.get()}});
      if (!uncached.ok()) Die(uncached.status().ToString());
      uncached_runtime_ = std::move(*uncached);
      uncached_channels_ = DistinctChannels(uncached_runtime_->port(), 4);
    }
  }
  ~Bench() {
    if (uncached_runtime_) uncached_runtime_->Shutdown();
    runtime_->Shutdown();
  }

  static void Die(const std::string& why) {
    std::fprintf(stderr, "reservation_bench: %s\n", why.c_str());
    std::exit(1);
  }

  void Sql(const std::string& sql) {
    pqxx::connection conn(url_);
    pqxx::work tx(conn);
    tx.exec(sql);
    tx.commit();
  }
  // VACUUM ANALYZE outside a transaction: after bulk seeding, so that autovacuum does not start
  // on the fresh rows in the middle of a measurement.
  void Vacuum(const char* statement = "VACUUM ANALYZE") {
    pqxx::connection conn(url_);
    pqxx::nontransaction tx(conn);
    tx.exec(statement);
  }
  // The site's holds cancelled and the rows that left dead vacuumed before the next measured
  // phase starts. Left to autovacuum, that work lands in whichever phase runs next: the floor
  // after Reserve's cancels, Reserve after the warm-up's and the previous run's. In two full runs
  // of 2026-12-03 it landed once in each, and the ratio at 32 clients read 3.30x and 2.30x (a
  // profile put autovacuum at 0.066 of the floor's 0.325 ms of PostgreSQL per call). A phase
  // still pays for what its own writes leave. No ANALYZE: the statistics stay as the scenario set
  // them.
  void CancelHoldsAndVacuum(const std::string& site) {
    CancelHolds(site);
    Vacuum("VACUUM");
  }
  std::string Scalar(const std::string& sql) {
    pqxx::connection conn(url_);
    pqxx::work tx(conn);
    pqxx::row row = tx.exec1(sql);
    tx.commit();
    return row[0].is_null() ? "" : row[0].as<std::string>();
  }

  // A fresh organization with the module on and a commerce token; the first one made is the
  // default of the scenarios that use one organization.
  struct Org {
    std::string id, token;
  };
  Org NewOrg(const std::string& label) {
    const std::string name = absl::StrCat(
        "bench-", label, "-", std::chrono::system_clock::now().time_since_epoch().count());
    Org org;
    org.id =
        Scalar(absl::StrCat("INSERT INTO organizations (name) VALUES ('", name, "') RETURNING id"));
    Sql("UPDATE feature_settings SET enabled = true WHERE feature = 'datacenter'");
    Sql(absl::StrCat(
        "INSERT INTO organization_feature_settings (org_id, feature, enabled) VALUES ('", org.id,
        "', 'datacenter', true)"));
    auto token = CreateToken(*pool_, org.id, Role::kCommerce, "", "bench");
    if (!token.ok()) Die(token.status().ToString());
    org.token = token->token;
    return org;
  }
  void SetUpOrg() {
    Org org = NewOrg("main");
    org_ = org.id;
    token_ = org.token;
  }

  // A site of `machines` ready machines; `analyze` refreshes the statistics afterwards.
  std::string NewSite(const std::string& name, int machines, bool analyze = true,
                      const std::string& in_org = "") {
    const std::string org = in_org.empty() ? org_ : in_org;
    const std::string site = Scalar(absl::StrCat("INSERT INTO sites (org_id, name) VALUES ('", org,
                                                 "', '", name, "') RETURNING id"));
    Sql(absl::StrCat(
        "INSERT INTO devices (org_id, site_id, vendor, model, height_units, "
        "depth_class) SELECT '",
        org, "', '", site, "', 'Dell', 'R650', 1, 'full' FROM generate_series(1, ", machines, ")"));
    if (analyze) Sql("ANALYZE devices");
    return site;
  }

  void CancelHolds(const std::string& site) {
    Sql(
        absl::StrCat("UPDATE reservations SET state = 'cancelled', end_reason = 'cancelled', "
                     "ended_at = now(), ended_by = 'bench' WHERE state = 'held' AND "
                     "criteria_site_id = '",
                     site, "'"));
  }

  // One Reserve of `key` on `site`, with `authorization` metadata unless it is empty: its
  // latency, and a hold or replay, counted into `into`; the answer into `answer` if given. The
  // caller classifies a refusal.
  static grpc::Status TimedReserve(v1::ReservationService::Stub& stub, const std::string& key,
                                   const std::string& site, const std::string& authorization,
                                   Outcomes& into, v1::ReserveResponse* answer = nullptr) {
    v1::ReserveRequest request;
    request.set_idempotency_key(key);
    request.mutable_criteria()->set_site_id(site);
    grpc::ClientContext context;
    if (!authorization.empty()) context.AddMetadata("authorization", authorization);
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    v1::ReserveResponse response;
    const auto t0 = Clock::now();
    grpc::Status status = stub.Reserve(&context, request, &response);
    into.latency_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    if (status.ok()) (response.replay() ? into.replay : into.held)++;
    if (answer != nullptr) *answer = std::move(response);
    return status;
  }

  // A refusal the scenario does not expect: counted, and the first three printed.
  static void CountUnexpected(const grpc::Status& status, Outcomes& into) {
    into.other++;
    if (into.other <= 3) {
      std::fprintf(stderr, "unexpected: %d %s\n", static_cast<int>(status.error_code()),
                   status.error_message().c_str());
    }
  }

  // The floor of a burst: `clients` threads, one echo INSERT each, released together as Run
  // releases its clients, through the same server.
  LoadRun EchoBurst(int clients) {
    EchoShape shape;
    shape.run = "echo-insert floor, one call each";
    shape.calls_per_client = 1;
    return RunEchoInsert(channels_, clients, 0, "Bearer " + token_, shape);
  }

  // `bursts` times: `clients` clients, one Reserve each on `site` (its `machines` all free),
  // released together, then the floor's burst of the same shape (EchoBurst); the holds are
  // cancelled after each. Both are counted from the clients' common start, so that spawning the
  // threads weighs on neither, and each has its CPU per call (server + PostgreSQL, the load
  // generator apart, /proc). One burst lasts about a quarter of a second, and single bursts moved
  // 800-1,070 decisions/s between runs: the goal is judged on the median burst. Every decision
  // beyond the first `machines` is a refusal, so the CPU per decision is mostly a refusal's.
  // Returns violations: a burst without exactly `machines` holds, a server error, a failed floor
  // call.
  int64_t BurstsAgainstFloor(const std::string& name, const std::string& site, int machines,
                             int clients, int bursts, const std::string& prefix) {
    struct Tally {
      std::vector<double> per_second;
      ServerCpuOverRuns cpu;
      void Add(size_t calls, double run_seconds, const CpuSeconds& before, const CpuSeconds& after,
               double load_generator) {
        per_second.push_back(run_seconds > 0 ? calls / run_seconds : 0);
        cpu.Add(before, after, load_generator, static_cast<long long>(calls));
      }
      double median() const { return Percentile(per_second, 0.5); }
    };
    Tally decisions, floor;
    std::vector<double> with_spawn_per_second;  // the same decisions, the spawn counted
    Outcomes all;
    int64_t violations = 0;
    // A first burst, not counted: a connection compiles the refusal's statements the first time
    // it refuses, which the warm-ups before (all holds) never did.
    Run(site, clients, 0, 1, prefix + "-first");
    CancelHolds(site);
    Header();
    for (int burst = 0; burst < bursts; ++burst) {
      CpuSeconds before = ReadCpuSeconds(url_);
      const auto t0 = Clock::now();
      Outcomes o = Run(site, clients, 0, 1, absl::StrCat(prefix, "-", burst));
      const double spawned = std::chrono::duration<double>(Clock::now() - t0).count();
      CpuSeconds after = ReadCpuSeconds(url_);
      decisions.Add(o.latency_ms.size(), o.seconds, before, after, o.load_generator_cpu_seconds);
      with_spawn_per_second.push_back(o.latency_ms.size() / spawned);
      Row(absl::StrCat(name, ", burst ", burst + 1), clients, machines, o);
      if (o.held != machines || o.other != 0) {
        std::printf("UNEXPECTED: %d holds, %d errors\n", o.held, o.other);
        ++violations;
      }
      all.Merge(o);
      before = ReadCpuSeconds(url_);
      const LoadRun f = EchoBurst(clients);
      after = ReadCpuSeconds(url_);
      floor.Add(f.latency_ms.size(), f.seconds, before, after, f.load_generator_cpu_seconds);
      if (f.failed > 0) ++violations;
      CancelHolds(site);
    }
    all.seconds = all.latency_ms.size() / std::max(1e-9, decisions.median());
    Csv(name, "service", clients, all, -1, -1, -1);
    const double ratio = floor.median() > 0 ? decisions.median() / floor.median() : 0;
    std::printf(
        "   median of %d bursts, from the common start: %.0f decisions/s (%.0f "
        "counting the threads' spawn); the floor's burst (as many clients, one echo INSERT "
        "each): %.0f calls/s; decisions / floor %.3f\n",
        bursts, decisions.median(), Percentile(with_spawn_per_second, 0.5), floor.median(), ratio);
    const bool met = decisions.median() >= 1000;
    if (!met) ++missed_goals_;
    std::printf("   %d on %d: %.0f decisions/s (goal >= 1,000: %s)\n", clients, machines,
                decisions.median(), met ? "met" : "MISSED");
    // The CPU is read from before the threads are spawned to after they are joined: both
    // figures carry a burst's own cost (threads, stubs, first calls), alike.
    const ServerCpuPerCall decision_cpu = decisions.cpu.PerCall();
    const ServerCpuPerCall floor_cpu = floor.cpu.PerCall();
    std::printf(
        "   CPU per call, server + PostgreSQL, the bursts' thread spawn included: decision %.3f "
        "+ %.3f = %.3f ms, floor %.3f + %.3f = %.3f ms (%.2fx)\n",
        decision_cpu.server_ms, decision_cpu.database_ms, decision_cpu.total_ms(),
        floor_cpu.server_ms, floor_cpu.database_ms, floor_cpu.total_ms(),
        floor_cpu.total_ms() > 0 ? decision_cpu.total_ms() / floor_cpu.total_ms() : 0);
    return violations;
  }

  // Refusals as a steady stream: `clients` clients reserving for --seconds on `site`, whose
  // `machines` are all held first, beside the floor at as many clients. A burst's decisions are
  // nearly all refusals; here their CPU per call is read without a burst's thread spawn, and
  // --profile="Reserve refused" can split it. Returns violations: a call that was not refused
  // for want of capacity, a failed floor call.
  int64_t Refusals(const std::string& name, const std::string& site, int machines, int clients) {
    const double seconds = absl::GetFlag(FLAGS_seconds);
    const Outcomes held = Run(site, 1, 0, machines, name + "-hold");
    int64_t violations = held.held == machines ? 0 : 1;
    Run(site, clients, 0.5, 0, name + "-warm");  // every connection compiles the refusal's path
    const CpuSeconds before = ReadCpuSeconds(url_);
    AnnouncePhase("Reserve refused", seconds, clients);
    const Outcomes o = Run(site, clients, seconds, 0, name);
    AnnouncePhaseEnd("Reserve refused", static_cast<long long>(o.latency_ms.size()), o.seconds);
    const CpuSeconds after = ReadCpuSeconds(url_);
    Header();
    Row(name, clients, machines, o);
    const ServerCpuPerCall cpu =
        MeasureServerCpuPerCall(before, after, o.load_generator_cpu_seconds, o.latency_ms.size());
    PrintServerCpuPerCall(cpu);
    Csv(name, "service", clients, o, -1, cpu.server_ms, cpu.database_ms);
    if (o.no_capacity != static_cast<int>(o.latency_ms.size())) ++violations;
    const FloorRun floor = MeasureEchoInsertFloor(url_, channels_, clients, seconds,
                                                  "Bearer " + token_, "reservation", name, -1);
    PrintAgainstFloor("Reserve refused", AsLoadRun(o), cpu, floor.run, floor.cpu, FloorGoals{});
    if (floor.run.failed > 0) ++violations;
    CancelHolds(site);
    return violations;
  }

  // clients threads; each calls Reserve until `until` (or `calls_per_client` calls if > 0); all
  // together make at most `max_calls` calls if > 0. Without `authorize` the calls carry no token
  // and the gate refuses them before any database work: what gRPC and the server cost alone.
  Outcomes Run(const std::string& site, int clients, double seconds, int calls_per_client,
               const std::string& prefix, const std::string& token = "", int max_calls = 0,
               bool authorize = true) {
    std::atomic<int> issued{0};
    const std::string bearer = "Bearer " + (token.empty() ? token_ : token);
    std::vector<Outcomes> per(clients);
    Outcomes total;
    total.seconds = RunTogether(clients, [&](int c, const std::function<void()>& start) {
      auto stub = v1::ReservationService::NewStub((*route_)[c % route_->size()]);
      start();
      const double cpu_start = ThisThreadCpuSeconds();
      const auto until = Clock::now() + std::chrono::duration<double>(seconds);
      for (int i = 0;; ++i) {
        if (calls_per_client > 0 ? i >= calls_per_client : Clock::now() >= until) break;
        if (max_calls > 0 && issued++ >= max_calls) break;
        const grpc::Status status = TimedReserve(*stub, absl::StrCat(prefix, "-", c, "-", i), site,
                                                 authorize ? bearer : "", per[c]);
        if (status.ok()) continue;
        auto detail = ErrorDetailFromGrpc(status);
        const v1::Reason reason = detail ? detail->reason() : v1::REASON_UNSPECIFIED;
        if (!authorize && status.error_code() == grpc::StatusCode::UNAUTHENTICATED &&
            reason == v1::UNAUTHENTICATED_CALLER) {
          per[c].unauthenticated++;
        } else if (status.error_code() == grpc::StatusCode::ABORTED && reason == v1::CONTENDED) {
          per[c].contended++;
        } else if (status.error_code() == grpc::StatusCode::FAILED_PRECONDITION &&
                   reason == v1::NO_CAPACITY) {
          per[c].no_capacity++;
        } else {
          CountUnexpected(status, per[c]);
        }
      }
      per[c].load_generator_cpu_seconds = ThisThreadCpuSeconds() - cpu_start;
    });
    for (const auto& o : per) total.Merge(o);
    return total;
  }

  // The database alone: `clients` connections calling the store's ReserveInDatabase (the same
  // prepared dcl_reserve statement the service sends, in autocommit) for `seconds`, with no gRPC,
  // no gate and no token lookup. What Reserve could reach if the service cost nothing.
  Outcomes RunDirect(const std::string& site, int clients, double seconds, int max_calls,
                     const std::string& prefix) {
    std::atomic<int> issued{0};
    std::vector<Outcomes> per(clients);
    Outcomes total;
    total.seconds = RunTogether(clients, [&](int c, const std::function<void()>& start) {
      pqxx::connection conn(url_);
      reservation::Criteria criteria;
      criteria.site_id = site;
      start();
      const auto until = Clock::now() + std::chrono::duration<double>(seconds);
      for (int i = 0; Clock::now() < until && issued++ < max_calls; ++i) {
        const auto t0 = Clock::now();
        pqxx::nontransaction tx(conn);
        PreparedStatementScope prepared(true);  // as on the service's own connections
        const reservation::ReserveOutcome outcome = reservation::ReserveInDatabase(
            tx, org_, absl::StrCat(prefix, "-", c, "-", i), criteria,
            reservation::RandomWalkStart(), 900, "bench", reservation::WalkLimits{},
            reservation::ReservationOptions{}.max_listed_devices, absl::InfiniteFuture());
        per[c].latency_ms.push_back(
            std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
        switch (outcome.kind) {
          case reservation::ReserveOutcome::Kind::kHeld:
            per[c].held++;
            break;
          case reservation::ReserveOutcome::Kind::kReplay:
            per[c].replay++;
            break;
          case reservation::ReserveOutcome::Kind::kContended:
            per[c].contended++;
            break;
          case reservation::ReserveOutcome::Kind::kNoCandidate:
          case reservation::ReserveOutcome::Kind::kWalkLimit:
            per[c].no_capacity++;
            break;
          case reservation::ReserveOutcome::Kind::kNoSite:
            per[c].other++;
            break;
        }
      }
    });
    for (const auto& o : per) total.Merge(o);
    return total;
  }

  // One run of Reserve through gRPC and one of the database alone at `clients`, each beside the
  // ceiling and with its CPU per call, so that a run shows what the service adds and what the
  // cores allow; then the same calls without a token, refused by the gate before the database:
  // the calls/s gRPC and the server allow on these cores if the database cost nothing. Each run
  // stops after --seconds or when half the site is held, whichever comes first: a run that sold the
  // whole site would measure walks past ever more held machines and, at the end, refusals, not the
  // cost of a hold. Holds are cancelled after each.
  int64_t Throughput(const std::string& name, const std::string& site, int clients, int machines,
                     const std::string& prefix) {
    const double seconds = absl::GetFlag(FLAGS_seconds);
    const int max_calls = machines / 2;
    CpuSeconds before = ReadCpuSeconds(url_);
    const double ceiling = InsertCeiling(url_, clients, seconds);
    CpuSeconds after = ReadCpuSeconds(url_);
    std::printf("   ceiling (one-row INSERT, %d clients): %.0f tx/s\n", clients, ceiling);
    const CpuPerCall ceiling_cpu =
        PrintCpuPerCall(before, after, static_cast<long long>(ceiling * seconds), "INSERT client");
    AppendCsv({"reservation", name, "ceiling", clients, ceiling, -1, -1, -1, ceiling,
               ceiling_cpu.process_ms, ceiling_cpu.database_ms});
    // Warm-ups, not measured: every pool connection the run will use plans its statements and
    // compiles dcl_reserve once; without them a short run counts that as Reserve's cost.
    Run(site, clients, 1.0, 0, prefix + "-warm", "", max_calls / 4);
    CancelHoldsAndVacuum(site);
    before = ReadCpuSeconds(url_);
    AnnouncePhase("Reserve", seconds, clients);
    const Outcomes o = Run(site, clients, seconds, 0, prefix, "", max_calls);
    AnnouncePhaseEnd("Reserve", static_cast<long long>(o.latency_ms.size()), o.seconds);
    after = ReadCpuSeconds(url_);
    Row(name, clients, machines, o);
    CeilingRow(clients, ceiling, o);
    const ServerCpuPerCall reserve_cpu =
        MeasureServerCpuPerCall(before, after, o.load_generator_cpu_seconds, o.latency_ms.size());
    PrintServerCpuPerCall(reserve_cpu);
    Csv(name, "service", clients, o, ceiling, reserve_cpu.server_ms, reserve_cpu.database_ms);
    int64_t violations = Audit();
    CancelHoldsAndVacuum(site);
    // The floor: one INSERT and its commit through the same server, gate and pool.
    const FloorRun floor = MeasureEchoInsertFloor(url_, channels_, clients, seconds,
                                                  "Bearer " + token_, "reservation", name, ceiling);
    FloorGoals goals;
    goals.print = clients == 32;  // the issue states the goals at 32 clients
    goals.max_p99_ms = 25;
    missed_goals_ +=
        PrintAgainstFloor("Reserve", AsLoadRun(o), reserve_cpu, floor.run, floor.cpu, goals);
    if (clients == 1 && one_client_.reserve_p50_ms < 0) {
      one_client_.reserve_p50_ms = Percentile(o.latency_ms, 0.5);
      one_client_.floor_p50_ms = Percentile(floor.run.latency_ms, 0.5);
      one_client_.reserve_cpu_ms = reserve_cpu.total_ms();
      one_client_.floor_cpu_ms = floor.cpu.total_ms();
    }
    if (floor.run.failed > 0) ++violations;
    before = ReadCpuSeconds(url_);
    const Outcomes direct = RunDirect(site, clients, seconds, max_calls, prefix + "-db");
    after = ReadCpuSeconds(url_);
    Row(name + ", db alone", clients, machines, direct);
    CeilingRow(clients, ceiling, direct);
    const CpuPerCall direct_cpu =
        PrintCpuPerCall(before, after, direct.latency_ms.size(), "client");
    Csv(name, "database alone", clients, direct, ceiling, direct_cpu.process_ms,
        direct_cpu.database_ms);
    if (direct.other > 0) ++violations;
    violations += Audit();
    CancelHoldsAndVacuum(site);
    before = ReadCpuSeconds(url_);
    const Outcomes refused = Run(site, clients, seconds, 0, prefix + "-gate", "", 0,
                                 /*authorize=*/false);
    after = ReadCpuSeconds(url_);
    Row(name + ", gRPC only", clients, machines, refused);
    CeilingRow(clients, ceiling, refused);
    const ServerCpuPerCall refused_cpu = MeasureServerCpuPerCall(
        before, after, refused.load_generator_cpu_seconds, refused.latency_ms.size());
    PrintServerCpuPerCall(refused_cpu);
    Csv(name, "gRPC only", clients, refused, ceiling, refused_cpu.server_ms,
        refused_cpu.database_ms);
    if (refused.unauthenticated != static_cast<int>(refused.latency_ms.size())) ++violations;
    return violations;
  }

  // One client that reserves on each of `sites` in turn, `calls` rounds: every site sees the
  // same moments of the machine (another process's build, a checkpoint, autovacuum), so the
  // sites' latencies compare like with like. Separate runs one after the other on a shared
  // machine measured ratios from 0.29x to 2.8x for the same code. Returns one Outcomes per site.
  struct SiteUnderTest {
    std::string site, token;
  };
  std::vector<Outcomes> RunInterleaved(const std::vector<SiteUnderTest>& sites, int calls,
                                       const std::string& prefix) {
    std::vector<Outcomes> per(sites.size());
    auto stub = v1::ReservationService::NewStub(channels_[0]);
    const auto start = Clock::now();
    for (int i = 0; i < calls; ++i) {
      for (size_t s = 0; s < sites.size(); ++s) {
        const grpc::Status status = TimedReserve(*stub, absl::StrCat(prefix, "-", s, "-", i),
                                                 sites[s].site, "Bearer " + sites[s].token, per[s]);
        if (!status.ok()) CountUnexpected(status, per[s]);
      }
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    for (Outcomes& o : per) o.seconds = seconds;
    return per;
  }

  // `clients` threads reserve and at once cancel, taking `sites` in turn, for `seconds`; returns
  // the Reserve latencies with the time (seconds since the start) each call ended. What a
  // commerce backend's abandoned checkouts do: every hold made is cancelled.
  struct TimedLatency {
    double at_seconds, ms;
  };
  std::vector<TimedLatency> ReserveAndCancel(const std::vector<SiteUnderTest>& sites, int clients,
                                             double seconds, const std::string& prefix,
                                             long long* failures) {
    std::vector<std::vector<TimedLatency>> per(clients);
    std::atomic<long long> failed{0};
    const auto begin = Clock::now();
    RunTogether(clients, [&](int c, const std::function<void()>& start) {
      auto stub = v1::ReservationService::NewStub(channels_[c % channels_.size()]);
      start();
      const auto until = Clock::now() + std::chrono::duration<double>(seconds);
      for (int i = 0; Clock::now() < until; ++i) {
        const SiteUnderTest& site = sites[(c + i) % sites.size()];
        const std::string key = absl::StrCat(prefix, "-", c, "-", i);
        Outcomes one;
        v1::ReserveResponse response;
        const grpc::Status status =
            TimedReserve(*stub, key, site.site, "Bearer " + site.token, one, &response);
        per[c].push_back(
            {std::chrono::duration<double>(Clock::now() - begin).count(), one.latency_ms.back()});
        if (!status.ok()) {
          if (failed++ == 0) {
            std::fprintf(stderr, "burst: Reserve failed: %d %s\n",
                         static_cast<int>(status.error_code()), status.error_message().c_str());
          }
          continue;
        }
        v1::CancelRequest cancel;
        cancel.mutable_reservation()->set_reservation_id(response.reservation().id());
        cancel.set_request_id(key);
        grpc::ClientContext cancel_context;
        cancel_context.AddMetadata("authorization", "Bearer " + site.token);
        cancel_context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
        v1::CancelResponse cancelled;
        if (!stub->Cancel(&cancel_context, cancel, &cancelled).ok()) ++failed;
      }
    });
    std::vector<TimedLatency> all;
    for (const auto& p : per) all.insert(all.end(), p.begin(), p.end());
    *failures += failed;
    return all;
  }

  // What the cluster did between two readings: WAL written, full-page images among it,
  // checkpoints, and the autovacuum and autoanalyze runs on dcl's busiest tables.
  struct DatabaseActivity {
    double wal_mb = 0;
    long long full_page_images = 0, checkpoints = 0, autovacuums = 0, autoanalyzes = 0;
  };
  DatabaseActivity ReadActivity() {
    pqxx::connection conn(url_);
    pqxx::nontransaction tx(conn);
    pqxx::row wal = tx.exec1("SELECT wal_bytes::float8 / 1048576, wal_fpi FROM pg_stat_wal");
    pqxx::row bg = tx.exec1("SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter");
    pqxx::row vac = tx.exec1(
        "SELECT coalesce(sum(autovacuum_count), 0), coalesce(sum(autoanalyze_count), 0) "
        "FROM pg_stat_user_tables WHERE relname IN ('reservations', 'devices', "
        "'client_requests', 'reservation_events')");
    DatabaseActivity a;
    a.wal_mb = wal[0].as<double>();
    a.full_page_images = wal[1].as<long long>();
    a.checkpoints = bg[0].as<long long>();
    a.autovacuums = vac[0].as<long long>();
    a.autoanalyzes = vac[1].as<long long>();
    return a;
  }
  static void PrintActivity(const char* phase, const DatabaseActivity& from,
                            const DatabaseActivity& to) {
    std::printf(
        "   %s: WAL %.1f MB, full-page images %lld, checkpoints %lld, autovacuum runs %lld, "
        "autoanalyze runs %lld\n",
        phase, to.wal_mb - from.wal_mb, to.full_page_images - from.full_page_images,
        to.checkpoints - from.checkpoints, to.autovacuums - from.autovacuums,
        to.autoanalyzes - from.autoanalyzes);
  }

  // The anatomy of one hold (issue 26): each part of dcl_reserve_call's work, the whole call, and
  // the floor's INSERT, `n` times each in one session, inside a DO block that commits after
  // every iteration: no network, no parse, no protocol, only the SQL and its commit. CPU is that
  // session's backend's (/proc, its own commit's WAL flush included), WAL the insert position's
  // advance. The parts are
  // the statements of dcl_reserve (migrations 0020, 0031) with literals where the function has
  // a device's facts. Two more send the floor's INSERT and the service's own Reserve query
  // (ReserveInDatabase) as statements from this client, one round trip each: what a statement
  // costs the backend beyond its SQL. The parts take turns in `kRounds` rounds of n / kRounds
  // iterations, so that a drift of the machine's speed weighs on all alike.
  void Anatomy(int n) {
    const std::string site = NewSite("anatomy", 10000);
    const std::string parts_site = NewSite("anatomy-parts", 2 * n);
    // A site of 10 whose every machine is held: what each of 256-on-10's refusals finds.
    const std::string full_site = NewSite("anatomy-full", 10);
    Sql(absl::StrCat("DO $full$ BEGIN FOR i IN 1..10 LOOP PERFORM * FROM dcl_reserve('", org_,
                     "', 'anatomy-full-' || i, '", full_site,
                     "', '', '', '', NULL, 900, 'bench', 25, 5, 1024); END LOOP; END $full$"));
    if (Scalar(absl::StrCat("SELECT count(*) FROM reservations WHERE state = 'held' AND "
                            "criteria_site_id = '",
                            full_site, "'")) != "10") {
      Die("anatomy: the full site's 10 machines are not all held");
    }
    pqxx::connection conn(url_);
    const int backend = pqxx::nontransaction(conn).exec1("SELECT pg_backend_pid()")[0].as<int>();
    struct Cost {
      double cpu_ms = 0;
      double wal_bytes = 0;
    };
    auto lsn = [&] {
      return pqxx::nontransaction(conn).exec1("SELECT pg_current_wal_lsn()::text")[0]
          .as<std::string>();
    };
    // CPU seconds and WAL bytes of `work` on this session's backend.
    auto measure = [&](const std::function<void()>& work) {
      const std::string lsn_before = lsn();
      const double before = ProcessCpuSeconds(backend);
      work();
      const double after = ProcessCpuSeconds(backend);
      Cost cost;
      cost.cpu_ms = (after - before) * 1000.0;
      cost.wal_bytes = pqxx::nontransaction(conn)
                           .exec1(absl::StrCat("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '",
                                               lsn_before, "')::float8"))[0]
                           .as<double>();
      return cost;
    };
    // Iteration `first` + 1 .. `first` + `iterations` of a part in a DO loop.
    auto run = [&](const std::string& body, int first, int iterations) {
      const std::string sql = absl::StrCat(
          "DO $anatomy$ DECLARE v_org uuid := '", org_, "'; v_site uuid := '", site,
          "'; v_psite uuid := '", parts_site, "'; v_full uuid := '", full_site,
          "'; v_ids uuid[] := ARRAY(SELECT id FROM devices WHERE site_id = '", parts_site,
          "' ORDER BY id); v_batch uuid[]; v_d uuid; v_start uuid; BEGIN FOR i IN ", first + 1,
          "..", first + iterations, " LOOP v_start := gen_random_uuid(); ", body,
          " COMMIT; END LOOP; END $anatomy$");
      return measure([&] { pqxx::nontransaction(conn).exec(sql); });
    };
    const std::string candidate =
        "SELECT d.id INTO v_d FROM devices d WHERE d.id = v_ids[i] AND d.site_id = v_psite "
        "AND d.org_id = v_org AND d.process_state = 'normal' AND d.decommissioned_at IS NULL ";
    const std::string probes =
        "AND (SELECT 1 FROM service_bindings b WHERE b.device_id = d.id AND b.ended_at IS NULL "
        "LIMIT 1) IS NULL AND (SELECT 1 FROM reservations h WHERE h.device_id = d.id AND "
        "h.state = 'held' LIMIT 1) IS NULL ";
    auto hold = [&](const std::string& key, const std::string& device,
                    const std::string& reason) {
      return absl::StrCat(
          "INSERT INTO reservations AS r (org_id, idempotency_key, device_id, state, "
          "criteria_site_id, criteria_vendor, criteria_model, criteria_hardware_profile, "
          "selection_reason, created_by, expires_at) VALUES (v_org, '",
          key, "' || i, ", device, ", 'held', v_psite, '', '', '', ", reason,
          ", 'bench', now() + interval '15 minutes') ON CONFLICT (device_id) WHERE state = "
          "'held' DO NOTHING;");
    };
    const std::string json_reason =
        "jsonb_build_object('criteria', jsonb_build_object('site_id', v_psite::text, 'vendor', "
        "'', 'model', '', 'hardware_profile', ''), 'device', jsonb_build_object('id', "
        "v_ids[i]::text, 'site_id', v_psite::text, 'vendor', 'Dell', 'model', 'R650', "
        "'hardware_profile', '', 'process_state', 'normal', 'bound', false, 'held', false, "
        "'decommissioned', false), 'eligibility', 'eligible', 'candidates_examined', 1, "
        "'lost_races', 0, 'rows_visited', 16, 'walk_start', v_start::text, "
        "'chosen_at', now())";
    struct Part {
      const char* name;
      std::string body;  // a DO loop's body, or empty for a statement part
      std::function<void(int first, int iterations)> statements = nullptr;
    };
    // A part sent as statements from this client, one round trip each: `one(tx, i)` for
    // iteration i, autocommit, prepared as on the service's connections.
    auto each_statement = [&](std::function<void(pqxx::nontransaction&, int)> one) {
      return [&conn, one](int first, int iterations) {
        PreparedStatementScope prepared(true);
        for (int i = first; i < first + iterations; ++i) {
          pqxx::nontransaction tx(conn);
          one(tx, i);
        }
      };
    };
    // The floor's INSERT; the service's Reserve query; the same function without the service's
    // outer query (what that query adds to the round trip).
    const auto floor_statements = each_statement([&](pqxx::nontransaction& tx, int) {
      ExecCached(tx, "INSERT INTO bench_echo_insert (org_id, payload) VALUES ($1::uuid, $2)", org_,
                 "anatomy");
    });
    reservation::Criteria criteria;
    criteria.site_id = site;
    const auto reserve_statements = each_statement([&](pqxx::nontransaction& tx, int i) {
      reservation::ReserveInDatabase(tx, org_, absl::StrCat("anatomy-statement-", i), criteria,
                                     reservation::RandomWalkStart(), 900, "bench",
                                     reservation::WalkLimits{25, 5, 1024}, 20,
                                     absl::InfiniteFuture());
    });
    const auto function_statements = each_statement([&](pqxx::nontransaction& tx, int i) {
      ExecCached(tx,
                 "SELECT outcome FROM dcl_reserve_call($1::uuid, $2, $3::uuid, '', '', '', "
                 "$4::uuid, 900, 'bench', 25, 5, 1024, NULL, 20)",
                 org_, absl::StrCat("anatomy-function-", i), site, reservation::RandomWalkStart());
    });
    const std::vector<Part> parts = {
        {"loop and commit, no write", "PERFORM 1;"},
        {"floor: one-row INSERT (bench_echo_insert)",
         "INSERT INTO bench_echo_insert (org_id, payload) VALUES (v_org, 'anatomy');"},
        {"key: advisory lock, key lookup, site check",
         "PERFORM pg_advisory_xact_lock(hashtext(v_org::text), hashtext('anatomy-key-' || i)); "
         "PERFORM 1 FROM reservations r WHERE r.org_id = v_org AND r.idempotency_key = "
         "'anatomy-key-' || i; PERFORM 1 FROM sites s WHERE s.id = v_site AND s.org_id = v_org;"},
        {"walk: the next 16 device ids",
         "SELECT array_agg(w.id ORDER BY w.id) INTO v_batch FROM (SELECT d.id FROM devices d "
         "WHERE (d.site_id, d.id) > (v_site, v_start) AND (d.site_id, d.id) <= "
         "(v_site, 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid) ORDER BY d.site_id, d.id LIMIT "
         "16) w;"},
        {"candidate: row lock with the two probes",
         absl::StrCat(candidate, probes, "FOR NO KEY UPDATE OF d SKIP LOCKED;")},
        {"candidate: row lock without the probes",
         absl::StrCat(candidate, "FOR NO KEY UPDATE OF d SKIP LOCKED;")},
        {"hold: INSERT into reservations, JSON reason",
         hold("anatomy-json-", "v_ids[i]", json_reason)},
        {"hold: INSERT into reservations, empty reason",
         hold("anatomy-bare-", absl::StrCat("v_ids[", n, " + i]"), "'{}'::jsonb")},
        {"dcl_reserve alone (0031, no wrapper)",
         "PERFORM * FROM dcl_reserve(v_org, 'anatomy-bare-call-' || i, v_site, '', '', '', "
         "v_start, 900, 'bench', 25, 5, 1024);"},
        {"dcl_reserve_within_deadline (0030)",
         "PERFORM * FROM dcl_reserve_within_deadline(v_org, 'anatomy-deadline-call-' || i, "
         "v_site, '', '', '', v_start, 900, 'bench', 25, 5, 1024, NULL);"},
        {"the whole decision: dcl_reserve_call",
         absl::StrCat("PERFORM * FROM dcl_reserve_call(v_org, 'anatomy-call-' || i, v_site, '', "
                      "'', '', v_start, 900, 'bench', 25, 5, 1024, NULL, 20);")},
        {"refusal on a full site of 10: dcl_reserve",
         "PERFORM * FROM dcl_reserve(v_org, 'anatomy-refused-' || i, v_full, '', '', '', "
         "v_start, 900, 'bench', 25, 5, 1024);"},
        {"refusal's explanation: dcl_exclusion_summary",
         "PERFORM * FROM dcl_exclusion_summary(v_org, v_full, 20);"},
        {"refusal, the whole decision: dcl_reserve_call",
         "PERFORM * FROM dcl_reserve_call(v_org, 'anatomy-refused-call-' || i, v_full, '', '', "
         "'', v_start, 900, 'bench', 25, 5, 1024, NULL, 20);"},
        {"floor as statements: one round trip each", "", floor_statements},
        {"decision as statements: the service's query", "", reserve_statements},
        {"decision as statements: the function alone", "", function_statements},
    };
    constexpr int kRounds = 3;
    std::printf(
        "\n== anatomy of one hold: each part %d times in one session, a commit after each (a DO "
        "loop: no network, no parse, no protocol; or statements from this client), the parts "
        "taking turns in %d rounds ==\n",
        n, kRounds);
    // Every iteration draws a walk start (gen_random_uuid), the loop's part included. The first
    // DO of a session and the first statements pay for caches, PL/pgSQL and plans: warmed once,
    // not measured.
    run(parts[0].body, 0, 100);
    floor_statements(0, 100);
    reserve_statements(-100, 100);
    function_statements(-100, 100);
    CancelHolds(site);
    std::vector<Cost> costs(parts.size());
    for (int round = 0; round < kRounds; ++round) {
      const int first = round * n / kRounds;
      const int iterations = (round + 1) * n / kRounds - first;
      for (size_t p = 0; p < parts.size(); ++p) {
        const Cost cost = parts[p].statements
                              ? measure([&] { parts[p].statements(first, iterations); })
                              : run(parts[p].body, first, iterations);
        costs[p].cpu_ms += cost.cpu_ms;
        costs[p].wal_bytes += cost.wal_bytes;
        CancelHolds(site);  // each decision part finds the site as free as the first did
      }
    }
    std::printf("%-46s %10s %12s %10s\n", "part", "CPU ms", "net of loop", "WAL bytes");
    const double loop_ms = costs[0].cpu_ms / n;
    std::map<std::string, double> per_call;
    for (size_t p = 0; p < parts.size(); ++p) {
      const double cpu_ms = costs[p].cpu_ms / n;
      per_call[parts[p].name] = cpu_ms;
      std::printf("%-46s %10.3f %12.3f %10.0f\n", parts[p].name, cpu_ms, cpu_ms - loop_ms,
                  costs[p].wal_bytes / n);
    }
    one_client_.decision_beyond_insert_ms =
        per_call.at("the whole decision: dcl_reserve_call") -
        per_call.at("floor: one-row INSERT (bench_echo_insert)");
    // What a statement costs beyond its SQL (protocol, parse of the bind, portal, snapshot,
    // the answer's rows): the statements' CPU minus the SQL's in the loop (net of the loop).
    auto round_trip = [&](const char* statements, const char* in_loop) {
      return per_call.at(statements) - (per_call.at(in_loop) - loop_ms);
    };
    const double floor_round_trip = round_trip("floor as statements: one round trip each",
                                               "floor: one-row INSERT (bench_echo_insert)");
    const double decision_round_trip = round_trip("decision as statements: the service's query",
                                                  "the whole decision: dcl_reserve_call");
    std::printf(
        "round trip beyond the SQL (statements minus the loop's SQL): floor %.3f ms, decision "
        "%.3f ms (the function alone %.3f ms)\n",
        floor_round_trip, decision_round_trip,
        round_trip("decision as statements: the function alone",
                   "the whole decision: dcl_reserve_call"));
    one_client_.round_trip_beyond_floor_ms = decision_round_trip - floor_round_trip;
    std::fflush(stdout);
    CancelHolds(site);
    CancelHolds(parts_site);
    CancelHolds(full_site);
  }

  // The token cache before and after, in one run: Reserve and the floor through the gate with the
  // cache and through the same services behind a gate without it, taking turns for `rounds`
  // rounds of `seconds` each, so that whatever the machine does meanwhile weighs on both alike.
  // Prints calls/s, p50 and CPU per call (server + PostgreSQL, the load generator apart) of each.
  int64_t TokenCacheTurns(const std::string& site, int clients, int rounds, double seconds) {
    if (uncached_runtime_ == nullptr) {
      std::printf("\n(token-cache scenario skipped: the run has no token cache)\n");
      return 0;
    }
    struct Tally {
      LoadRun run;
      ServerCpuOverRuns cpu;
      void Add(const LoadRun& r, const CpuSeconds& before, const CpuSeconds& after) {
        run.latency_ms.insert(run.latency_ms.end(), r.latency_ms.begin(), r.latency_ms.end());
        run.seconds += r.seconds;
        run.failed += r.failed;
        cpu.Add(before, after, r.load_generator_cpu_seconds,
                static_cast<long long>(r.latency_ms.size()));
      }
      void Print(const char* name) const {
        const ServerCpuPerCall per_call = cpu.PerCall();
        std::printf("%-34s %9.1f %8.2f %8.2f   %.3f + %.3f = %.3f ms  failed %lld\n", name,
                    run.calls_per_second(), Percentile(run.latency_ms, 0.5),
                    Percentile(run.latency_ms, 0.99), per_call.server_ms, per_call.database_ms,
                    per_call.total_ms(), run.failed);
      }
    };
    Tally reserve[2], floor[2];  // [0] with the cache, [1] without
    const std::vector<std::shared_ptr<grpc::Channel>>* routes[2] = {&channels_,
                                                                    &uncached_channels_};
    int64_t violations = 0;
    for (int variant = 0; variant < 2; ++variant) {  // warm both: plans, compiles, the cache
      route_ = routes[variant];
      Run(site, clients, 0.5, 0, absl::StrCat("tc-warm-", variant));
      RunEchoInsert(*routes[variant], clients, 0.5, "Bearer " + token_);
    }
    CancelHolds(site);
    for (int round = 0; round < rounds; ++round) {
      for (int turn = 0; turn < 2; ++turn) {
        // Alternate which variant goes first, so neither always follows the other.
        const int variant = (round + turn) % 2;
        route_ = routes[variant];
        CpuSeconds before = ReadCpuSeconds(url_);
        const Outcomes o = Run(site, clients, seconds, 0, absl::StrCat("tc-", round, "-", variant));
        CpuSeconds after = ReadCpuSeconds(url_);
        reserve[variant].Add(AsLoadRun(o), before, after);
        if (o.other > 0) ++violations;
        CancelHolds(site);
        before = ReadCpuSeconds(url_);
        const LoadRun f = RunEchoInsert(*routes[variant], clients, seconds, "Bearer " + token_);
        after = ReadCpuSeconds(url_);
        floor[variant].Add(f, before, after);
        if (f.failed > 0) ++violations;
      }
    }
    route_ = &channels_;
    std::printf(
        "\n== token cache, before and after: %d clients, %d rounds of %.0f s each, the two "
        "gates taking turns ==\n",
        clients, rounds, seconds);
    std::printf("%-34s %9s %8s %8s   %s\n", "run", "calls/s", "p50 ms", "p99 ms",
                "CPU per call: server + PostgreSQL");
    reserve[1].Print("Reserve, no token cache");
    reserve[0].Print("Reserve, token cache");
    floor[1].Print("echo-insert floor, no token cache");
    floor[0].Print("echo-insert floor, token cache");
    return violations + Audit();
  }

  // Rows that must not exist; prints and returns the number of violations.
  int64_t Audit() {
    const int64_t double_holds = std::stoll(
        Scalar("SELECT count(*) FROM (SELECT device_id FROM reservations WHERE state = 'held' "
               "GROUP BY device_id HAVING count(*) > 1) x"));
    const int64_t double_device = std::stoll(Scalar(
        "SELECT count(*) FROM (SELECT device_id FROM service_bindings WHERE ended_at IS NULL "
        "GROUP BY device_id HAVING count(*) > 1) x"));
    const int64_t double_service = std::stoll(Scalar(
        "SELECT count(*) FROM (SELECT service_id FROM service_bindings WHERE ended_at IS NULL "
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

  static void CeilingRow(int clients, double ceiling, const Outcomes& o) {
    const double rate = o.latency_ms.size() / o.seconds;
    std::printf("   ceiling (one-row INSERT, %d clients): %.0f tx/s; Reserve/ceiling ratio %.3f\n",
                clients, ceiling, rate / ceiling);
    std::fflush(stdout);
  }

  // The run's row for docs/perf/plot.py (--csv); ceiling and CPU -1 where not measured.
  // CPU per call: the server's (the load generator apart) for runs through gRPC, the client's
  // for the database alone; -1 where not measured.
  static void Csv(const std::string& scenario, const std::string& run, int clients,
                  const Outcomes& o, double ceiling, double cpu_process_ms,
                  double cpu_database_ms) {
    AppendCsv({"reservation", scenario, run, clients, o.latency_ms.size() / o.seconds,
               Percentile(o.latency_ms, 0.50), Percentile(o.latency_ms, 0.95),
               Percentile(o.latency_ms, 0.99), ceiling, cpu_process_ms, cpu_database_ms});
  }

  static void Header() {
    std::printf("%-34s %7s %8s %7s %9s %8s %8s %8s %6s %6s %9s %7s %6s\n", "scenario", "clients",
                "machines", "calls", "calls/s", "p50 ms", "p95 ms", "p99 ms", "held", "replay",
                "contended", "no_cap", "errors");
  }
  static void Row(const std::string& name, int clients, int machines, const Outcomes& o) {
    std::printf("%-34s %7d %8d %7zu %9.1f %8.2f %8.2f %8.2f %6d %6d %9d %7d %6d\n", name.c_str(),
                clients, machines, o.latency_ms.size(), o.latency_ms.size() / o.seconds,
                Percentile(o.latency_ms, 0.50), Percentile(o.latency_ms, 0.95),
                Percentile(o.latency_ms, 0.99), o.held, o.replay, o.contended, o.no_capacity,
                o.other);
    std::fflush(stdout);
  }

  const std::string& org() const { return org_; }
  const std::string& token() const { return token_; }
  int missed_goals() const { return missed_goals_; }

  // One client's Reserve p50 against the goal kept from before (1.5 ms), beside the least it can
  // be: with one client every part of a call is on its path, so a Reserve takes at least what
  // the floor's call takes plus the CPU its decision's statement costs the database beyond the
  // floor's (the anatomy: the SQL, and the round trip that sends the hold back). Needs a
  // 1-client throughput run and the anatomy in the same run.
  void PrintOneClientGoal() {
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

 private:
  const std::string url_;
  std::unique_ptr<DbPool> pool_;
  std::unique_ptr<TokenCache> tokens_;
  std::unique_ptr<RpcGate> gate_;
  std::unique_ptr<reservation::ReservationLogic> logic_;
  std::unique_ptr<reservation::ReservationServiceImpl> service_;
  std::unique_ptr<EchoInsertServiceImpl> echo_;
  std::unique_ptr<ServerRuntime> runtime_;
  std::vector<std::shared_ptr<grpc::Channel>> channels_;
  // Without the token cache (only when the run has one): for the token-cache scenario.
  std::unique_ptr<RpcGate> uncached_gate_;
  std::unique_ptr<reservation::ReservationServiceImpl> uncached_service_;
  std::unique_ptr<EchoInsertServiceImpl> uncached_echo_;
  std::unique_ptr<ServerRuntime> uncached_runtime_;
  std::vector<std::shared_ptr<grpc::Channel>> uncached_channels_;
  // The channels Run() calls through: the cached server's, or the uncached one's.
  const std::vector<std::shared_ptr<grpc::Channel>>* route_ = &channels_;
  std::string org_, token_;
  int missed_goals_ = 0;  // the goals printed (32 clients, one client, 256 on 10) not met
  struct {
    double reserve_p50_ms = -1, floor_p50_ms = -1;  // the first 1-client throughput run's
    double reserve_cpu_ms = -1, floor_cpu_ms = -1;  // server + PostgreSQL per call; -1: not
                                                    // measured (the cluster is elsewhere)
    double decision_beyond_insert_ms = -1;          // the anatomy's: the SQL
    double round_trip_beyond_floor_ms = -1;         // and the statement's round trip
  } one_client_;
};

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
}  // namespace dcl::bench

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  dcl::TurnOffMutexDeadlockDetection();  // as the servers run
  return dcl::bench::Main();
}
