#include "tests/support/workload_move_driver.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace dcl::workload {

MoveDriver::MoveDriver(SuiteProcesses& suite, const World& world, int index, Report& report)
    : rpc_(suite, SuiteService::kMoves, index, world.operator_token, report), report_(report) {}

std::optional<MoveRecord> MoveDriver::Start(const std::string& device, const std::string& rack,
                                            int unit, bool* failed_over) {
  v1::StartMoveRequest request;
  request.set_device_id(device);
  request.set_destination_rack_id(rack);
  request.set_destination_side(v1::SIDE_FRONT);
  request.set_destination_unit(unit);
  request.set_note("replica test");
  v1::Move move;
  const Answer answer = rpc_.Call(&v1::MoveService::Stub::StartMove, "StartMove", request, &move);
  if (failed_over != nullptr) *failed_over = answer.in_doubt;
  if (answer.status.ok()) return MoveRecord{move.id(), device, {move.state()}};
  if (!answer.in_doubt && !OutcomeUnknown(answer.status)) return std::nullopt;
  // Unknown: the device's open move, if the first attempt made one.
  v1::ListMovesRequest list;
  list.set_device_id(device);
  list.set_page_size(500);
  for (int attempt = 0; attempt < kReadAttempts; ++attempt) {
    v1::ListMovesResponse moves;
    const grpc::Status status = rpc_.Once(
        attempt % rpc_.replicas(), &v1::MoveService::Stub::ListMoves, "ListMoves", list, &moves);
    if (OutcomeUnknown(status)) {
      std::this_thread::sleep_for(250ms);
      continue;
    }
    for (const v1::Move& m : moves.moves()) {
      if (m.state() != v1::MOVE_COMPLETED && m.state() != v1::MOVE_CANCELLED &&
          m.state() != v1::MOVE_FAILED) {
        report_.Note("StartMove outcome unknown, resolved by reading: started");
        return MoveRecord{m.id(), device, {m.state()}};
      }
    }
    report_.Note("StartMove outcome unknown, resolved by reading: not started");
    return std::nullopt;
  }
  report_.Fail("StartMove outcome unknown and unreadable for device " + device);
  return std::nullopt;
}

bool MoveDriver::Advance(MoveRecord& move, v1::MoveState target, v1::Observation observation,
                         bool* failed_over) {
  v1::Move answer_move;
  Answer answer;
  const bool cancel = target == v1::MOVE_CANCELLED;
  if (cancel) {
    v1::CancelMoveRequest request;
    request.set_move_id(move.id);
    request.set_note("replica test");
    answer = rpc_.Call(&v1::MoveService::Stub::CancelMove, "CancelMove", request, &answer_move);
  } else {
    v1::AdvanceMoveRequest request;
    request.set_move_id(move.id);
    request.set_target(target);
    request.set_observation(observation);
    request.set_note("replica test");
    answer = rpc_.Call(&v1::MoveService::Stub::AdvanceMove, "AdvanceMove", request, &answer_move);
  }
  if (failed_over != nullptr) *failed_over = answer.in_doubt;
  const std::string rpc = cancel ? "CancelMove" : "AdvanceMove";
  if (answer.status.ok()) {
    move.path.push_back(target);
    return true;
  }
  if (!answer.in_doubt && answer.status.error_code() == grpc::StatusCode::ABORTED) {
    // Retried and still aborted (a lock held past the lock timeout): nothing was written.
    const std::optional<v1::MoveState> now = ReadState(move.id);
    if (now.has_value() && *now != move.path.back()) {
      report_.Fail(absl::StrCat("2. ", rpc, " of move ", move.id, " answered ABORTED yet it is ",
                                v1::MoveState_Name(*now)));
      move.unknown = true;
    }
    report_.Note(absl::StrCat(rpc, " aborted after retries, nothing written"));
    return false;
  }
  if (!answer.in_doubt && !OutcomeUnknown(answer.status)) {
    // Only this client changes this move: a valid transition refused is a defect.
    report_.Fail(absl::StrCat("2. ", rpc, " ", v1::MoveState_Name(move.path.back()), " -> ",
                              v1::MoveState_Name(target), " of move ", move.id,
                              " refused: ", Report::CodeName(answer.status.error_code()), " ",
                              answer.status.error_message()));
    move.unknown = true;
    return false;
  }
  std::optional<v1::MoveState> now = ReadState(move.id);
  if (!now.has_value()) {
    report_.Fail(absl::StrCat(rpc, " outcome unknown and unreadable for move ", move.id));
    move.unknown = true;
    return false;
  }
  report_.Note(absl::StrCat(
      rpc, " outcome unknown, resolved by reading: ", *now == target ? "applied" : "not applied"));
  if (*now == target) {
    move.path.push_back(target);
    return true;
  }
  if (*now != move.path.back()) {
    report_.Fail(absl::StrCat("2. move ", move.id, " is ", v1::MoveState_Name(*now), ", neither ",
                              v1::MoveState_Name(move.path.back()), " nor ",
                              v1::MoveState_Name(target)));
    move.unknown = true;
  }
  return false;
}

