// The whole dcl suite as real processes on one database, for tests that must see replicas,
// crashes and restarts: N replicas of each server binary (reservation, occupancy, moves) and M
// sweepers, each a child process with its own port and log, addressed by name
// ("reservation-0", "moves-1", "sweeper-0"), killed, paused and restarted on the same port.
// Used by the replica test (tests/replicas) and meant for fault injection.
#ifndef DCL_TESTS_SUPPORT_SUITE_PROCESSES_H_
#define DCL_TESTS_SUPPORT_SUITE_PROCESSES_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tests/support/child_process.h"

namespace dcl::testing {

// The port a server process logs once it serves ("... serving on port N"); 0 when it exited or
// did not serve within `timeout`.
int WaitForServingPort(ChildProcess& process, std::chrono::milliseconds timeout);

// A plaintext channel to 127.0.0.1:`port`. Channels with different `distinct` values get
// connections of their own (one shared HTTP/2 connection would serialise their calls), and a
// restarted server is reached again within a moment, not after gRPC's default backoff.
std::shared_ptr<grpc::Channel> LocalChannel(int port, int distinct = 0);

// grpc.health.v1 says SERVING for the whole server, within `timeout`.
bool IsServing(int port, std::chrono::milliseconds timeout);

enum class SuiteService { kReservation, kOccupancy, kMoves };

struct SuiteOptions {
  // The servers' and sweepers' pools; may go through a transaction pooler.
  std::string database_url;
  // The moves servers' LISTEN connection (--watch_database_url); must reach PostgreSQL
  // directly. Empty: database_url.
  std::string watch_database_url;
  // Passes --database_pooler=transaction (database_url goes through PgBouncer).
  bool transaction_pooler = false;
  int replicas = 2;  // of each server binary
  int sweepers = 2;
  std::vector<std::string> server_flags;   // added to every server's command line
  std::vector<std::string> sweeper_flags;  // added to every sweeper's command line
  // Where the binaries come from: a folder holding reservation_server, occupancy_server,
  // moves_server and sweeper (another release's, for the rolling upgrade); empty: this
  // workspace's runfiles.
  std::string binary_dir;
};

class SuiteProcesses {
 public:
  // Starts every process and waits until each server is SERVING; throws with the log of the
  // first one that does not come up.
  explicit SuiteProcesses(SuiteOptions options);
  SuiteProcesses(const SuiteProcesses&) = delete;
  SuiteProcesses& operator=(const SuiteProcesses&) = delete;
  ~SuiteProcesses();  // SIGKILLs whatever still runs

  // "reservation-0", ..., "moves-1", "sweeper-0", ... in start order.
  std::vector<std::string> Names() const;
  // The replicas of one server binary, by name, in index order.
  std::vector<std::string> ReplicasOf(SuiteService service) const;
  // A server's port (kept across restarts); 0 for a sweeper.
  int Port(const std::string& name) const;

  // Sends `signal_number`; for SIGKILL and SIGTERM waits until the process has exited. A
  // process ended this way is not reported by UnexpectedExits().
  void Kill(const std::string& name, int signal_number);
  // Any other signal (SIGSTOP, SIGCONT) without waiting.
  void Signal(const std::string& name, int signal_number);
  // Starts an exited process again with the same command line (a server on the same port)
  // and waits until it serves; throws when it does not.
  void Restart(const std::string& name);
  // Restart() with the binary of the same name in `binary_dir` (a folder as in SuiteOptions;
  // empty: this workspace's runfiles) from now on: the rolling upgrade of one process.
  void RestartWith(const std::string& name, const std::string& binary_dir);
  bool Running(const std::string& name);
  // Everything the process logged, over all of its runs.
  std::string Log(const std::string& name) const;
  // "moves-1 exited with status 1" for every process that is not running though nobody
  // stopped it.
  std::vector<std::string> UnexpectedExits();

 private:
  struct Member {
    std::string binary;  // workspace path
    std::vector<std::string> args;
    bool server = false;
    int port = 0;
    std::unique_ptr<ChildProcess> process;
    bool stopped = false;      // ended by Kill()
    std::string earlier_logs;  // of the runs before a restart
  };
  void StartMember(const std::string& name, Member& member);
  Member& Find(const std::string& name);
  const Member& Find(const std::string& name) const;

  const SuiteOptions options_;
  std::vector<std::string> order_;
  mutable std::mutex mu_;  // guards members_ against concurrent Kill/Restart and reads
  std::map<std::string, Member> members_;
};

}  // namespace dcl::testing

#endif  // DCL_TESTS_SUPPORT_SUITE_PROCESSES_H_
