// The sweeper binary: a daemon that sweeps every --interval_seconds, or one sweep with --once
// (for cron-style scheduling; exit status 0 = the sweep completed, 1 = it failed, 2 = bad
// configuration). SIGTERM/SIGINT end it after the current batch with exit status 0.
//
// No --enabled flag and no reading of the module's rollout switch, on purpose: see sweeper.h.
// Switching the module off must not switch off the time limit of every hold.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <ctime>
#include <memory>
#include <string>
#include <thread>

#include <spdlog/spdlog.h>

#include "absl/flags/flag.h"
#include "services/common/command_line.h"
#include "services/common/logging.h"
#include "services/common/metrics_http.h"
#include "services/common/server.h"
#include "services/common/service_main.h"
#include "sweeper/sweeper.h"

ABSL_FLAG(int, interval_seconds, 60, "seconds between the end of a sweep and the next one");
ABSL_FLAG(bool, once, false, "run one sweep and exit (0 = success, 1 = failure, 2 = bad configuration)");
ABSL_FLAG(int, batch_size, 20, "rows per transaction");
ABSL_FLAG(int, max_rows_per_second, 12000,
          "pace of a sweep with a backlog: rows per second at most (0: no pause between "
          "batches)");
ABSL_FLAG(int, request_retention_hours, 7 * 24,
          "hours a client request id is kept for replays before it is deleted");
ABSL_FLAG(int, capacity_window_days, 30,
          "the sites' capacity gauges: the forecast's window in days (1..365)");
ABSL_FLAG(int, capacity_max_sites, 1000,
          "the sites' capacity gauges: at most this many sites, by id (0: no gauges)");
ABSL_FLAG(std::string, sweeper_name, "",
          "this instance's row in sweeper_status (default: sweeper@<host name>)");

namespace {

std::string DefaultName() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0') return "sweeper";
  return std::string("sweeper@") + host;
}

// Waits for SIGTERM/SIGINT (blocked in every thread by BlockTerminationSignals) and asks the
// sweeper to stop; polls `done` so that it also ends when the sweeper ends on its own (--once).
void WatchSignals(dcl::Sweeper& sweeper, const std::atomic<bool>& done) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  const timespec poll = {0, 100 * 1000 * 1000};
  while (!done.load()) {
    const int signal_number = sigtimedwait(&set, nullptr, &poll);
    if (signal_number > 0) {
      spdlog::info("signal {} received: finishing the current batch", signal_number);
      sweeper.RequestStop();
      return;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  dcl::BlockTerminationSignals();
  dcl::ParseCommandLineOrExit(
      argc, argv,
      {"sweeper",
       "sweeper: returns lapsed holds and rack reservations to stock, every "
       "--interval_seconds or once (--once; exit 0 = swept, 1 = failed, 2 = bad "
       "configuration).\n  sweeper --database_url=CONNINFO [--once] ...",
       __FILE__,
       {dcl::SharedFlags::kDatabaseUrl, dcl::SharedFlags::kDatabasePool,
        dcl::SharedFlags::kLogFormat, dcl::SharedFlags::kMetrics}});
  dcl::TurnOffMutexDeadlockDetection();
  dcl::InitLogging("sweeper", dcl::LogFormatFromFlags());

  // A connection string libpq cannot read is bad configuration, not a database to retry.
  if (absl::StatusOr<std::string> url = dcl::DatabaseUrlFromFlags(); !url.ok()) {
    spdlog::critical("{}", std::string(url.status().message()));
    return dcl::kExitConfigurationError;
  }
  dcl::DbOptions db_options = dcl::DbOptionsFromFlags();
  const int interval_seconds = absl::GetFlag(FLAGS_interval_seconds);
  const int batch_size = absl::GetFlag(FLAGS_batch_size);
  if (interval_seconds < 1 || interval_seconds > 24 * 3600) {
    spdlog::critical("--interval_seconds must be between 1 and 86400, not {}", interval_seconds);
    return dcl::kExitConfigurationError;
  }
  if (batch_size < 1 || batch_size > 100000) {
    spdlog::critical("--batch_size must be between 1 and 100000, not {}", batch_size);
    return dcl::kExitConfigurationError;
  }
  const int max_rows_per_second = absl::GetFlag(FLAGS_max_rows_per_second);
  if (max_rows_per_second < 0 || max_rows_per_second > 10000000) {
    spdlog::critical("--max_rows_per_second must be between 0 and 10000000, not {}",
                     max_rows_per_second);
    return dcl::kExitConfigurationError;
  }
  const int retention_hours = absl::GetFlag(FLAGS_request_retention_hours);
  if (retention_hours < 1 || retention_hours > 90 * 24) {
    spdlog::critical("--request_retention_hours must be between 1 and 2160, not {}",
                     retention_hours);
    return 2;
  }
  const int capacity_window_days = absl::GetFlag(FLAGS_capacity_window_days);
  const int capacity_max_sites = absl::GetFlag(FLAGS_capacity_max_sites);
  if (capacity_window_days < 1 || capacity_window_days > 365) {
    spdlog::critical("--capacity_window_days must be between 1 and 365, not {}",
                     capacity_window_days);
    return dcl::kExitConfigurationError;
  }
  if (capacity_max_sites < 0 || capacity_max_sites > 100000) {
    spdlog::critical("--capacity_max_sites must be between 0 and 100000, not {}",
                     capacity_max_sites);
    return dcl::kExitConfigurationError;
  }
  // One batch at a time needs one connection, plus one when a broken one is being replaced.
  db_options.pool_size = std::min(db_options.pool_size, 2);

  dcl::SweeperOptions options;
  options.name = dcl::FlagOrEnv(absl::GetFlag(FLAGS_sweeper_name), "DCL_SWEEPER_NAME",
                                DefaultName());
  options.interval = absl::Seconds(interval_seconds);
  options.batch_size = batch_size;
  options.max_rows_per_second = max_rows_per_second;
  options.request_retention = absl::Hours(retention_hours);
  options.capacity_window_days = capacity_window_days;
  options.capacity_max_sites = capacity_max_sites;

  // Before the first sweep, so that a scrape sees it. Useful with the daemon; with --once the
  // endpoint lives only as long as the sweep.
  absl::StatusOr<std::unique_ptr<dcl::MetricsHttpServer>> metrics = dcl::StartMetricsFromFlags();
  if (!metrics.ok()) {
    spdlog::critical("cannot start: {}", metrics.status().ToString());
    return dcl::kExitConfigurationError;
  }

  dcl::DbPool pool(db_options);
  dcl::Sweeper sweeper(pool, options);
  std::atomic<bool> done{false};
  std::thread signals(WatchSignals, std::ref(sweeper), std::cref(done));

  int exit_status = 0;
  if (absl::GetFlag(FLAGS_once)) {
    exit_status = sweeper.SweepOnce().ok() ? 0 : 1;
  } else {
    sweeper.Run();  // returns only after a stop request
  }
  done.store(true);
  signals.join();
  pool.Close();
  return exit_status;
}
