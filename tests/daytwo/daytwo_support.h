// What the day-two programs share: running the deploy scripts (deploy/pg-cluster, pg-backup,
// free-port) as an operator would, a PostgreSQL cluster of their own in a folder under /tmp,
// and a record of acknowledged writes with wall-clock times (for a point-in-time audit and
// for the longest stall of a write).
#ifndef DCL_TESTS_DAYTWO_DAYTWO_SUPPORT_H_
#define DCL_TESTS_DAYTWO_DAYTWO_SUPPORT_H_

#include <chrono>
#include <mutex>
#include <string>
#include <vector>

namespace dcl::daytwo {

using WallClock = std::chrono::system_clock;

// The path of deploy/NAME: in the runfiles when run by Bazel, else under the working directory
// (a checkout's root).
std::string DeployScript(const std::string& name);

// Runs `command` with /bin/sh; its stdout. Throws with the output when it exits non-zero.
std::string Shell(const std::string& command);

// A folder under /tmp that the postgres user can enter; removed with everything in it.
class ScratchDir {
 public:
  explicit ScratchDir(bool keep);
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ~ScratchDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  bool keep_;
};

// A cluster made with deploy/pg-cluster in DIR, stopped when destroyed.
class Cluster {
 public:
  // init (unless `initialized`), optionally archiving into `archive`, then start on a free port.
  Cluster(std::string dir, const std::string& archive);
  // One that something else starts (or started) in `dir` on `port`; stopped all the same.
  Cluster(std::string dir, int port) : dir_(std::move(dir)), port_(port) {}
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;
  ~Cluster();
  int port() const { return port_; }
  // The superuser "dcl" on database `dbname`.
  std::string Url(const std::string& dbname = "dcl") const;

 private:
  std::string dir_;
  int port_ = 0;
};

struct Write {
  std::string op;   // "reserve", "cancel", "place"
  std::string id;   // the reservation's or booking's id
  WallClock::time_point started;
  WallClock::time_point answered;
  bool acknowledged = false;  // OK
  bool unknown = false;       // no answer (UNAVAILABLE, DEADLINE_EXCEEDED)
};

class WriteLog {
 public:
  void Add(Write write) {
    std::lock_guard<std::mutex> lock(mu_);
    writes_.push_back(std::move(write));
  }
  std::vector<Write> writes() const {
    std::lock_guard<std::mutex> lock(mu_);
    return writes_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<Write> writes_;
};

// "2026-12-01 20:15:00.123456+00", as recovery_target_time reads it.
std::string PostgresTime(WallClock::time_point t);

}  // namespace dcl::daytwo

#endif  // DCL_TESTS_DAYTWO_DAYTWO_SUPPORT_H_
