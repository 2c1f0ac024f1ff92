#include "services/moves/move_service.h"

namespace dcl::moves {

grpc::Status MoveServiceImpl::StartMove(grpc::ServerContext* ctx, const v1::StartMoveRequest* req,
                                        v1::Move* resp) {
  return gate_.RunWrite(ctx, Rpc::kStartMove, *req, [&](const Principal& p, bool* replayed) {
    return logic_.StartMove(p, *req, resp, replayed);
  });
}

grpc::Status MoveServiceImpl::AdvanceMove(grpc::ServerContext* ctx,
                                          const v1::AdvanceMoveRequest* req, v1::Move* resp) {
  return gate_.RunWrite(ctx, Rpc::kAdvanceMove, *req, [&](const Principal& p, bool* replayed) {
    return logic_.AdvanceMove(p, *req, resp, replayed);
  });
}

grpc::Status MoveServiceImpl::CancelMove(grpc::ServerContext* ctx, const v1::CancelMoveRequest* req,
                                         v1::Move* resp) {
  return gate_.RunWrite(ctx, Rpc::kCancelMove, *req, [&](const Principal& p, bool* replayed) {
    return logic_.CancelMove(p, *req, resp, replayed);
  });
}

grpc::Status MoveServiceImpl::GetMove(grpc::ServerContext* ctx, const v1::GetMoveRequest* req,
                                      v1::Move* resp) {
  return gate_.Run(ctx, Rpc::kGetMove, *req,
                   [&](const Principal& p) { return logic_.GetMove(p, *req, resp); });
}

grpc::Status MoveServiceImpl::ListMoves(grpc::ServerContext* ctx, const v1::ListMovesRequest* req,
                                        v1::ListMovesResponse* resp) {
  return gate_.Run(ctx, Rpc::kListMoves, *req,
                   [&](const Principal& p) { return logic_.ListMoves(p, *req, resp); });
}

grpc::Status MoveServiceImpl::ListLocationHistory(grpc::ServerContext* ctx,
                                                  const v1::ListLocationHistoryRequest* req,
                                                  v1::ListLocationHistoryResponse* resp) {
  return gate_.Run(ctx, Rpc::kListLocationHistory, *req,
                   [&](const Principal& p) { return logic_.ListLocationHistory(p, *req, resp); });
}

grpc::Status MoveServiceImpl::CorrectLocation(grpc::ServerContext* ctx,
                                              const v1::CorrectLocationRequest* req,
                                              v1::LocationRecord* resp) {
  return gate_.RunWrite(ctx, Rpc::kCorrectLocation, *req, [&](const Principal& p, bool* replayed) {
    return logic_.CorrectLocation(p, *req, resp, replayed);
  });
}

grpc::Status MoveServiceImpl::WatchMove(grpc::ServerContext* ctx, const v1::WatchMoveRequest* req,
                                        grpc::ServerWriter<v1::MoveEvent>* writer) {
  return gate_.Run(ctx, Rpc::kWatchMove, *req, [&](const Principal& p) {
    return logic_.WatchMove(
        p, *req, [&](const v1::MoveEvent& event) { return writer->Write(event); },
        [&] { return ctx->IsCancelled(); });
  });
}

}  // namespace dcl::moves
