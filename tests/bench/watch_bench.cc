// WatchMove at scale: thousands of concurrent streams on one moves server, every event delivered
// in order to every watcher of its move, and how many database connections the watching takes.
// The real gate and MoveService on an in-process gRPC server; clients over loopback TCP with a
// stream each; the moves advanced through their whole path by another client.
//   tests/bench/run_watch_bench --streams=2000 --moves=100
// Reports streams, events expected and delivered, order violations, the watch connections seen
// in pg_stat_activity while every stream was open, and the delivery latency from the event's
// commit (its database timestamp) to the client, p50/p99/max.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <pqxx/pqxx>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "dcl/v1/moves.grpc.pb.h"
#include "services/common/auth.h"
#include "services/common/db.h"
#include "services/common/rpc_gate.h"
#include "services/moves/move_logic.h"
#include "services/moves/move_service.h"
#include "services/moves/move_watch.h"
#include "services/occupancy/occupancy_logic.h"
#include "tests/support/grpc_harness.h"

ABSL_FLAG(std::string, database_url, "", "a migrated, empty database");
ABSL_FLAG(int, streams, 2000, "concurrent WatchMove streams");
ABSL_FLAG(int, moves, 100, "moves watched (streams are spread evenly over them)");
ABSL_FLAG(int, channels, 20, "client channels (HTTP/2 connections) the streams share");

namespace dcl {
namespace {

constexpr int kDevicesPerRack = 40;
const std::vector<v1::MoveState> kPath = {v1::MOVE_APPROVED, v1::MOVE_IN_PROGRESS,
                                          v1::MOVE_AWAITING_VERIFICATION, v1::MOVE_COMPLETED};

std::string One(pqxx::connection& conn, const std::string& sql) {
  pqxx::work tx(conn);
  std::string value = tx.exec1(sql)[0].as<std::string>();
  tx.commit();
  return value;
}

int64_t WatchConnections(pqxx::connection& conn) {
  pqxx::nontransaction tx(conn);
  return tx
      .exec1(absl::StrCat("SELECT count(*) FROM pg_stat_activity WHERE datname = "
                          "current_database() AND application_name = '",
                          moves::kWatcherApplicationName, "'"))[0]
      .as<int64_t>();
}

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t i = std::min(values.size() - 1, static_cast<size_t>(p * (values.size() - 1) + 0.5));
  return values[i];
}

int Run() {
  const std::string url = absl::GetFlag(FLAGS_database_url);
  const int stream_count = absl::GetFlag(FLAGS_streams);
  const int move_count = absl::GetFlag(FLAGS_moves);
  auto admin = std::make_unique<pqxx::connection>(url);

  // One organization, one site, source racks holding the devices and destination racks.
  const std::string org = One(*admin,
                              "WITH o AS (INSERT INTO organizations (name) VALUES ('bench') "
                              "RETURNING id) SELECT id::text FROM o");
  {
    pqxx::work tx(*admin);
    tx.exec("UPDATE feature_settings SET enabled = true WHERE feature = 'datacenter'");
    tx.exec_params(
        "INSERT INTO organization_feature_settings (org_id, feature, enabled) "
        "VALUES ($1::uuid, 'datacenter', true)",
        org);
    tx.commit();
  }
  const std::string site = One(*admin, absl::StrCat("INSERT INTO sites (org_id, name) VALUES ('",
                                                    org, "', 'BENCH1') RETURNING id::text"));
  const int racks = (move_count + kDevicesPerRack - 1) / kDevicesPerRack;
  std::vector<std::string> source_racks, destination_racks;
  for (int r = 0; r < racks; ++r) {
    for (auto* list : {&source_racks, &destination_racks}) {
      list->push_back(
          One(*admin, absl::StrCat("INSERT INTO racks (org_id, site_id, name, "
                                   "first_unit, unit_count, numbering, has_rear) "
                                   "VALUES ('",
                                   org, "', '", site, "', '", list == &source_racks ? "S" : "D", r,
                                   "', 1, 42, 'ascending', true) RETURNING id::text")));
    }
  }

  auto pool = std::make_unique<DbPool>(DbOptions{.url = url, .pool_size = 16});
  absl::StatusOr<IssuedToken> issued = CreateToken(*pool, org, Role::kDcOperator, "", "bench");
  if (!issued.ok()) {
    std::fprintf(stderr, "token: %s\n", issued.status().ToString().c_str());
    return 1;
  }
  const Principal op{
      .token_id = issued->id, .org_id = org, .role = Role::kDcOperator, .module_enabled = true};
  occupancy::OccupancyLogic occupancy(*pool);
  moves::MoveLogic logic(*pool, absl::Milliseconds(200),
                         StreamLimits{.per_server = stream_count, .per_org = stream_count});
  RpcGate gate(*pool);
  moves::MoveServiceImpl service(gate, logic);
  testing::InProcessServer server(pool.get(), {{"dcl.v1.MoveService", &service}});

  std::vector<std::string> move_ids;
  for (int m = 0; m < move_count; ++m) {
    const std::string device =
        One(*admin, absl::StrCat("INSERT INTO devices (org_id, site_id, vendor, model, serial, "
                                 "height_units, depth_class) VALUES ('",
                                 org, "', '", site, "', 'Dell', 'R650', 'S", m,
                                 "', 1, 'full') RETURNING id::text"));
    v1::PlaceDeviceRequest place;
    place.set_rack_id(source_racks[m / kDevicesPerRack]);
    place.set_device_id(device);
    place.set_side(v1::SIDE_FRONT);
    place.set_unit(1 + m % kDevicesPerRack);
    v1::Booking booking;
    if (absl::Status s = occupancy.PlaceDevice(op, place, &booking); !s.ok()) {
      std::fprintf(stderr, "place: %s\n", s.ToString().c_str());
      return 1;
    }
    v1::StartMoveRequest start;
    start.set_device_id(device);
    start.set_destination_rack_id(destination_racks[m / kDevicesPerRack]);
    start.set_destination_side(v1::SIDE_FRONT);
    start.set_destination_unit(1 + m % kDevicesPerRack);
    v1::Move move;
    if (absl::Status s = logic.StartMove(op, start, &move); !s.ok()) {
      std::fprintf(stderr, "start: %s\n", s.ToString().c_str());
      return 1;
    }
    move_ids.push_back(move.id());
  }

  // The watchers: a thread and a stream each, spread over a few channels.
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  for (int c = 0; c < absl::GetFlag(FLAGS_channels); ++c) {
    grpc::ChannelArguments args;
    args.SetInt("grpc.dcl_channel_index", c);  // distinct arguments: distinct connections
    channels.push_back(
        grpc::CreateCustomChannel(server.address(), grpc::InsecureChannelCredentials(), args));
  }
  struct Watcher {
    std::vector<int64_t> sequences;
    std::vector<double> latencies_ms;
    grpc::Status end;
  };
  std::vector<Watcher> watchers(stream_count);
  std::atomic<int> replayed{0};
  std::vector<std::thread> threads;
  threads.reserve(stream_count);
  for (int i = 0; i < stream_count; ++i) {
    threads.emplace_back([&, i] {
      auto stub = v1::MoveService::NewStub(channels[i % channels.size()]);
      auto ctx = testing::ContextWithToken(issued->token);
      ctx->set_wait_for_ready(true);
      ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(5));
      v1::WatchMoveRequest req;
      req.set_move_id(move_ids[i % move_ids.size()]);
      auto reader = stub->WatchMove(ctx.get(), req);
      v1::MoveEvent event;
      Watcher& w = watchers[i];
      while (reader->Read(&event)) {
        const absl::Time now = absl::Now();
        w.sequences.push_back(event.sequence());
        if (event.sequence() == 1) {
          ++replayed;  // history, not a live delivery
        } else {
          const absl::Time at =
              absl::FromUnixSeconds(event.at().seconds()) + absl::Nanoseconds(event.at().nanos());
          w.latencies_ms.push_back(absl::ToDoubleMilliseconds(now - at));
        }
      }
      w.end = reader->Finish();
    });
  }
  const absl::Time open_start = absl::Now();
  while (replayed.load() < stream_count && absl::Now() - open_start < absl::Minutes(3)) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  const double open_s = absl::ToDoubleSeconds(absl::Now() - open_start);
  const int64_t connections_open = WatchConnections(*admin);
  const int64_t streams_open = logic.open_watch_streams();

