#include "services/reservation/reservation_service.h"

#include "services/common/status.h"

namespace dcl::reservation {

grpc::Status ReservationServiceImpl::Reserve(grpc::ServerContext* ctx,
                                             const v1::ReserveRequest* req,
                                             v1::ReserveResponse* resp) {
  return gate_.Run(ctx, Rpc::kReserve, *req,
                   [&](const Principal& p) { return logic_.Reserve(p, *req, resp); });
}

grpc::Status ReservationServiceImpl::Convert(grpc::ServerContext* ctx,
                                             const v1::ConvertRequest* req,
                                             v1::ConvertResponse* resp) {
  return gate_.RunWrite(ctx, Rpc::kConvert, *req, [&](const Principal& p, bool* replayed) {
    return logic_.Convert(p, *req, resp, replayed);
  });
}

grpc::Status ReservationServiceImpl::Cancel(grpc::ServerContext* ctx, const v1::CancelRequest* req,
                                            v1::CancelResponse* resp) {
  return gate_.RunWrite(ctx, Rpc::kCancel, *req, [&](const Principal& p, bool* replayed) {
    return logic_.Cancel(p, *req, resp, replayed);
  });
}

grpc::Status ReservationServiceImpl::GetReservation(grpc::ServerContext* ctx,
                                                    const v1::GetReservationRequest* req,
                                                    v1::Reservation* resp) {
  return gate_.Run(ctx, Rpc::kGetReservation, *req,
                   [&](const Principal& p) { return logic_.GetReservation(p, *req, resp); });
}

grpc::Status ReservationServiceImpl::ListReservations(grpc::ServerContext* ctx,
                                                      const v1::ListReservationsRequest* req,
                                                      v1::ListReservationsResponse* resp) {
  return gate_.Run(ctx, Rpc::kListReservations, *req,
                   [&](const Principal& p) { return logic_.ListReservations(p, *req, resp); });
}

grpc::Status ReservationServiceImpl::CreateService(grpc::ServerContext* ctx,
                                                   const v1::CreateServiceRequest* req,
                                                   v1::Service* resp) {
  return gate_.RunWrite(ctx, Rpc::kCreateService, *req, [&](const Principal& p, bool* replayed) {
    return logic_.CreateService(p, *req, resp, replayed);
  });
}

grpc::Status ReservationServiceImpl::EndBinding(grpc::ServerContext* ctx,
                                                const v1::EndBindingRequest* req,
                                                v1::ServiceBinding* resp) {
  return gate_.RunWrite(ctx, Rpc::kEndBinding, *req, [&](const Principal& p, bool* replayed) {
    return logic_.EndBinding(p, *req, resp, replayed);
  });
}

grpc::Status ReservationServiceImpl::GetServiceLocation(grpc::ServerContext* ctx,
                                                        const v1::GetServiceLocationRequest* req,
                                                        v1::ServiceLocation* resp) {
  return gate_.Run(ctx, Rpc::kGetServiceLocation, *req, [&](const Principal& p) {
    return logic_.GetServiceLocation(p, *req, resp);
  });
}

}  // namespace dcl::reservation
