// The gRPC adapter of the occupancy service: each method is one call through the gate
// (authentication, role, module switch, logging, status conversion) into OccupancyLogic.
#ifndef DCL_SERVICES_OCCUPANCY_OCCUPANCY_SERVICE_H_
#define DCL_SERVICES_OCCUPANCY_OCCUPANCY_SERVICE_H_

#include "dcl/v1/occupancy.grpc.pb.h"
#include "services/common/rpc_gate.h"
#include "services/occupancy/occupancy_logic.h"

namespace dcl::occupancy {

class OccupancyServiceImpl final : public v1::OccupancyService::Service {
 public:
  OccupancyServiceImpl(RpcGate& gate, OccupancyLogic& logic) : gate_(gate), logic_(logic) {}
  OccupancyServiceImpl(const OccupancyServiceImpl&) = delete;
  OccupancyServiceImpl& operator=(const OccupancyServiceImpl&) = delete;

  grpc::Status GetRack(grpc::ServerContext* ctx, const v1::GetRackRequest* req,
                       v1::Rack* resp) override;
  grpc::Status GetRackCapacity(grpc::ServerContext* ctx, const v1::GetRackCapacityRequest* req,
                               v1::RackCapacity* resp) override;
  grpc::Status PlanBooking(grpc::ServerContext* ctx, const v1::PlanBookingRequest* req,
                           v1::PlanBookingResponse* resp) override;
  grpc::Status PlaceDevice(grpc::ServerContext* ctx, const v1::PlaceDeviceRequest* req,
                           v1::Booking* resp) override;
  grpc::Status PlaceDevices(grpc::ServerContext* ctx, const v1::PlaceDevicesRequest* req,
                            v1::PlaceDevicesResponse* resp) override;
  grpc::Status BlockUnits(grpc::ServerContext* ctx, const v1::BlockUnitsRequest* req,
                          v1::Booking* resp) override;
  grpc::Status ReserveUnits(grpc::ServerContext* ctx, const v1::ReserveUnitsRequest* req,
                            v1::Booking* resp) override;
  grpc::Status ReleaseBooking(grpc::ServerContext* ctx, const v1::ReleaseBookingRequest* req,
                              v1::Booking* resp) override;
  grpc::Status PlanDelivery(grpc::ServerContext* ctx, const v1::PlanDeliveryRequest* req,
                            v1::DeliveryPlan* resp) override;
  grpc::Status ReserveDelivery(grpc::ServerContext* ctx, const v1::ReserveDeliveryRequest* req,
                               v1::DeliveryReservation* resp) override;
  grpc::Status GetSiteCapacity(grpc::ServerContext* ctx, const v1::GetSiteCapacityRequest* req,
                               v1::SiteCapacity* resp) override;

 private:
  RpcGate& gate_;
  OccupancyLogic& logic_;
};

}  // namespace dcl::occupancy

#endif  // DCL_SERVICES_OCCUPANCY_OCCUPANCY_SERVICE_H_
