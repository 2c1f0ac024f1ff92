// The mixed workload's move clients (each drives moves of its own devices through their states
// at random and checks the replay of every finished move's WatchMove stream), and the watch
// probe (a move made through one moves replica, watched live on the other).
#ifndef DCL_TESTS_SUPPORT_WORKLOAD_MOVE_CLIENTS_H_
#define DCL_TESTS_SUPPORT_WORKLOAD_MOVE_CLIENTS_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "tests/support/workload_move_driver.h"
#include "tests/support/workload_report.h"
#include "tests/support/workload_world.h"

namespace dcl::workload {

class MoveClient {
 public:
  MoveClient(SuiteProcesses& suite, const World& world, int index, std::vector<std::string> devices,
             uint64_t seed, Report& report);

  void Run(const std::atomic<bool>& stop);
  const std::vector<MoveRecord>& moves() const { return moves_; }

 private:
  void Step();

  // A finished move's stream, on a replica the client picks at random: its whole history, as
  // the client made it (through whichever replicas), then the end of the stream.
  void CheckReplay(const MoveRecord& move);

  MoveDriver driver_;
  const World& world_;
  std::vector<std::string> devices_;
  std::mt19937_64 rng_;
  Report& report_;
  std::map<std::string, MoveRecord> open_;  // by device
  std::vector<MoveRecord> moves_;
};

// The watch probe: a move made through one moves replica, watched live on the other. Each
// cycle starts the move through B, opens WatchMove on A, and makes every further transition
// through B only after A's stream delivered the previous one: each event A delivers was
// committed through B while A's stream was open, so it reached A through A's own listener.
class WatchProbe {
 public:
  WatchProbe(SuiteProcesses& suite, const World& world, std::string device, Report& report);

  void Run(const std::atomic<bool>& stop, const std::atomic<bool>& killed);
  std::vector<MoveRecord>& moves() { return moves_; }

 private:
  enum class Outcome { kComplete, kInterrupted, kRefused };

  Outcome Cycle(int a, int b, int unit);

  SuiteProcesses& suite_;
  const World& world_;
  const std::string device_;
  const std::vector<std::string> replicas_;
  MoveDriver driver_;
  Report& report_;
  std::vector<MoveRecord> moves_;
};

}  // namespace dcl::workload

#endif  // DCL_TESTS_SUPPORT_WORKLOAD_MOVE_CLIENTS_H_
