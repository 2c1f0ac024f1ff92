#include "services/occupancy/occupancy_service.h"

namespace dcl::occupancy {

grpc::Status OccupancyServiceImpl::GetRack(grpc::ServerContext* ctx, const v1::GetRackRequest* req,
                                           v1::Rack* resp) {
  return gate_.Run(ctx, Rpc::kGetRack, *req,
                   [&](const Principal& p) { return logic_.GetRack(p, *req, resp); });
}

grpc::Status OccupancyServiceImpl::GetRackCapacity(grpc::ServerContext* ctx,
                                                   const v1::GetRackCapacityRequest* req,
                                                   v1::RackCapacity* resp) {
  return gate_.Run(ctx, Rpc::kGetRackCapacity, *req,
                   [&](const Principal& p) { return logic_.GetRackCapacity(p, *req, resp); });
}

grpc::Status OccupancyServiceImpl::PlanBooking(grpc::ServerContext* ctx,
                                               const v1::PlanBookingRequest* req,
                                               v1::PlanBookingResponse* resp) {
  return gate_.Run(ctx, Rpc::kPlanBooking, *req,
                   [&](const Principal& p) { return logic_.PlanBooking(p, *req, resp); });
}

grpc::Status OccupancyServiceImpl::PlaceDevice(grpc::ServerContext* ctx,
                                               const v1::PlaceDeviceRequest* req,
                                               v1::Booking* resp) {
  return gate_.RunWrite(ctx, Rpc::kPlaceDevice, *req, [&](const Principal& p, bool* replayed) {
    return logic_.PlaceDevice(p, *req, resp, replayed);
  });
}

grpc::Status OccupancyServiceImpl::PlaceDevices(grpc::ServerContext* ctx,
                                                const v1::PlaceDevicesRequest* req,
                                                v1::PlaceDevicesResponse* resp) {
  return gate_.RunWrite(ctx, Rpc::kPlaceDevices, *req, [&](const Principal& p, bool* replayed) {
    return logic_.PlaceDevices(p, *req, resp, replayed);
  });
}

grpc::Status OccupancyServiceImpl::BlockUnits(grpc::ServerContext* ctx,
                                              const v1::BlockUnitsRequest* req, v1::Booking* resp) {
  return gate_.RunWrite(ctx, Rpc::kBlockUnits, *req, [&](const Principal& p, bool* replayed) {
    return logic_.BlockUnits(p, *req, resp, replayed);
  });
}

grpc::Status OccupancyServiceImpl::ReserveUnits(grpc::ServerContext* ctx,
                                                const v1::ReserveUnitsRequest* req,
                                                v1::Booking* resp) {
  return gate_.RunWrite(ctx, Rpc::kReserveUnits, *req, [&](const Principal& p, bool* replayed) {
    return logic_.ReserveUnits(p, *req, resp, replayed);
  });
}

grpc::Status OccupancyServiceImpl::ReleaseBooking(grpc::ServerContext* ctx,
                                                  const v1::ReleaseBookingRequest* req,
                                                  v1::Booking* resp) {
  return gate_.RunWrite(ctx, Rpc::kReleaseBooking, *req, [&](const Principal& p, bool* replayed) {
    return logic_.ReleaseBooking(p, *req, resp, replayed);
  });
}

grpc::Status OccupancyServiceImpl::PlanDelivery(grpc::ServerContext* ctx,
                                                const v1::PlanDeliveryRequest* req,
                                                v1::DeliveryPlan* resp) {
  return gate_.Run(ctx, Rpc::kPlanDelivery, *req,
                   [&](const Principal& p) { return logic_.PlanDelivery(p, *req, resp); });
}

grpc::Status OccupancyServiceImpl::ReserveDelivery(grpc::ServerContext* ctx,
                                                   const v1::ReserveDeliveryRequest* req,
                                                   v1::DeliveryReservation* resp) {
  return gate_.RunWrite(ctx, Rpc::kReserveDelivery, *req, [&](const Principal& p, bool* replayed) {
    return logic_.ReserveDelivery(p, *req, resp, replayed);
  });
}

grpc::Status OccupancyServiceImpl::GetSiteCapacity(grpc::ServerContext* ctx,
                                                   const v1::GetSiteCapacityRequest* req,
                                                   v1::SiteCapacity* resp) {
  return gate_.Run(ctx, Rpc::kGetSiteCapacity, *req,
                   [&](const Principal& p) { return logic_.GetSiteCapacity(p, *req, resp); });
}

}  // namespace dcl::occupancy
