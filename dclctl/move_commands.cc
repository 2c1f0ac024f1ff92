// dclctl's move commands (MoveService): start, advance, cancel, show, list, watch.
#include "dclctl/command_groups.h"
#include "dclctl/command_support.h"

namespace dcl::admin {
namespace {

int MoveStart(Invocation& inv) {
  v1::StartMoveRequest req;
  req.set_request_id(WriteRequestId());
  req.set_device_id(Required(FLAGS_device, "device"));
  req.set_destination_rack_id(Required(FLAGS_rack, "rack"));
  req.set_destination_side(RequiredSide());
  req.set_destination_unit(RequiredInt(FLAGS_unit, "unit"));
  req.set_as_draft(absl::GetFlag(FLAGS_draft));
  req.set_note(absl::GetFlag(FLAGS_note));
  auto stub = StubFor<v1::MoveService>(inv, Service::kMoves);
  return Unary<v1::Move>(
      inv, Service::kMoves,
      [&](grpc::ClientContext* c, v1::Move* r) { return stub->StartMove(c, req, r); }, MoveText);
}

int MoveAdvance(Invocation& inv) {
  v1::AdvanceMoveRequest req;
  req.set_request_id(WriteRequestId());
  req.set_move_id(inv.args[0]);
  v1::MoveState target;
  const std::string to = Required(FLAGS_to, "to");
  if (!ParseMoveState(to, &target)) throw UsageError("--to: unknown move state \"" + to + "\"");
  req.set_target(target);
  const std::string observation_text = absl::GetFlag(FLAGS_observation);
  if (!observation_text.empty()) {
    v1::Observation observation;
    if (!ParseObservation(observation_text, &observation)) {
      throw UsageError("--observation must be found_at_destination or not_moved");
    }
    req.set_observation(observation);
  }
  req.set_note(absl::GetFlag(FLAGS_note));
  auto stub = StubFor<v1::MoveService>(inv, Service::kMoves);
  return Unary<v1::Move>(
      inv, Service::kMoves,
      [&](grpc::ClientContext* c, v1::Move* r) { return stub->AdvanceMove(c, req, r); }, MoveText);
}

int MoveCancel(Invocation& inv) {
  v1::CancelMoveRequest req;
  req.set_request_id(WriteRequestId());
  req.set_move_id(inv.args[0]);
  req.set_note(absl::GetFlag(FLAGS_note));
  auto stub = StubFor<v1::MoveService>(inv, Service::kMoves);
  return Unary<v1::Move>(
      inv, Service::kMoves,
      [&](grpc::ClientContext* c, v1::Move* r) { return stub->CancelMove(c, req, r); }, MoveText);
}

int MoveShow(Invocation& inv) {
  v1::GetMoveRequest req;
  req.set_move_id(inv.args[0]);
  auto stub = StubFor<v1::MoveService>(inv, Service::kMoves);
  return Unary<v1::Move>(
      inv, Service::kMoves,
      [&](grpc::ClientContext* c, v1::Move* r) { return stub->GetMove(c, req, r); }, MoveText);
}

int MoveList(Invocation& inv) {
  v1::ListMovesRequest req;
  req.set_state(OptionalMoveState());
  req.set_device_id(absl::GetFlag(FLAGS_device));
  auto stub = StubFor<v1::MoveService>(inv, Service::kMoves);
  v1::ListMovesResponse all;
  const grpc::Status status = CollectPages<v1::ListMovesResponse>(
      inv, Service::kMoves, &all,
      [](v1::ListMovesResponse& to, const v1::ListMovesResponse& from) {
        to.mutable_moves()->MergeFrom(from.moves());
      },
      [](const v1::ListMovesResponse& r) { return r.moves_size(); },
      [&](grpc::ClientContext* c, const std::string& token, int size, v1::ListMovesResponse* r) {
        req.set_page_token(token);
        req.set_page_size(size);
        return stub->ListMoves(c, req, r);
      });
  return PrintList<v1::ListMovesResponse>(inv, status, all, MovesTable);
}

// Ctrl-C (or SIGTERM) during a watch, turned into a cancelled stream. A signal handler may only
// do async-signal-safe things, so it writes a byte to a pipe; a thread reads it and cancels the
// call. Installed with sigaction for the whole process, so it works whichever thread the
// signal lands on (gRPC runs threads of its own).
class WatchInterrupter {
 public:
  explicit WatchInterrupter(grpc::ClientContext& context) : context_(context) {
    if (pipe2(fds_, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
    write_fd_ = fds_[1];
    struct sigaction action {};
    action.sa_handler = [](int) {
      const char byte = 'i';
      [[maybe_unused]] ssize_t n = write(write_fd_, &byte, 1);
    };
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &old_int_);
    sigaction(SIGTERM, &action, &old_term_);
    waiter_ = std::thread([this] {
      char byte = 0;
      while (read(fds_[0], &byte, 1) < 0 && errno == EINTR) {
      }
      if (byte == 'i') {
        interrupted_ = true;
        context_.TryCancel();
      }
    });
  }
  WatchInterrupter(const WatchInterrupter&) = delete;
  WatchInterrupter& operator=(const WatchInterrupter&) = delete;
  ~WatchInterrupter() {
    const char byte = 'd';  // done: wakes the waiter when no signal came
    [[maybe_unused]] ssize_t n = write(fds_[1], &byte, 1);
    waiter_.join();
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
    close(fds_[0]);
    close(fds_[1]);
  }
  // Valid once the stream has finished (the waiter sets it before cancelling).
  bool interrupted() const { return interrupted_; }

 private:
  static inline int write_fd_ = -1;
  grpc::ClientContext& context_;
  int fds_[2] = {-1, -1};
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
  std::atomic<bool> interrupted_{false};
  std::thread waiter_;
};

int MoveWatch(Invocation& inv) {
  v1::WatchMoveRequest req;
  req.set_move_id(inv.args[0]);
  auto stub = StubFor<v1::MoveService>(inv, Service::kMoves);
  std::unique_ptr<grpc::ClientContext> context = MakeContext(inv.client, Service::kMoves, true);
  grpc::Status status;
  bool interrupted = false;
  v1::MoveEvent last;
  {
    WatchInterrupter interrupter(*context);
    if (!inv.json) {
      std::fprintf(stderr, "watching move %s (Ctrl-C stops watching; the move goes on)\n",
                   req.move_id().c_str());
    }
    std::unique_ptr<grpc::ClientReader<v1::MoveEvent>> reader = stub->WatchMove(context.get(), req);
    v1::MoveEvent event;
    while (reader->Read(&event)) {
      std::printf("%s\n", inv.json ? ToJson(event, false).c_str() : MoveEventLine(event).c_str());
      std::fflush(stdout);
      last = event;
    }
    status = reader->Finish();
    // The waiter marks the interruption before it cancels, so a stream it cancelled has
    // finished after the mark.
    interrupted = interrupter.interrupted();
  }
  if (interrupted) {
    if (!inv.json) std::fprintf(stderr, "stopped watching; the move goes on\n");
    return kExitInterrupted;
  }
  if (!status.ok()) return ReportFailure(inv, status);
  if (!inv.json) {
    std::fprintf(stderr, "move %s is %s\n", req.move_id().c_str(),
                 MoveStateName(last.to_state()).c_str());
  }
  return kExitOk;
}

}  // namespace

std::vector<Command> MoveCommands() {
  return {
      {{"move", "start"},
       "--device D --rack R --side S --unit U [--draft] [--note T]",
       "start moving a placed device to another unit of its site",
       0,
       0,
       Section::kMoves,
       MoveStart},
      {{"move", "advance"},
       "MOVE_ID --to STATE [--observation found_at_destination|not_moved] [--note T]",
       "take a move to its next state (planned, approved, in_progress, awaiting_verification, "
       "completed …)",
       1,
       1,
       Section::kMoves,
       MoveAdvance},
      {{"move", "cancel"},
       "MOVE_ID [--note T]",
       "call a move off",
       1,
       1,
       Section::kMoves,
       MoveCancel},
      {{"move", "show"}, "MOVE_ID", "one move", 1, 1, Section::kMoves, MoveShow},
      {{"move", "list"},
       "[--state S] [--device D] [--limit N]",
       "moves, oldest first",
       0,
       0,
       Section::kMoves,
       MoveList},
      {{"move", "watch"},
       "MOVE_ID",
       "every state change as it happens, until the move ends (Ctrl-C stops watching)",
       1,
       1,
       Section::kMoves,
       MoveWatch},
  };
}

}  // namespace dcl::admin