std::optional<v1::MoveState> MoveDriver::ReadState(const std::string& move_id) {
  v1::GetMoveRequest request;
  request.set_move_id(move_id);
  for (int attempt = 0; attempt < kReadAttempts; ++attempt) {
    v1::Move move;
    const grpc::Status status = rpc_.Once(
        attempt % rpc_.replicas(), &v1::MoveService::Stub::GetMove, "GetMove", request, &move);
    if (status.ok()) return move.state();
    if (!OutcomeUnknown(status)) return std::nullopt;
    std::this_thread::sleep_for(250ms);
  }
  return std::nullopt;
}

void MoveDriver::Finish(MoveRecord& move) {
  for (int step = 0; step < 6 && !move.terminal() && !move.unknown; ++step) {
    switch (move.path.back()) {
      case v1::MOVE_DRAFT:
      case v1::MOVE_PLANNED:
      case v1::MOVE_APPROVED:
        Advance(move, v1::MOVE_CANCELLED, v1::OBSERVATION_UNSPECIFIED);
        break;
      case v1::MOVE_IN_PROGRESS:
        Advance(move, v1::MOVE_FAILED, v1::OBSERVATION_UNSPECIFIED);
        break;
      case v1::MOVE_AWAITING_VERIFICATION:
        Advance(move, v1::MOVE_COMPLETED, v1::OBSERVATION_UNSPECIFIED);
        break;
      case v1::MOVE_NEEDS_RECONCILE:
        Advance(move, v1::MOVE_FAILED, v1::OBSERVATION_NOT_MOVED);
        break;
      default:
        return;
    }
  }
}

WatchStream::WatchStream(v1::MoveService::Stub& stub, const std::string& token,
                         const std::string& move_id, std::chrono::seconds deadline) {
  context_.AddMetadata("authorization", "Bearer " + token);
  context_.set_deadline(std::chrono::system_clock::now() + deadline);
  v1::WatchMoveRequest request;
  request.set_move_id(move_id);
  reader_ = stub.WatchMove(&context_, request);
  thread_ = std::thread([this] {
    v1::MoveEvent event;
    while (reader_->Read(&event)) {
      std::lock_guard<std::mutex> lock(mu_);
      events_.push_back(event);
      changed_.notify_all();
    }
    const grpc::Status status = reader_->Finish();
    std::lock_guard<std::mutex> lock(mu_);
    status_ = status;
    changed_.notify_all();
  });
}

WatchStream::~WatchStream() {
  context_.TryCancel();
  thread_.join();
}

bool WatchStream::WaitForEvents(size_t count, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return changed_.wait_for(lock, timeout, [&] {
    return events_.size() >= count || status_.has_value();
  }) && events_.size() >= count;
}

std::optional<grpc::Status> WatchStream::WaitForEnd(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait_for(lock, timeout, [&] { return status_.has_value(); });
  return status_;
}

std::vector<v1::MoveEvent> WatchStream::events() {
  std::lock_guard<std::mutex> lock(mu_);
  return events_;
}

bool WatchStream::broken() {
  std::lock_guard<std::mutex> lock(mu_);
  return status_.has_value() && !status_->ok();
}

std::string CompareEvents(const std::vector<v1::MoveEvent>& events,
                          const std::vector<v1::MoveState>& path) {
  std::vector<std::string> got, want;
  bool ordered = true;
  for (size_t i = 0; i < events.size(); ++i) {
    got.push_back(
        absl::StrCat(events[i].sequence(), ":", v1::MoveState_Name(events[i].to_state())));
    if (events[i].sequence() != static_cast<int64_t>(i + 1)) ordered = false;
  }
  for (size_t i = 0; i < path.size(); ++i) {
    want.push_back(absl::StrCat(i + 1, ":", v1::MoveState_Name(path[i])));
  }
  if (ordered && got == want) return "";
  return absl::StrCat("delivered [", absl::StrJoin(got, " "), "], made [", absl::StrJoin(want, " "),
                      "]");
}

}  // namespace dcl::workload
