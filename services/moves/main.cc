// moves_server: the MoveService on DCL_MOVES_LISTEN (default 127.0.0.1:50053).
#include <memory>

#include "services/common/command_line.h"
#include "services/common/rpc_gate.h"
#include "services/common/server.h"
#include "services/common/service_main.h"
#include "services/moves/move_logic.h"
#include "services/moves/move_service.h"

int main(int argc, char** argv) {
  dcl::BlockTerminationSignals();
  dcl::ParseCommandLineOrExit(
      argc, argv,
      {"moves_server",
       "moves_server: the MoveService (moves between rack units of one site) on "
       "127.0.0.1:50053.\n  moves_server --database_url=CONNINFO [--listen=HOST:PORT] ...",
       __FILE__, dcl::ServerSharedFlags()});
  return dcl::RunServiceMain("moves", "DCL_MOVES_LISTEN", "127.0.0.1:50053", [](dcl::DbPool& pool) {
    dcl::ServiceSet set;
    auto gate = std::make_shared<dcl::RpcGate>(pool);
    auto logic = std::make_shared<dcl::moves::MoveLogic>(pool);
    auto svc = std::make_shared<dcl::moves::MoveServiceImpl>(*gate, *logic);
    set.services.push_back({"dcl.v1.MoveService", svc.get()});
    set.keep_alive = {gate, logic, svc};
    return set;
  });
}
