// Every binary of the workspace as a real process: --help lists the binary's own flags and the
// shared ones it reads and exits 0; an unknown flag, a malformed flag value and a malformed
// connection string are configuration errors (exit 2), while an unreachable database stays a
// failure (exit 1).
#include <catch2/catch.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/child_process.h"

namespace dcl {
namespace {

using namespace std::chrono_literals;

struct Binary {
  std::string path;                    // inside the workspace
  std::vector<std::string> own_flags;  // defined next to its main()
  std::vector<std::string> shared_flags;
  std::vector<std::string> extra_args;  // positional arguments a run needs (dclctl's command)
};

const std::vector<std::string> kServerFlags = {
    "--database_url", "--pool_size",          "--statement_timeout_ms",
    "--log_format",   "--listen",             "--tls_cert",
    "--tls_key",      "--tls_client_ca",      "--reflection",
    "--max_receive_message_bytes", "--shutdown_grace_seconds", "--lock_timeout_ms",
    "--idle_in_transaction_timeout_ms", "--database_pooler", "--metrics_listen"};

std::vector<Binary> AllBinaries() {
  return {
      {"services/reservation/reservation_server",
       {"--reservation_default_ttl_seconds", "--reservation_max_ttl_seconds"},
       kServerFlags,
       {"--listen=127.0.0.1:0"}},
      {"services/occupancy/occupancy_server",
       {"--occupancy_reservation_ttl_seconds"},
       kServerFlags,
       {"--listen=127.0.0.1:0"}},
      {"services/moves/moves_server", {}, kServerFlags, {"--listen=127.0.0.1:0"}},
      {"sweeper/sweeper",
       {"--interval_seconds", "--once", "--batch_size", "--sweeper_name"},
       {"--database_url", "--log_format", "--pool_size", "--statement_timeout_ms",
        "--database_pooler", "--metrics_listen"},
       {"--once"}},
      {"schema/migrate", {}, {"--database_url", "--log_format"}, {}},
      {"dclctl/dclctl",
       {"--org", "--role", "--subject", "--label", "--id", "--name", "--target", "--service"},
       {"--database_url"},
       {"org", "create", "--name=acme"}},
  };
}

struct Run {
  std::optional<int> exit_status;
  std::string log;
};

Run RunToEnd(const Binary& binary, const std::vector<std::string>& args) {
  testing::ChildProcess process(testing::RunfilesBinary(binary.path), args);
  Run run;
  run.exit_status = process.WaitForExit(20s);
  run.log = process.Log();
  return run;
}

TEST_CASE("--help of every binary lists its own flags and the shared ones it reads, exit 0") {
  for (const Binary& binary : AllBinaries()) {
    const Run run = RunToEnd(binary, {"--help"});
    INFO(binary.path << " printed:\n" << run.log);
    REQUIRE(run.exit_status.has_value());
    CHECK(*run.exit_status == 0);
    CHECK(run.log.find("No flags matched") == std::string::npos);
    for (const std::string& flag : binary.own_flags) {
      INFO("own flag " << flag);
      CHECK(run.log.find(flag) != std::string::npos);
    }
    for (const std::string& flag : binary.shared_flags) {
      INFO("shared flag " << flag);
      CHECK(run.log.find(flag) != std::string::npos);
    }
  }
}

TEST_CASE("an unknown flag is a configuration error (exit 2) naming the flag, for every binary") {
  for (const Binary& binary : AllBinaries()) {
    std::vector<std::string> args = binary.extra_args;
    args.push_back("--database_url=host=127.0.0.1 port=1 dbname=none user=dcl");
    args.push_back("--no_such_flag=1");
    const Run run = RunToEnd(binary, args);
    INFO(binary.path << " printed:\n" << run.log);
    REQUIRE(run.exit_status.has_value());
    CHECK(*run.exit_status == 2);
    CHECK(run.log.find("no_such_flag") != std::string::npos);
  }
}

TEST_CASE("a malformed connection string is a configuration error (exit 2) for every binary") {
  for (const Binary& binary : AllBinaries()) {
    std::vector<std::string> args = binary.extra_args;
    args.push_back("--database_url=not a conninfo ==");
    const Run run = RunToEnd(binary, args);
    INFO(binary.path << " printed:\n" << run.log);
    REQUIRE(run.exit_status.has_value());
    CHECK(*run.exit_status == 2);
    CHECK(run.log.find("--database_url") != std::string::npos);
    CHECK(run.log.find("retry") == std::string::npos);
  }
}

TEST_CASE("sweeper: a malformed flag value is exit 2, an unreachable database still exit 1") {
  const Binary sweeper = AllBinaries()[3];
  REQUIRE(sweeper.path == "sweeper/sweeper");
  const Run bad_value =
      RunToEnd(sweeper, {"--once", "--batch_size=many",
                         "--database_url=host=127.0.0.1 port=1 dbname=none user=dcl"});
  INFO("printed:\n" << bad_value.log);
  REQUIRE(bad_value.exit_status.has_value());
  CHECK(*bad_value.exit_status == 2);
  CHECK(bad_value.log.find("batch_size") != std::string::npos);

  // Port 1: a well-formed connection string nobody answers: the sweep fails, exit 1.
  const Run unreachable = RunToEnd(
      sweeper, {"--once", "--database_url=host=127.0.0.1 port=1 dbname=none user=dcl "
                          "connect_timeout=2"});
  INFO("printed:\n" << unreachable.log);
  REQUIRE(unreachable.exit_status.has_value());
  CHECK(*unreachable.exit_status == 1);
}

}  // namespace
}  // namespace dcl
