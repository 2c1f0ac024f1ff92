// The gRPC adapter of the reservation service: each method is one call through the gate
// (authentication, role, module switch, logging, status conversion) into ReservationLogic.
#ifndef DCL_SERVICES_RESERVATION_RESERVATION_SERVICE_H_
#define DCL_SERVICES_RESERVATION_RESERVATION_SERVICE_H_

#include "dcl/v1/reservation.grpc.pb.h"
#include "services/common/rpc_gate.h"
#include "services/reservation/reservation_logic.h"

namespace dcl::reservation {

class ReservationServiceImpl final : public v1::ReservationService::Service {
 public:
  ReservationServiceImpl(RpcGate& gate, ReservationLogic& logic) : gate_(gate), logic_(logic) {}
  ReservationServiceImpl(const ReservationServiceImpl&) = delete;
  ReservationServiceImpl& operator=(const ReservationServiceImpl&) = delete;

  grpc::Status Reserve(grpc::ServerContext* ctx, const v1::ReserveRequest* req,
                       v1::ReserveResponse* resp) override;
  grpc::Status Convert(grpc::ServerContext* ctx, const v1::ConvertRequest* req,
                       v1::ConvertResponse* resp) override;
  grpc::Status Cancel(grpc::ServerContext* ctx, const v1::CancelRequest* req,
                      v1::CancelResponse* resp) override;
  grpc::Status GetReservation(grpc::ServerContext* ctx, const v1::GetReservationRequest* req,
                              v1::Reservation* resp) override;
  grpc::Status ListReservations(grpc::ServerContext* ctx, const v1::ListReservationsRequest* req,
                                v1::ListReservationsResponse* resp) override;
  grpc::Status CreateService(grpc::ServerContext* ctx, const v1::CreateServiceRequest* req,
                             v1::Service* resp) override;
  grpc::Status EndBinding(grpc::ServerContext* ctx, const v1::EndBindingRequest* req,
                          v1::ServiceBinding* resp) override;
  grpc::Status GetServiceLocation(grpc::ServerContext* ctx,
                                  const v1::GetServiceLocationRequest* req,
                                  v1::ServiceLocation* resp) override;

 private:
  RpcGate& gate_;
  ReservationLogic& logic_;
};

}  // namespace dcl::reservation

#endif  // DCL_SERVICES_RESERVATION_RESERVATION_SERVICE_H_
