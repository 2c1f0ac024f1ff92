// netbox_import_bench: `dclctl import netbox --url` end to end at scale. A generated NetBox site
// (--racks racks of 42 U, --devices devices: 1U and 2U full-depth servers, half-depth switches
// in front/rear pairs) is served by the stand-in NetBox (tests/admin/netbox_standin.py, NetBox's
// paging: 1000 rows a page, so 8,000 devices are 8 pages); the real dclctl binary imports it
// into a fresh organization through the real occupancy and inventory services (in process, on
// 127.0.0.1:0, against --database_url). Printed:
//   first import: devices/s end to end (fetch, parse, plan, every RegisterDevice and
//     PlaceDevice through the one booking write path), goal >= 500/s;
//   re-run with nothing changed: devices/s, goal >= 5,000/s, and proof that it wrote nothing
//     (devices, bookings and request-ledger rows counted before and after).
// dclctl's progress bar shows when stdout is a terminal. Exit status 1 when an import fails or
// the re-run writes anything.
//
// Run: tests/bench/run_netbox_import_bench [--racks=200 --devices=8000]
// (a throwaway PostgreSQL, optimised build; see that script).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <pqxx/pqxx>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "services/common/auth.h"
#include "services/common/db.h"
#include "services/common/rpc_gate.h"
#include "services/common/server.h"
#include "services/inventory/inventory_logic.h"
#include "services/inventory/inventory_service.h"
#include "services/occupancy/occupancy_logic.h"
#include "services/occupancy/occupancy_service.h"

ABSL_FLAG(std::string, database_url, "", "a migrated, disposable PostgreSQL database");
ABSL_FLAG(int, racks, 200, "racks of the generated NetBox site");
ABSL_FLAG(int, devices, 8000, "devices of the generated NetBox site");
ABSL_FLAG(std::string, dclctl, "", "the dclctl binary");
ABSL_FLAG(std::string, standin, "", "tests/admin/netbox_standin.py");
ABSL_FLAG(int, pool_size, 8, "database connections of the services");

