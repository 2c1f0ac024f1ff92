// moves_server: the MoveService on DCL_MOVES_LISTEN (default 127.0.0.1:50053).
#include <memory>

#include "absl/flags/parse.h"
#include "services/common/rpc_gate.h"
#include "services/common/server.h"
#include "services/common/service_main.h"
#include "services/moves/move_logic.h"
#include "services/moves/move_service.h"

int main(int argc, char** argv) {
  dcl::BlockTerminationSignals();
  absl::ParseCommandLine(argc, argv);
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
