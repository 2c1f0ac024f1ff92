#include "tests/support/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace dcl::testing {

std::string RunfilesBinary(const std::string& workspace_path) {
  for (const char* root_var : {"TEST_SRCDIR", "RUNFILES_DIR"}) {
    if (const char* root = std::getenv(root_var); root != nullptr && *root != '\0') {
      const std::string path = std::string(root) + "/dcl/" + workspace_path;
      if (access(path.c_str(), X_OK) == 0) return path;
    }
  }
  // Run by hand from the workspace: the binary sits in bazel-bin.
  for (const std::string& candidate : {workspace_path, "bazel-bin/" + workspace_path}) {
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  throw std::runtime_error(workspace_path + " not found: run through bazel test (tests/run)");
}

namespace {

std::string NewLogPath() {
  static std::atomic<int> counter{0};
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/child-" + std::to_string(getpid()) +
         "-" + std::to_string(counter++) + ".log";
}

}  // namespace

ChildProcess::ChildProcess(const std::string& binary, const std::vector<std::string>& args,
                           bool separate_stderr)
    : log_path_(NewLogPath()), stderr_path_(separate_stderr ? log_path_ + ".stderr" : "") {
  std::vector<std::string> argv_storage = {binary};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& arg : argv_storage) argv.push_back(arg.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_path_.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
  if (stderr_path_.empty()) {
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  } else {
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, stderr_path_.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
  }
  // The child starts with default signal dispositions and an empty mask, whatever the test
  // runner's threads have blocked.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t empty;
  sigemptyset(&empty);
  posix_spawnattr_setsigmask(&attr, &empty);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGTERM);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  const int rc = posix_spawn(&pid_, binary.c_str(), &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) throw std::runtime_error("posix_spawn " + binary + " failed: " + std::to_string(rc));
}

ChildProcess::~ChildProcess() {
  if (Running()) {
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
}

void ChildProcess::Reap(int wait_status) {
  exited_ = true;
  wait_status_ = wait_status;
}

bool ChildProcess::Running() {
  if (exited_) return false;
  int status = 0;
  const pid_t done = waitpid(pid_, &status, WNOHANG);
  if (done == pid_) {
    Reap(status);
    return false;
  }
  return true;
}

void ChildProcess::Signal(int signal_number) {
  if (!exited_) kill(pid_, signal_number);
}

std::optional<int> ChildProcess::WaitForExit(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (Running()) {
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (!WIFEXITED(wait_status_)) return std::nullopt;
  return WEXITSTATUS(wait_status_);
}

std::optional<int> ChildProcess::TerminatingSignal() {
  if (Running() || !WIFSIGNALED(wait_status_)) return std::nullopt;
  return WTERMSIG(wait_status_);
}

namespace {

std::string ReadWhole(const std::string& path) {
  std::ifstream in(path);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace

std::string ChildProcess::Log() const { return ReadWhole(log_path_); }

std::string ChildProcess::Stderr() const {
  return stderr_path_.empty() ? "" : ReadWhole(stderr_path_);
}

}  // namespace dcl::testing