namespace dcl {
namespace {

[[noreturn]] void Die(const std::string& why) {
  std::fprintf(stderr, "netbox_import_bench: %s\n", why.c_str());
  std::exit(1);
}

std::string Scalar(const std::string& url, const std::string& sql) {
  pqxx::connection conn(url);
  pqxx::work tx(conn);
  pqxx::row row = tx.exec1(sql);
  tx.commit();
  return row[0].is_null() ? "" : row[0].as<std::string>();
}

// What the organization holds: devices, bookings, request-ledger rows.
std::string Footprint(const std::string& url, const std::string& org) {
  return Scalar(url, absl::StrCat(
                         "SELECT (SELECT count(*) FROM devices WHERE org_id = '", org, "') || ' devices, ' || "
                         "(SELECT count(*) FROM bookings b JOIN racks r ON r.id = b.rack_id JOIN sites s ON "
                         "s.id = r.site_id WHERE s.org_id = '", org, "') || ' bookings, ' || "
                         "(SELECT count(*) FROM client_requests) || ' ledger rows'"));
}

// Runs dclctl with stdout and stderr inherited (a terminal sees the progress bar); returns
// its exit status and the seconds it took.
std::pair<int, double> RunDclctl(const std::string& command) {
  const auto start = std::chrono::steady_clock::now();
  const int status = std::system(command.c_str());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, seconds};
}

int Main() {
  const std::string url = absl::GetFlag(FLAGS_database_url);
  const int racks = absl::GetFlag(FLAGS_racks), devices = absl::GetFlag(FLAGS_devices);
  if (url.empty() || absl::GetFlag(FLAGS_dclctl).empty() || absl::GetFlag(FLAGS_standin).empty()) {
    Die("--database_url, --dclctl and --standin are required");
  }
  DbOptions options;
  options.url = url;
  options.pool_size = absl::GetFlag(FLAGS_pool_size);
  auto pool = std::make_unique<DbPool>(options);
  RpcGate gate(*pool);
  occupancy::OccupancyLogic occupancy_logic(*pool);
  occupancy::OccupancyServiceImpl occupancy(gate, occupancy_logic);
  inventory::InventoryLogic inventory_logic(*pool);
  inventory::InventoryServiceImpl inventory(gate, inventory_logic);
  ServerConfig config;
  config.listen_address = "127.0.0.1:0";
  config.reflection = false;
  auto runtime = ServerRuntime::Start(config, pool.get(),
                                      {{"dcl.v1.OccupancyService", &occupancy},
                                       {"dcl.v1.InventoryService", &inventory}});
  if (!runtime.ok()) Die(runtime.status().ToString());

  const std::string org = Scalar(
      url, absl::StrCat("INSERT INTO organizations (name) VALUES ('netbox-bench-",
                        std::chrono::system_clock::now().time_since_epoch().count(),
                        "') RETURNING id"));
  Scalar(url, "UPDATE feature_settings SET enabled = true WHERE feature = 'datacenter' "
              "RETURNING 1");
  Scalar(url, absl::StrCat("INSERT INTO organization_feature_settings (org_id, feature, enabled) "
                           "VALUES ('", org, "', 'datacenter', true) RETURNING 1"));
  auto token = CreateToken(*pool, org, Role::kDcOperator, "", "netbox bench");
  if (!token.ok()) Die(token.status().ToString());

  // The stand-in NetBox: its first line on stdout is "port N".
  char dir[] = "/tmp/dcl-netbox-bench.XXXXXX";
  if (mkdtemp(dir) == nullptr) Die("mkdtemp");
  const std::string netbox_token = "nbt_bench01.0123456789abcdefghij";
  const std::string token_file = std::string(dir) + "/netbox-token";
  std::ofstream(token_file) << netbox_token << "\n";
  const std::string dcl_token_file = std::string(dir) + "/dcl-token";
  std::ofstream(dcl_token_file) << token->token << "\n";
  int out[2];
  if (pipe(out) != 0) Die("pipe");
  const std::string script = absl::GetFlag(FLAGS_standin);
  const std::string generate = absl::StrCat(racks, ",", devices);
  const pid_t standin = fork();
  if (standin < 0) Die("fork");
  if (standin == 0) {
    dup2(out[1], 1);
    close(out[0]);
    execl("/usr/bin/python3", "python3", script.c_str(), "--token", netbox_token.c_str(),
          "--generate", generate.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(out[1]);
  FILE* standin_out = fdopen(out[0], "r");
  int netbox_port = 0;
  if (standin_out == nullptr || std::fscanf(standin_out, "port %d", &netbox_port) != 1) {
    Die("the stand-in NetBox did not start");
  }

  const std::string command = absl::StrCat(
      absl::GetFlag(FLAGS_dclctl), " import netbox --url http://127.0.0.1:", netbox_port,
      " --token-file ", token_file, " --target=127.0.0.1:", (*runtime)->port(),
      " --dcl_token_file ", dcl_token_file, " --deadline_seconds=60");
  std::printf("generated NetBox site: %d racks, %d devices (pages of 1000 rows)\n", racks, devices);
  std::printf("before: %s\n", Footprint(url, org).c_str());

  const auto [first_exit, first_seconds] = RunDclctl(command);
  const std::string after_first = Footprint(url, org);
  std::printf("after the first import: %s\n", after_first.c_str());
  if (first_exit != 0) Die(absl::StrCat("the first import exited ", first_exit));
  const auto [again_exit, again_seconds] = RunDclctl(command);
  const std::string after_again = Footprint(url, org);
  std::printf("after the re-run: %s\n", after_again.c_str());
  if (again_exit != 0) Die(absl::StrCat("the re-run exited ", again_exit));

  std::printf("\nfirst import: %d devices in %.2f s = %.0f devices/s (goal >= 500)\n", devices,
              first_seconds, devices / first_seconds);
  std::printf("re-run, nothing changed: %d devices in %.2f s = %.0f devices/s (goal >= 5000), "
              "%s\n",
              devices, again_seconds, devices / again_seconds,
              after_again == after_first ? "wrote nothing" : "WROTE SOMETHING");
  kill(standin, SIGTERM);
  waitpid(standin, nullptr, 0);
  std::remove(token_file.c_str());
  rmdir(dir);
  (*runtime)->Shutdown();
  return after_again == after_first ? 0 : 1;
}

}  // namespace
}  // namespace dcl

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return dcl::Main();
}
