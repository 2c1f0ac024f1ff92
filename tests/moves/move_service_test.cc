// MoveService through a real in-process gRPC server with a dc-operator token: WatchMove streams
// the transitions another client makes, in order, and ends cleanly at a terminal state or when
// the client cancels; refusals arrive with their reason and details.
#include "services/moves/move_service.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>
#include <vector>

#include "dcl/v1/moves.grpc.pb.h"
#include "services/common/grpc_status.h"
#include "services/common/metrics.h"
#include "services/common/rpc_gate.h"
#include "services/moves/move_watch.h"
#include "tests/moves/move_test_world.h"
#include "tests/support/child_process.h"
#include "tests/support/grpc_harness.h"
#include "tests/support/metrics_scrape.h"

namespace dcl::moves {
namespace {

using testing::ContextWithToken;
using testing::MoveWorld;

struct Served {
  explicit Served(MoveWorld& w)
      : gate(*w.pool),
        service(gate, w.logic),
        server(w.pool.get(), {{"dcl.v1.MoveService", &service}}),
        token(testing::CreateTokenFor(w.db, w.org, Role::kDcOperator)) {}
  std::unique_ptr<v1::MoveService::Stub> Stub() {
    return v1::MoveService::NewStub(server.Channel());
  }
  RpcGate gate;
  MoveServiceImpl service;
  testing::InProcessServer server;
  std::string token;
};

// A stream waits for the channel to connect instead of failing fast on a slow start.
std::unique_ptr<grpc::ClientContext> WatchContext(const std::string& token) {
  auto ctx = ContextWithToken(token);
  ctx->set_wait_for_ready(true);
  return ctx;
}

// The next event of a watch; a stream that ended instead fails the test with its status.
void ReadNext(grpc::ClientReader<v1::MoveEvent>& reader, v1::MoveEvent* event) {
  if (!reader.Read(event)) {
    const grpc::Status status = reader.Finish();
    FAIL("the watch ended before the expected event: " << status.error_code() << " "
                                                       << status.error_message());
  }
}

int64_t WatcherConnections(const MoveWorld& w) {
  return w.db.Count(std::string("SELECT count(*) FROM pg_stat_activity WHERE datname = "
                                "current_database() AND application_name = '") +
                    kWatcherApplicationName + "'");
}

// Every stream has ended, and the hub holds no more than its two connections: streams hold
// none of their own.
bool WaitForNoWatchers(const MoveWorld& w, const MoveLogic& logic) {
  for (int i = 0; i < 100; ++i) {
    if (logic.open_watch_streams() == 0 && WatcherConnections(w) <= 2) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

v1::Move StartOverGrpc(Served& s, MoveWorld& w) {
  v1::StartMoveRequest req;
  req.set_device_id(w.device);
  req.set_destination_rack_id(w.rack_b);
  req.set_destination_side(v1::SIDE_FRONT);
  req.set_destination_unit(20);
  v1::Move move;
  auto ctx = ContextWithToken(s.token);
  grpc::Status status = s.Stub()->StartMove(ctx.get(), req, &move);
  REQUIRE(status.ok());
  return move;
}

grpc::Status AdvanceOverGrpc(Served& s, const std::string& id, v1::MoveState target) {
  v1::AdvanceMoveRequest req;
  req.set_move_id(id);
  req.set_target(target);
  v1::Move move;
  auto ctx = ContextWithToken(s.token);
  return s.Stub()->AdvanceMove(ctx.get(), req, &move);
}

TEST_CASE(
    "WatchMove receives each transition made by another client, in order, and ends at "
    "the terminal state") {
  MoveWorld w;
  Served s(w);
  const v1::Move move = StartOverGrpc(s, w);

  v1::WatchMoveRequest watch;
  watch.set_move_id(move.id());
  auto ctx = WatchContext(s.token);
  auto stub = s.Stub();
  auto reader = stub->WatchMove(ctx.get(), watch);
  std::vector<v1::MoveEvent> events;
  v1::MoveEvent event;
  // The history first: the event that created the move.
  ReadNext(*reader, &event);
  events.push_back(event);
  REQUIRE(WatcherConnections(w) == 2);  // the hub's listener and reader, not the stream's

  const std::vector<v1::MoveState> path = {v1::MOVE_APPROVED, v1::MOVE_IN_PROGRESS,
                                           v1::MOVE_AWAITING_VERIFICATION, v1::MOVE_COMPLETED};
  // Catch2 assertions are not thread-safe: the other client records its outcomes instead.
  std::vector<grpc::StatusCode> outcomes;
  std::thread other_client([&] {
    for (v1::MoveState target : path) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      outcomes.push_back(AdvanceOverGrpc(s, move.id(), target).error_code());
    }
  });
  while (reader->Read(&event)) events.push_back(event);
  other_client.join();
  CHECK(outcomes == std::vector<grpc::StatusCode>(path.size(), grpc::StatusCode::OK));
  grpc::Status finished = reader->Finish();
  CHECK(finished.ok());

  REQUIRE(events.size() == 5);
  CHECK(events[0].from_state() == v1::MOVE_STATE_UNSPECIFIED);
  CHECK(events[0].to_state() == v1::MOVE_PLANNED);
  v1::MoveState previous = v1::MOVE_PLANNED;
  for (size_t i = 1; i < events.size(); ++i) {
    INFO(i);
    CHECK(events[i].sequence() == static_cast<int64_t>(i + 1));
    CHECK(events[i].move_id() == move.id());
    CHECK(events[i].from_state() == previous);
    CHECK(events[i].to_state() == path[i - 1]);
    CHECK(!events[i].actor().empty());
    previous = events[i].to_state();
  }
  CHECK(WaitForNoWatchers(w, w.logic));
}

TEST_CASE("a change made through one replica reaches a watcher on another") {
  MoveWorld w;
  Served replica_a(w);
  // A second replica: its own pool, logic, gate and server on the same database.
  auto pool_b = w.db.MakePool(4);
  MoveLogic logic_b(*pool_b);
  RpcGate gate_b(*pool_b);
  MoveServiceImpl service_b(gate_b, logic_b);
  testing::InProcessServer server_b(pool_b.get(), {{"dcl.v1.MoveService", &service_b}});
  auto stub_b = v1::MoveService::NewStub(server_b.Channel());

  const v1::Move move = StartOverGrpc(replica_a, w);
  v1::WatchMoveRequest watch;
  watch.set_move_id(move.id());
  auto ctx = WatchContext(replica_a.token);
  auto stub_a = replica_a.Stub();
  auto reader = stub_a->WatchMove(ctx.get(), watch);
  v1::MoveEvent event;
  ReadNext(*reader, &event);
  CHECK(event.to_state() == v1::MOVE_PLANNED);

  v1::CancelMoveRequest cancel;
  cancel.set_move_id(move.id());
  cancel.set_note("through replica b");
  v1::Move out;
  auto cancel_ctx = ContextWithToken(replica_a.token);
  REQUIRE(stub_b->CancelMove(cancel_ctx.get(), cancel, &out).ok());

  ReadNext(*reader, &event);
  CHECK(event.from_state() == v1::MOVE_PLANNED);
  CHECK(event.to_state() == v1::MOVE_CANCELLED);
  CHECK(event.note() == "through replica b");
  CHECK_FALSE(reader->Read(&event));
  CHECK(reader->Finish().ok());
}

TEST_CASE("WatchMove ends cleanly when the client cancels") {
  MoveWorld w;
  Served s(w);
  const v1::Move move = StartOverGrpc(s, w);
  v1::WatchMoveRequest watch;
  watch.set_move_id(move.id());
  auto ctx = WatchContext(s.token);
  auto stub = s.Stub();
  auto reader = stub->WatchMove(ctx.get(), watch);
  v1::MoveEvent event;
  ReadNext(*reader, &event);
  REQUIRE(w.logic.open_watch_streams() == 1);
  ctx->TryCancel();
  while (reader->Read(&event)) {
  }
  CHECK(reader->Finish().error_code() == grpc::StatusCode::CANCELLED);
  // The server side noticed and ended the stream.
  CHECK(WaitForNoWatchers(w, w.logic));
  // The move itself is untouched and can still be advanced.
  CHECK(AdvanceOverGrpc(s, move.id(), v1::MOVE_APPROVED).ok());
}

TEST_CASE("the process's metrics count a WatchMove stream while it is open and each event sent") {
  MoveWorld w;
  Served s(w);
  const v1::Move move = StartOverGrpc(s, w);
  auto metric = [](const std::string& series) {
    return testing::ValueOr0(testing::ParseSamples(MetricsRegistry::Default().Render()), series);
  };
  const std::string watch_ok =
      "dcl_rpc_calls_total{rpc=\"/dcl.v1.MoveService/WatchMove\",code=\"OK\",reason=\"\"}";
  const double open_before = metric("dcl_watch_streams_open");
  const double sent_before = metric("dcl_watch_events_sent_total");
  const double calls_before = metric(watch_ok);

  v1::WatchMoveRequest watch;
  watch.set_move_id(move.id());
  auto ctx = WatchContext(s.token);
  auto stub = s.Stub();
  auto reader = stub->WatchMove(ctx.get(), watch);
  v1::MoveEvent event;
  ReadNext(*reader, &event);  // the replayed MOVE_PLANNED
  CHECK(metric("dcl_watch_streams_open") - open_before == 1);
  // Counted once the server's write returned, which may be just after the client read it.
  CHECK(testing::WaitUntil(
      [&] { return metric("dcl_watch_events_sent_total") - sent_before == 1; },
      std::chrono::seconds(5)));
  CHECK(metric(watch_ok) == calls_before);  // counted when the stream ends

  REQUIRE(AdvanceOverGrpc(s, move.id(), v1::MOVE_CANCELLED).ok());
  ReadNext(*reader, &event);
  CHECK(event.to_state() == v1::MOVE_CANCELLED);
  CHECK_FALSE(reader->Read(&event));
  CHECK(reader->Finish().ok());
  CHECK(metric("dcl_watch_streams_open") == open_before);
  CHECK(metric("dcl_watch_events_sent_total") - sent_before == 2);
  CHECK(metric(watch_ok) - calls_before == 1);
}

TEST_CASE("WatchMove of a finished move replays its history and ends at once") {
  MoveWorld w;
  Served s(w);
  const v1::Move move = StartOverGrpc(s, w);
  REQUIRE(AdvanceOverGrpc(s, move.id(), v1::MOVE_CANCELLED).ok());
  v1::WatchMoveRequest watch;
  watch.set_move_id(move.id());
  auto ctx = WatchContext(s.token);
  auto stub = s.Stub();
  auto reader = stub->WatchMove(ctx.get(), watch);
  std::vector<v1::MoveState> states;
  v1::MoveEvent event;
  while (reader->Read(&event)) states.push_back(event.to_state());
  CHECK(reader->Finish().ok());
  CHECK(states == std::vector<v1::MoveState>{v1::MOVE_PLANNED, v1::MOVE_CANCELLED});
}

TEST_CASE("WatchMove of an unknown move is NOT_FOUND") {
  MoveWorld w;
  Served s(w);
  v1::WatchMoveRequest watch;
  watch.set_move_id("00000000-0000-4000-8000-000000000001");
  auto ctx = WatchContext(s.token);
  auto stub = s.Stub();
  auto reader = stub->WatchMove(ctx.get(), watch);
  v1::MoveEvent event;
  CHECK_FALSE(reader->Read(&event));
  CHECK(reader->Finish().error_code() == grpc::StatusCode::NOT_FOUND);
  CHECK(WaitForNoWatchers(w, w.logic));
}

TEST_CASE("watch streams are bounded: one more than the limit is RESOURCE_EXHAUSTED") {
  MoveWorld w;
  MoveLogic limited(*w.pool, absl::Milliseconds(20), StreamLimits{.per_server = 1, .per_org = 1});
  absl::StatusOr<v1::Move> move = w.Start(w.device, w.rack_b, v1::SIDE_FRONT, 20);
  REQUIRE(move.ok());
  v1::WatchMoveRequest watch;
  watch.set_move_id(move->id());
  std::atomic<bool> stop{false};
  std::atomic<int> first_events{0};
  absl::Status first_status;
  std::thread first([&] {
    first_status = limited.WatchMove(
        w.op, watch, [&](const v1::MoveEvent&) { return ++first_events > 0; },
        [&] { return stop.load(); });
  });
  for (int i = 0; i < 200 && first_events.load() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(first_events.load() == 1);
  absl::Status second = limited.WatchMove(
      w.op, watch, [](const v1::MoveEvent&) { return true; }, [] { return false; });
  CHECK(second.code() == absl::StatusCode::kResourceExhausted);
  stop = true;
  first.join();
  CHECK(first_status.code() == absl::StatusCode::kCancelled);
  // The slot is free again: a watch of the (now cancelled) move replays and ends.
  REQUIRE(w.Advance(move->id(), v1::MOVE_CANCELLED).ok());
  int events = 0;
  CHECK(
      limited
          .WatchMove(
              w.op, watch, [&](const v1::MoveEvent&) { return ++events > 0; }, [] { return false; })
          .ok());
  CHECK(events == 2);
  CHECK(WaitForNoWatchers(w, limited));
}

TEST_CASE("an invalid transition over gRPC carries INVALID_TRANSITION and the allowed targets") {
  MoveWorld w;
  Served s(w);
  const v1::Move move = StartOverGrpc(s, w);
  REQUIRE(AdvanceOverGrpc(s, move.id(), v1::MOVE_APPROVED).ok());
  REQUIRE(AdvanceOverGrpc(s, move.id(), v1::MOVE_IN_PROGRESS).ok());
  v1::CancelMoveRequest cancel;
  cancel.set_move_id(move.id());
  v1::Move out;
  auto ctx = ContextWithToken(s.token);
  grpc::Status status = s.Stub()->CancelMove(ctx.get(), cancel, &out);
  CHECK(status.error_code() == grpc::StatusCode::FAILED_PRECONDITION);
  auto detail = ErrorDetailFromGrpc(status);
  REQUIRE(detail.has_value());
  CHECK(detail->reason() == v1::INVALID_TRANSITION);
  CHECK(std::vector<std::string>(detail->allowed_targets().begin(),
                                 detail->allowed_targets().end()) ==
        std::vector<std::string>{"awaiting_verification", "needs_reconcile", "failed"});
}

TEST_CASE("only dc-operators may call MoveService") {
  MoveWorld w;
  Served s(w);
  const std::string commerce = testing::CreateTokenFor(w.db, w.org, Role::kCommerce);
  v1::GetMoveRequest req;
  req.set_move_id("00000000-0000-4000-8000-000000000001");
  v1::Move out;
  auto ctx = ContextWithToken(commerce);
  CHECK(s.Stub()->GetMove(ctx.get(), req, &out).error_code() ==
        grpc::StatusCode::PERMISSION_DENIED);
}

TEST_CASE(
    "two hundred streams on ten moves share the hub's two connections and each receives "
    "every event of its move once, in order") {
  MoveWorld w;
  constexpr int kMoves = 10;
  constexpr int kWatchersPerMove = 20;
  MoveLogic watching(
      *w.pool, absl::Milliseconds(50),
      StreamLimits{.per_server = kMoves * kWatchersPerMove, .per_org = kMoves * kWatchersPerMove});
  std::vector<std::string> moves;
  for (int i = 0; i < kMoves; ++i) {
    const std::string device = testing::CreateDevice(w.db, w.org, w.site);
    w.Place(device, w.rack_a, v1::SIDE_FRONT, 20 + i);
    absl::StatusOr<v1::Move> move = w.Start(device, w.rack_b, v1::SIDE_FRONT, 20 + i);
    REQUIRE(move.ok());
    moves.push_back(move->id());
  }
  // Catch2's assertions are not thread-safe: each watcher records, the test checks afterwards.
  std::vector<std::vector<int64_t>> sequences(kMoves * kWatchersPerMove);
  std::vector<absl::Status> ends(kMoves * kWatchersPerMove);
  std::atomic<int> started{0};
  std::vector<std::thread> watchers;
  for (int i = 0; i < kMoves * kWatchersPerMove; ++i) {
    watchers.emplace_back([&, i] {
      v1::WatchMoveRequest watch;
      watch.set_move_id(moves[i % kMoves]);
      bool counted = false;
      ends[i] = watching.WatchMove(
          w.op, watch,
          [&](const v1::MoveEvent& event) {
            sequences[i].push_back(event.sequence());
            if (!counted) ++started;
            counted = true;
            return true;
          },
          [] { return false; });
    });
  }
  for (int i = 0; i < 500 && started.load() < kMoves * kWatchersPerMove; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  REQUIRE(started.load() == kMoves * kWatchersPerMove);
  CHECK(watching.open_watch_streams() == kMoves * kWatchersPerMove);
  CHECK(WatcherConnections(w) == 2);
  for (v1::MoveState target : {v1::MOVE_APPROVED, v1::MOVE_IN_PROGRESS,
                               v1::MOVE_AWAITING_VERIFICATION, v1::MOVE_COMPLETED}) {
    for (const std::string& move : moves) REQUIRE(w.Advance(move, target).ok());
  }
  for (std::thread& t : watchers) t.join();
  const std::vector<int64_t> all = {1, 2, 3, 4, 5};
  for (size_t i = 0; i < watchers.size(); ++i) {
    INFO("watcher " << i);
    CHECK(ends[i].ok());
    CHECK(sequences[i] == all);
  }
  CHECK(WaitForNoWatchers(w, watching));
}

TEST_CASE(
    "a watcher keeps receiving after the hub's connections are killed: the hub reconnects "
    "and every subscriber re-reads") {
  MoveWorld w;
  absl::StatusOr<v1::Move> move = w.Start(w.device, w.rack_b, v1::SIDE_FRONT, 20);
  REQUIRE(move.ok());
  v1::WatchMoveRequest watch;
  watch.set_move_id(move->id());
  std::vector<int64_t> sequences;  // written by the watcher thread, read after join
  std::atomic<int> seen{0};
  absl::Status end;
  std::thread watcher([&] {
    end = w.logic.WatchMove(
        w.op, watch,
        [&](const v1::MoveEvent& event) {
          sequences.push_back(event.sequence());
          ++seen;
          return true;
        },
        [] { return false; });
  });
  for (int i = 0; i < 200 && seen.load() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(seen.load() == 1);
  CHECK(w.db.Count(std::string("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                               "WHERE datname = current_database() AND application_name = '") +
                   kWatcherApplicationName + "'") == 2);
  // Committed while the hub is disconnected: its notification is lost, the resync finds it.
  REQUIRE(w.Advance(move->id(), v1::MOVE_APPROVED).ok());
  REQUIRE(w.Advance(move->id(), v1::MOVE_CANCELLED).ok());
  watcher.join();
  CHECK(end.ok());
  CHECK(sequences == std::vector<int64_t>{1, 2, 3});
}

}  // namespace
}  // namespace dcl::moves
