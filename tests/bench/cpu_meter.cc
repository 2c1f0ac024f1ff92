#include "tests/bench/cpu_meter.h"

#include <dirent.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <pqxx/pqxx>
#include <sstream>
#include <thread>
#include <vector>

namespace dcl::bench {
namespace {

struct ProcStat {
  long long ppid = 0;
  double self_seconds = 0;      // utime + stime
  double children_seconds = 0;  // cutime + cstime: exited children it has waited for
};

// /proc/<pid>/stat; false if the process is gone. Fields after the command name (which may hold
// spaces, so it is skipped up to its closing parenthesis): state ppid ... utime(14) stime(15)
// cutime(16) cstime(17), numbered from 1 as in proc(5).
bool ReadStat(const std::string& pid, ProcStat* out) {
  std::ifstream in("/proc/" + pid + "/stat");
  std::string line;
  if (!std::getline(in, line)) return false;
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream rest(line.substr(close + 2));
  std::vector<std::string> f;
  for (std::string field; rest >> field;) f.push_back(field);
  if (f.size() < 15) return false;
  // f[0] is field 3 (state), so field n is f[n - 3].
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  out->ppid = std::stoll(f[1]);
  out->self_seconds = (std::stod(f[11]) + std::stod(f[12])) / tick;
  out->children_seconds = (std::stod(f[13]) + std::stod(f[14])) / tick;
  return true;
}

}  // namespace

double ProcessCpuSeconds(int pid) {
  ProcStat stat;
  return ReadStat(std::to_string(pid), &stat) ? stat.self_seconds : -1;
}

CpuSeconds ReadCpuSeconds(const std::string& url) {
  // A backend whose client just disconnected is still exiting: until the postmaster has reaped
  // it, its CPU is neither in /proc nor in the postmaster's cutime. Let it finish first.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  // The connection stays open while /proc is read: its backend is how the postmaster is found.
  pqxx::connection conn(url);
  const std::string backend =
      pqxx::nontransaction(conn).exec1("SELECT pg_backend_pid()")[0].as<std::string>();
  CpuSeconds cpu;
  ProcStat self;
  if (ReadStat("self", &self)) cpu.process = self.self_seconds;
  ProcStat mine;
  ProcStat master;
  if (!ReadStat(backend, &mine) || !ReadStat(std::to_string(mine.ppid), &master)) {
    return cpu;  // the database runs elsewhere (another host or container): not measured
  }
  cpu.database_measured = true;
  const std::string postmaster = std::to_string(mine.ppid);
  cpu.database = master.self_seconds + master.children_seconds;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return cpu;
  while (dirent* entry = readdir(proc)) {
    const std::string pid = entry->d_name;
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    ProcStat child;
    if (ReadStat(pid, &child) && std::to_string(child.ppid) == postmaster) {
      cpu.database += child.self_seconds;
    }
  }
  closedir(proc);
  return cpu;
}

CpuPerCall PrintCpuPerCall(const CpuSeconds& before, const CpuSeconds& after, long long calls,
                           const std::string& process_role) {
  CpuPerCall per_call;
  if (calls <= 0) return per_call;
  per_call.process_ms = (after.process - before.process) * 1000.0 / calls;
  if (!before.database_measured || !after.database_measured) {
    std::printf("   CPU per call: %s %.3f ms, PostgreSQL not measured (not on this machine)\n",
                process_role.c_str(), per_call.process_ms);
    std::fflush(stdout);
    return per_call;
  }
  per_call.database_ms = (after.database - before.database) * 1000.0 / calls;
  const double process_ms = per_call.process_ms;
  const double database_ms = per_call.database_ms;
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const double bound = cores * 1000.0 / (process_ms + database_ms);
  std::printf(
      "   CPU per call: %s %.3f ms, PostgreSQL %.3f ms; %u cores allow at most %.0f calls/s\n",
      process_role.c_str(), process_ms, database_ms, cores, bound);
  std::fflush(stdout);
  return per_call;
}

double ThisThreadCpuSeconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) / 1e9;
}

ServerCpuPerCall MeasureServerCpuPerCall(const CpuSeconds& before, const CpuSeconds& after,
                                         double load_generator_seconds, long long calls) {
  ServerCpuPerCall cpu;
  if (calls <= 0) return cpu;
  cpu.load_generator_ms = load_generator_seconds * 1000.0 / calls;
  // /proc counts in clock ticks (10 ms), the threads in nanoseconds: over a run of seconds the
  // difference is noise, but it must not make the server's share negative.
  cpu.server_ms =
      std::max(0.0, (after.process - before.process - load_generator_seconds) * 1000.0 / calls);
  if (before.database_measured && after.database_measured) {
    cpu.database_ms = (after.database - before.database) * 1000.0 / calls;
  }
  return cpu;
}

void ServerCpuOverRuns::Add(const CpuSeconds& before, const CpuSeconds& after,
                            double load_generator_seconds, long long calls) {
  spent_.process += after.process - before.process;
  spent_.database += after.database - before.database;
  spent_.database_measured =
      spent_.database_measured && before.database_measured && after.database_measured;
  load_generator_seconds_ += load_generator_seconds;
  calls_ += calls;
}

ServerCpuPerCall ServerCpuOverRuns::PerCall() const {
  return MeasureServerCpuPerCall(CpuSeconds{0, 0, true}, spent_, load_generator_seconds_, calls_);
}

void PrintServerCpuPerCall(const ServerCpuPerCall& cpu) {
  if (cpu.database_ms < 0) {
    std::printf(
        "   CPU per call, load generator apart: server %.3f ms, PostgreSQL not measured "
        "(load generator %.3f ms)\n",
        cpu.server_ms, cpu.load_generator_ms);
  } else {
    std::printf(
        "   CPU per call, load generator apart: server %.3f ms + PostgreSQL %.3f ms = "
        "%.3f ms (load generator %.3f ms)\n",
        cpu.server_ms, cpu.database_ms, cpu.total_ms(), cpu.load_generator_ms);
  }
  std::fflush(stdout);
}

}  // namespace dcl::bench
