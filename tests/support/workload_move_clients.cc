#include "tests/support/workload_move_clients.h"

#include <algorithm>
#include <thread>

#include "absl/strings/str_cat.h"

namespace dcl::workload {

MoveClient::MoveClient(SuiteProcesses& suite, const World& world, int index,
                       std::vector<std::string> devices, uint64_t seed, Report& report)
    : driver_(suite, world, index, report),
      world_(world),
      devices_(std::move(devices)),
      rng_(seed * 3000 + index),
      report_(report) {}

void MoveClient::Run(const std::atomic<bool>& stop) {
  while (!stop.load()) Step();
  // Leave nothing half-done that the audit would have to guess about: open moves stay open
  // (the audit checks their destination is held), the record says where each one is.
  for (auto& [device, move] : open_) moves_.push_back(move);
}

void MoveClient::Step() {
  if (devices_.empty()) {  // every device's state became unknown: nothing left to move
    std::this_thread::sleep_for(50ms);
    return;
  }
  const std::string device = devices_[rng_() % devices_.size()];
  auto open = open_.find(device);
  if (open == open_.end()) {
    const std::string rack = world_.move_racks[rng_() % world_.move_racks.size()];
    std::optional<MoveRecord> move =
        driver_.Start(device, rack, 1 + static_cast<int>(rng_() % kRackUnits));
    if (move.has_value()) open_[device] = *move;
    return;
  }
  MoveRecord& move = open->second;
  const uint32_t r = rng_() % 100;
  v1::MoveState target = v1::MOVE_CANCELLED;
  v1::Observation observation = v1::OBSERVATION_UNSPECIFIED;
  switch (move.path.back()) {
    case v1::MOVE_PLANNED:
      target = r < 75 ? v1::MOVE_APPROVED : v1::MOVE_CANCELLED;
      break;
    case v1::MOVE_APPROVED:
      target = r < 85 ? v1::MOVE_IN_PROGRESS : v1::MOVE_CANCELLED;
      break;
    case v1::MOVE_IN_PROGRESS:
      target = r < 70   ? v1::MOVE_AWAITING_VERIFICATION
               : r < 90 ? v1::MOVE_NEEDS_RECONCILE
                        : v1::MOVE_FAILED;
      break;
    case v1::MOVE_AWAITING_VERIFICATION:
      target = r < 85 ? v1::MOVE_COMPLETED : v1::MOVE_NEEDS_RECONCILE;
      break;
    case v1::MOVE_NEEDS_RECONCILE:
      target = r < 50 ? v1::MOVE_COMPLETED : v1::MOVE_FAILED;
      observation = r < 50 ? v1::OBSERVATION_FOUND_AT_DESTINATION : v1::OBSERVATION_NOT_MOVED;
      break;
    default:
      break;
  }
  driver_.Advance(move, target, observation);
  if (move.unknown) {
    moves_.push_back(move);
    open_.erase(open);
    devices_.erase(std::find(devices_.begin(), devices_.end(), device));
    return;
  }
  if (!move.terminal()) return;
  CheckReplay(move);
  moves_.push_back(move);
  open_.erase(open);
}

void MoveClient::CheckReplay(const MoveRecord& move) {
  for (int attempt = 0; attempt < 4; ++attempt) {
    const int replica = static_cast<int>(rng_() % driver_.rpc().replicas());
    WatchStream stream(driver_.rpc().stub(replica), driver_.rpc().token(), move.id, 5s);
    const std::optional<grpc::Status> end = stream.WaitForEnd(6000ms);
    if (end.has_value() && OutcomeUnknown(*end)) continue;  // that replica is down
    report_.Note("WatchMove replays of finished moves");
    if (!end.has_value() || !end->ok()) {
      report_.Fail(absl::StrCat("3. WatchMove of finished move ", move.id,
                                " did not end OK: ", end ? end->error_message() : "still open"));
      return;
    }
    if (const std::string diff = CompareEvents(stream.events(), move.path); !diff.empty()) {
      report_.Fail(absl::StrCat("3. WatchMove of finished move ", move.id, ": ", diff));
    }
    return;
  }
}

WatchProbe::WatchProbe(SuiteProcesses& suite, const World& world, std::string device,
                       Report& report)
    : suite_(suite),
      world_(world),
      device_(std::move(device)),
      replicas_(suite.ReplicasOf(SuiteService::kMoves)),
      driver_(suite, world, 100, report),
      report_(report) {}

void WatchProbe::Run(const std::atomic<bool>& stop, const std::atomic<bool>& killed) {
  int unit = 20;
  for (int cycle = 0; !stop.load(); ++cycle) {
    const int a = cycle % 2, b = 1 - a;
    if (!suite_.Running(replicas_[a]) || !suite_.Running(replicas_[b])) {
      std::this_thread::sleep_for(100ms);
      continue;
    }
    const Outcome outcome = Cycle(a, b, unit);
    if (outcome == Outcome::kComplete) {
      unit = unit == 20 ? 10 : 20;  // the device now stands at the destination
      report_.Note(killed.load() ? "watch probe: cycles complete after the kill"
                                 : "watch probe: cycles complete before the kill");
    } else if (outcome == Outcome::kInterrupted) {
      report_.Note("watch probe: cycles interrupted by the kill");
    }
  }
}

WatchProbe::Outcome WatchProbe::Cycle(int a, int b, int unit) {
  auto& rpc = driver_.rpc();
  // Every write of the cycle goes through B (unless B dies: then the client fails over to A
  // and the cycle counts as interrupted); A only streams.
  rpc.Prefer(b);
  bool failed_over = false;
  std::optional<MoveRecord> started = driver_.Start(device_, world_.probe_rack, unit, &failed_over);
  if (!started.has_value()) return Outcome::kRefused;
  MoveRecord move = *started;
  Outcome outcome = failed_over ? Outcome::kInterrupted : Outcome::kComplete;
  {
    WatchStream stream(rpc.stub(a), rpc.token(), move.id, 30s);
    const std::vector<v1::MoveState> targets = {v1::MOVE_APPROVED, v1::MOVE_IN_PROGRESS,
                                                v1::MOVE_AWAITING_VERIFICATION, v1::MOVE_COMPLETED};
    for (size_t i = 0; outcome == Outcome::kComplete; ++i) {
      if (!stream.WaitForEvents(move.path.size(), 5000ms)) {
        if (stream.broken() || !suite_.Running(replicas_[a]) || !suite_.Running(replicas_[b])) {
          outcome = Outcome::kInterrupted;
        } else {
          report_.Fail(absl::StrCat("3. WatchMove on ", replicas_[a], " did not deliver ",
                                    v1::MoveState_Name(move.path.back()), " of move ", move.id,
                                    " made through ", replicas_[b],
                                    " within 5 s: ", CompareEvents(stream.events(), move.path)));
          outcome = Outcome::kRefused;
        }
        break;
      }
      if (const std::string diff = CompareEvents(stream.events(), move.path); !diff.empty()) {
        report_.Fail(absl::StrCat("3. WatchMove on ", replicas_[a], " of move ", move.id,
                                  " made through ", replicas_[b], ": ", diff));
        outcome = Outcome::kRefused;
        break;
      }
      if (i == targets.size()) break;
      bool advanced_elsewhere = false;
      rpc.Prefer(b);
      driver_.Advance(move, targets[i], v1::OBSERVATION_UNSPECIFIED, &advanced_elsewhere);
      if (advanced_elsewhere || move.unknown) outcome = Outcome::kInterrupted;
      if (move.path.back() != targets[i]) break;
    }
    if (outcome == Outcome::kComplete) {
      const std::optional<grpc::Status> end = stream.WaitForEnd(5000ms);
      if (!end.has_value() || !end->ok()) {
        report_.Fail(absl::StrCat("3. WatchMove of completed move ", move.id, " on ", replicas_[a],
                                  " did not end OK"));
      }
    }
  }
  if (!move.terminal()) driver_.Finish(move);
  moves_.push_back(move);
  if (outcome == Outcome::kComplete || move.path.back() == v1::MOVE_COMPLETED) {
    return Outcome::kComplete;
  }
  return outcome;
}

}  // namespace dcl::workload