  // Every move through its path, one transition of every move per round.
  const absl::Time drive_start = absl::Now();
  int advance_errors = 0;
  for (v1::MoveState target : kPath) {
    for (const std::string& id : move_ids) {
      v1::AdvanceMoveRequest advance;
      advance.set_move_id(id);
      advance.set_target(target);
      v1::Move out;
      if (absl::Status s = logic.AdvanceMove(op, advance, &out); !s.ok()) {
        if (advance_errors++ < 3) std::fprintf(stderr, "advance: %s\n", s.ToString().c_str());
      }
    }
  }
  for (std::thread& t : threads) t.join();
  const double drive_s = absl::ToDoubleSeconds(absl::Now() - drive_start);

  int64_t delivered = 0, order_violations = 0, failed_streams = 0;
  std::vector<double> latencies;
  for (const Watcher& w : watchers) {
    delivered += static_cast<int64_t>(w.sequences.size());
    for (size_t k = 0; k < w.sequences.size(); ++k) {
      if (w.sequences[k] != static_cast<int64_t>(k + 1)) ++order_violations;
    }
    if (!w.end.ok()) ++failed_streams;
    latencies.insert(latencies.end(), w.latencies_ms.begin(), w.latencies_ms.end());
  }
  const int64_t expected = static_cast<int64_t>(stream_count) * (1 + kPath.size());
  std::printf("streams %d on %d moves, opened in %.1f s; open at once: %lld\n", stream_count,
              move_count, open_s, static_cast<long long>(streams_open));
  std::printf("database connections used for watching while all were open: %lld\n",
              static_cast<long long>(connections_open));
  std::printf("transitions driven: %zu in %.1f s, %d refused\n", move_ids.size() * kPath.size(),
              drive_s, advance_errors);
  std::printf("events expected %lld, delivered %lld, out of order %lld, streams ended badly %lld\n",
              static_cast<long long>(expected), static_cast<long long>(delivered),
              static_cast<long long>(order_violations), static_cast<long long>(failed_streams));
  std::printf(
      "delivery latency commit -> client (ms): p50 %.1f  p99 %.1f  max %.1f  (%zu events)\n",
      Percentile(latencies, 0.50), Percentile(latencies, 0.99),
      latencies.empty() ? 0.0 : *std::max_element(latencies.begin(), latencies.end()),
      latencies.size());
  const bool ok = delivered == expected && order_violations == 0 && failed_streams == 0 &&
                  advance_errors == 0 && connections_open <= 2 && streams_open == stream_count;
  std::printf("%s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace dcl

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return dcl::Run();
}
