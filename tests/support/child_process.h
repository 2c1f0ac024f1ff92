// A real binary of this workspace as a child process, for tests that must see it run (the
// sweeper daemon, a server receiving SIGTERM): spawned with posix_spawn from the runfiles tree,
// its log captured in a file, signalled and reaped here.
#ifndef DCL_TESTS_SUPPORT_CHILD_PROCESS_H_
#define DCL_TESTS_SUPPORT_CHILD_PROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace dcl::testing {

// The path of a binary of this workspace (e.g. "sweeper/sweeper") inside the test's runfiles;
// the test needs it as a data dependency.
std::string RunfilesBinary(const std::string& workspace_path);

class ChildProcess {
 public:
  // Starts `binary` with `args` (e.g. --database_url=..., --interval_seconds=1). With
  // `separate_stderr`, stderr goes to a file of its own (Stderr()) instead of into the log.
  ChildProcess(const std::string& binary, const std::vector<std::string>& args,
               bool separate_stderr = false);
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  // Kills the process (SIGKILL) if it still runs.
  ~ChildProcess();

  pid_t pid() const { return pid_; }
  // True while the process has not exited (reaps it when it has).
  bool Running();
  void Signal(int signal_number);
  // The exit status once the process exited normally within `timeout`; nullopt when it still
  // runs or was ended by a signal.
  std::optional<int> WaitForExit(std::chrono::milliseconds timeout);
  // The signal that ended the process (e.g. SIGSEGV), once it has exited by one; nullopt while
  // it runs or when it exited normally.
  std::optional<int> TerminatingSignal();
  // Everything the process logged so far (stdout, and stderr unless it is separate).
  std::string Log() const;
  // What the process wrote to stderr so far, when it is separate; else "".
  std::string Stderr() const;

 private:
  void Reap(int wait_status);

  pid_t pid_ = -1;
  std::string log_path_;
  std::string stderr_path_;  // empty: stderr goes to the log
  bool exited_ = false;
  int wait_status_ = 0;
};

// Polls `condition` every 50 ms until it holds or `timeout` passes; returns its last value.
template <typename Condition>
bool WaitUntil(Condition condition, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (condition()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace dcl::testing

#endif  // DCL_TESTS_SUPPORT_CHILD_PROCESS_H_
