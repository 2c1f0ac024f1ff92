// A private PostgreSQL 15 cluster for the fault history, with default durability (fsync and
// synchronous commit on), which the program itself restarts, crashes (immediate-mode stop) and
// starts again: the shared cluster of tests/run runs with fsync off and may not be crashed.
// The same commands as deploy/pg-cluster (run as the postgres user when root, loopback TCP only).
#ifndef DCL_TESTS_FAULTS_PG_CLUSTER_H_
#define DCL_TESTS_FAULTS_PG_CLUSTER_H_

#include <string>

namespace dcl::faults {

class OwnCluster {
 public:
  // initdb in a fresh folder under /tmp, then start on a free port with `max_connections`.
  explicit OwnCluster(int max_connections);
  OwnCluster(const OwnCluster&) = delete;
  OwnCluster& operator=(const OwnCluster&) = delete;
  ~OwnCluster();  // stops (immediate) and removes the folder

  int port() const { return port_; }
  // "host=127.0.0.1 port=N user=dcl" (the superuser initdb made).
  std::string conninfo() const;

  // pg_ctl restart -m fast (a clean shutdown: every connection ends, checkpoint, start).
  void FastRestart();
  // pg_ctl stop -m immediate: no checkpoint, as after a power loss; Start() then recovers
  // from the write-ahead log.
  void CrashStop();
  void Start();

 private:
  void PgCtl(const std::string& arguments);

  std::string dir_;
  int port_ = 0;
  int max_connections_;
};

}  // namespace dcl::faults

#endif  // DCL_TESTS_FAULTS_PG_CLUSTER_H_
