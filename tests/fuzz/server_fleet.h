// The server processes the RPC fuzzer calls: each binary started on a throwaway database,
// watched while the threads call, restarted on its port when it dies (so one run finds every
// class of failure), its deaths matched to the calls in flight and the killer confirmed against a
// fresh process, and its health checked at the end.
#ifndef DCL_TESTS_FUZZ_SERVER_FLEET_H_
#define DCL_TESTS_FUZZ_SERVER_FLEET_H_

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_call.h"
#include "tests/fuzz/fuzz_report.h"
#include "tests/fuzz/request_generator.h"
#include "tests/support/child_process.h"

namespace dcl::fuzz {

// A server that dies is restarted on its port (up to kMaxRestarts times) so that one run
// finds every class of failure, not only the first crash; the death itself is a failure.
constexpr int kMaxRestarts = 20;

struct Death {
  std::string how;               // "killed by signal 11 (Segmentation fault)"
  Clock::time_point last_alive;  // the last check that saw it running
  Clock::time_point detected;
  Clock::time_point restarted;  // when it served again (or the end of the run)
  std::string log_tail;
};

struct ServerProcess {
  std::string binary;   // workspace path, "services/occupancy/occupancy_server"
  std::string service;  // "dcl.v1.OccupancyService"
  std::unique_ptr<testing::ChildProcess> process;
  int port = 0;
  // Calls wait while it is down (being restarted).
  std::unique_ptr<std::atomic<bool>> down = std::make_unique<std::atomic<bool>>(false);
  Clock::time_point last_alive = Clock::now();
  std::vector<Death> deaths;
  bool gone = false;              // died and was not restarted
  std::vector<std::string> also;  // further services the same binary serves
  std::vector<std::string> all_services() const {
    std::vector<std::string> all = {service};
    all.insert(all.end(), also.begin(), also.end());
    return all;
  }
  std::string name() const { return binary.substr(binary.rfind('/') + 1); }
};

// Starts the server on `port` (0: any free port).
void Start(ServerProcess& server, const std::string& database_url, int port = 0);

// The last `lines` lines of `log`, indented for the report.
std::string LogTail(const std::string& log, int lines);

// "11 (Segmentation fault)".
std::string SignalName(int signal_number);

// The dead server's suspects, replayed one at a time against a fresh process of the same
// binary: the first one that kills it is the killer.
void ConfirmKiller(ServerProcess& server, const std::string& database_url,
                   const RequestGenerator& generator, const IdLegend& legend,
                   const std::vector<CallRecord>& suspects, Report& report);

// 1. Every server watched: a dead one is recorded and restarted on its port while the threads
// wait for it (`stop` set when it died too often or the run is stopping: then it stays down).
void CheckServers(std::vector<ServerProcess>& servers, const std::string& database_url,
                  std::atomic<bool>& stop);

// 1. and 2. After the run: each death with the calls in flight when it happened (calls answered
// UNAVAILABLE outside any death fail on their own), and the killer of the first few confirmed.
void ReportDeaths(std::vector<ServerProcess>& servers, const std::string& database_url,
                  const RequestGenerator& generator, const IdLegend& legend, Report& report);

// 6. Every server SERVING at the end.
void CheckHealth(std::vector<ServerProcess>& servers, Report& report);

}  // namespace dcl::fuzz

#endif  // DCL_TESTS_FUZZ_SERVER_FLEET_H_
