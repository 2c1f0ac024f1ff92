// The gRPC adapter of MoveService: each method is one call through the gate (authentication,
// role table, module switch, logging, one status conversion) into MoveLogic.
#ifndef DCL_SERVICES_MOVES_MOVE_SERVICE_H_
#define DCL_SERVICES_MOVES_MOVE_SERVICE_H_

#include <grpcpp/grpcpp.h>

#include "dcl/v1/moves.grpc.pb.h"
#include "services/common/rpc_gate.h"
#include "services/moves/move_logic.h"

namespace dcl::moves {

class MoveServiceImpl final : public v1::MoveService::Service {
 public:
  MoveServiceImpl(RpcGate& gate, MoveLogic& logic) : gate_(gate), logic_(logic) {}
  MoveServiceImpl(const MoveServiceImpl&) = delete;
  MoveServiceImpl& operator=(const MoveServiceImpl&) = delete;

  grpc::Status StartMove(grpc::ServerContext* ctx, const v1::StartMoveRequest* req,
                         v1::Move* resp) override;
  grpc::Status AdvanceMove(grpc::ServerContext* ctx, const v1::AdvanceMoveRequest* req,
                           v1::Move* resp) override;
  grpc::Status CancelMove(grpc::ServerContext* ctx, const v1::CancelMoveRequest* req,
                          v1::Move* resp) override;
  grpc::Status GetMove(grpc::ServerContext* ctx, const v1::GetMoveRequest* req,
                       v1::Move* resp) override;
  grpc::Status ListMoves(grpc::ServerContext* ctx, const v1::ListMovesRequest* req,
                         v1::ListMovesResponse* resp) override;
  grpc::Status ListLocationHistory(grpc::ServerContext* ctx,
                                   const v1::ListLocationHistoryRequest* req,
                                   v1::ListLocationHistoryResponse* resp) override;
  grpc::Status CorrectLocation(grpc::ServerContext* ctx, const v1::CorrectLocationRequest* req,
                               v1::LocationRecord* resp) override;
  // Streams until the move is terminal, the client cancels, or the server shuts down (which
  // cancels in-flight calls after its grace period).
  grpc::Status WatchMove(grpc::ServerContext* ctx, const v1::WatchMoveRequest* req,
                         grpc::ServerWriter<v1::MoveEvent>* writer) override;

 private:
  RpcGate& gate_;
  MoveLogic& logic_;
};

}  // namespace dcl::moves

#endif  // DCL_SERVICES_MOVES_MOVE_SERVICE_H_
