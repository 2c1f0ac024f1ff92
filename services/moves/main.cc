// moves_server: the MoveService on DCL_MOVES_LISTEN (default 127.0.0.1:50053).
#include <cstdio>
#include <memory>

#include "absl/flags/flag.h"
#include "services/common/command_line.h"
#include "services/common/rpc_gate.h"
#include "services/common/server.h"
#include "services/common/service_main.h"
#include "services/moves/move_logic.h"
#include "services/moves/move_service.h"

ABSL_FLAG(int, max_watch_streams, 4096,
          "concurrent WatchMove streams per server (they share one listener; each holds a "
          "server thread)");
ABSL_FLAG(int, max_watch_streams_per_org, 1024,
          "concurrent WatchMove streams per organization on this server");

ABSL_FLAG(std::string, watch_database_url, "",
          "PostgreSQL connection string for WatchMove's LISTEN connection, which must reach the "
          "server directly, not through a transaction pooler (default: $DCL_WATCH_DATABASE_URL, "
          "else --database_url)");

int main(int argc, char** argv) {
  dcl::BlockTerminationSignals();
  dcl::ParseCommandLineOrExit(
      argc, argv,
      {"moves_server",
       "moves_server: the MoveService (moves between rack units of one site) on "
       "127.0.0.1:50053.\n  moves_server --database_url=CONNINFO [--listen=HOST:PORT] ...",
       __FILE__, dcl::ServerSharedFlags()});
  if (absl::GetFlag(FLAGS_max_watch_streams) < 1 ||
      absl::GetFlag(FLAGS_max_watch_streams_per_org) < 1) {
    std::fprintf(
        stderr, "moves_server: --max_watch_streams and --max_watch_streams_per_org must be >= 1\n");
    return 2;
  }
  return dcl::RunServiceMain("moves", "DCL_MOVES_LISTEN", "127.0.0.1:50053", [](dcl::DbPool& pool, dcl::TokenCache* tokens) {
    dcl::ServiceSet set;
    auto gate = std::make_shared<dcl::RpcGate>(pool, tokens);
    dcl::StreamLimits watch_limits;
    watch_limits.per_server = absl::GetFlag(FLAGS_max_watch_streams);
    watch_limits.per_org = absl::GetFlag(FLAGS_max_watch_streams_per_org);
    auto logic = std::make_shared<dcl::moves::MoveLogic>(
        pool, absl::Milliseconds(200), watch_limits,
        dcl::FlagOrEnv(absl::GetFlag(FLAGS_watch_database_url), "DCL_WATCH_DATABASE_URL", ""));
    auto svc = std::make_shared<dcl::moves::MoveServiceImpl>(*gate, *logic);
    set.services.push_back({"dcl.v1.MoveService", svc.get()});
    set.keep_alive = {gate, logic, svc};
    return set;
  });
}
