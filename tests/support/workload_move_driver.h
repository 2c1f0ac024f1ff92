// Moves in the mixed workload: a driver that starts and advances moves with failover and
// resolves unknown outcomes by reading (shared by the move clients and the watch probe), a
// WatchMove stream read on its own thread, and the comparison of what a stream delivered with
// the path the move's client knows.
#ifndef DCL_TESTS_SUPPORT_WORKLOAD_MOVE_DRIVER_H_
#define DCL_TESTS_SUPPORT_WORKLOAD_MOVE_DRIVER_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "dcl/v1/moves.grpc.pb.h"
#include "tests/support/workload_failover_client.h"
#include "tests/support/workload_report.h"
#include "tests/support/workload_world.h"

namespace dcl::workload {

struct MoveRecord {
  std::string id;
  std::string device;
  std::vector<v1::MoveState> path;  // every state the move took, as its client knows it
  bool unknown = false;
  bool terminal() const {
    const v1::MoveState s = path.back();
    return s == v1::MOVE_COMPLETED || s == v1::MOVE_CANCELLED || s == v1::MOVE_FAILED;
  }
};

class MoveDriver {
 public:
  MoveDriver(SuiteProcesses& suite, const World& world, int index, Report& report);

  FailoverClient<v1::MoveService>& rpc() { return rpc_; }

  // StartMove; the move (planned) when it was started, whether acknowledged or found by
  // reading after an unknown outcome. `failed_over` says whether another replica answered.
  std::optional<MoveRecord> Start(const std::string& device, const std::string& rack, int unit,
                                  bool* failed_over = nullptr);

  // AdvanceMove (or CancelMove for MOVE_CANCELLED without observation); appends the new state
  // to the record when it happened. Returns whether it did.
  bool Advance(MoveRecord& move, v1::MoveState target, v1::Observation observation,
               bool* failed_over = nullptr);

  std::optional<v1::MoveState> ReadState(const std::string& move_id);

  // Drives an open move to a terminal state by the shortest way.
  void Finish(MoveRecord& move);

 private:
  FailoverClient<v1::MoveService> rpc_;
  Report& report_;
};

// A WatchMove stream read on its own thread.
class WatchStream {
 public:
  WatchStream(v1::MoveService::Stub& stub, const std::string& token, const std::string& move_id,
              std::chrono::seconds deadline);
  ~WatchStream();

  // Waits until `count` events arrived (true) or the stream ended or `timeout` passed (false).
  bool WaitForEvents(size_t count, std::chrono::milliseconds timeout);
  // Waits until the stream ended; its status.
  std::optional<grpc::Status> WaitForEnd(std::chrono::milliseconds timeout);
  std::vector<v1::MoveEvent> events();
  bool broken();

 private:
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReader<v1::MoveEvent>> reader_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::vector<v1::MoveEvent> events_;
  std::optional<grpc::Status> status_;
};

// The events a stream delivered against the path the move's client knows: the same states in
// the same order, sequences 1, 2, 3 ...; empty when they agree.
std::string CompareEvents(const std::vector<v1::MoveEvent>& events,
                          const std::vector<v1::MoveState>& path);

}  // namespace dcl::workload

#endif  // DCL_TESTS_SUPPORT_WORKLOAD_MOVE_DRIVER_H_
