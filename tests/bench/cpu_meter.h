// CPU time read from /proc, so that a benchmark can say where a call's CPU went: to this process
// (the load generator and, where the benchmark hosts it, the server) or to the PostgreSQL
// cluster behind its connection. On the 2-core machine both share the cores, and calls/s times
// CPU per call is what the cores allow: that product is printed beside the ratio to the ceiling.
#ifndef DCL_TESTS_BENCH_CPU_METER_H_
#define DCL_TESTS_BENCH_CPU_METER_H_

#include <string>

namespace dcl::bench {

struct CpuSeconds {
  double process = 0;              // this process, all threads
  double database = 0;             // the postmaster and every process it started, live or exited
  bool database_measured = false;  // false when the cluster is not on this machine
};

// CPU used so far, after a pause of 300 ms for backends whose clients just left. `url` names
// the cluster (any of its databases); one short connection finds its postmaster. The database
// figure counts exited children through the postmaster's cutime/cstime, so backends that came and
// went between two readings are not lost.
CpuSeconds ReadCpuSeconds(const std::string& url);

// One process's CPU seconds so far (utime + stime, in clock ticks of 10 ms); -1 when it is gone
// or not on this machine. For one backend: its pid is pg_backend_pid().
double ProcessCpuSeconds(int pid);

// CPU per call in milliseconds; -1 where it was not measured.
struct CpuPerCall {
  double process_ms = -1;
  double database_ms = -1;
};

// "CPU per call: this process X ms, PostgreSQL Y ms; N cores allow at most Z calls/s" for the
// calls made between two readings; returns the two figures.
CpuPerCall PrintCpuPerCall(const CpuSeconds& before, const CpuSeconds& after, long long calls,
                           const std::string& process_role);

// This thread's CPU seconds so far (CLOCK_THREAD_CPUTIME_ID). A load generator's client threads
// read it before and after their calls, so that their share can be taken out of the process's
// when the server runs in the same process.
double ThisThreadCpuSeconds();

// CPU per call of a call's server side, the load generator apart: the process's CPU minus its
// client threads' (`load_generator_seconds`), and PostgreSQL's. What gRPC's own threads of the
// client side do outside the calling threads counts as server: the split errs towards the server,
// for the floor and the real RPC alike. -1 where not measured.
struct ServerCpuPerCall {
  double server_ms = -1;
  double database_ms = -1;
  double load_generator_ms = -1;
  double total_ms() const { return database_ms < 0 ? -1 : server_ms + database_ms; }
};
ServerCpuPerCall MeasureServerCpuPerCall(const CpuSeconds& before, const CpuSeconds& after,
                                         double load_generator_seconds, long long calls);
// "CPU per call, load generator apart: server X ms + PostgreSQL Y ms = Z ms (load generator W ms)".
void PrintServerCpuPerCall(const ServerCpuPerCall& cpu);

// The same over several measured stretches of one kind of call (bursts, or turns taken with
// another kind): each stretch's readings added, then per call as MeasureServerCpuPerCall.
class ServerCpuOverRuns {
 public:
  void Add(const CpuSeconds& before, const CpuSeconds& after, double load_generator_seconds,
           long long calls);
  ServerCpuPerCall PerCall() const;

 private:
  CpuSeconds spent_{0, 0, true};
  double load_generator_seconds_ = 0;
  long long calls_ = 0;
};

}  // namespace dcl::bench

#endif  // DCL_TESTS_BENCH_CPU_METER_H_
