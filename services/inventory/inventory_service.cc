#include "services/inventory/inventory_service.h"

namespace dcl::inventory {

grpc::Status InventoryServiceImpl::CreateSite(grpc::ServerContext* ctx, const v1::CreateSiteRequest* req,
                                         v1::Site* resp) {
  return gate_.RunWrite(ctx, Rpc::kCreateSite, *req, [&](const Principal& p, bool* replayed) {
    return logic_.CreateSite(p, *req, resp, replayed);
  });
}

grpc::Status InventoryServiceImpl::GetSite(grpc::ServerContext* ctx, const v1::GetSiteRequest* req,
                                         v1::Site* resp) {
  return gate_.Run(ctx, Rpc::kGetSite, *req,
                   [&](const Principal& p) { return logic_.GetSite(p, *req, resp); });
}

grpc::Status InventoryServiceImpl::ListSites(grpc::ServerContext* ctx, const v1::ListSitesRequest* req,
                                         v1::ListSitesResponse* resp) {
  return gate_.Run(ctx, Rpc::kListSites, *req,
                   [&](const Principal& p) { return logic_.ListSites(p, *req, resp); });
}

grpc::Status InventoryServiceImpl::CreateRack(grpc::ServerContext* ctx, const v1::CreateRackRequest* req,
                                         v1::RackRecord* resp) {
  return gate_.RunWrite(ctx, Rpc::kCreateRack, *req, [&](const Principal& p, bool* replayed) {
    return logic_.CreateRack(p, *req, resp, replayed);
  });
}

grpc::Status InventoryServiceImpl::GetRack(grpc::ServerContext* ctx, const v1::GetRackRequest* req,
                                         v1::RackRecord* resp) {
  return gate_.Run(ctx, Rpc::kInventoryGetRack, *req,
                   [&](const Principal& p) { return logic_.GetRack(p, *req, resp); });
}

grpc::Status InventoryServiceImpl::ListRacks(grpc::ServerContext* ctx, const v1::ListRacksRequest* req,
                                         v1::ListRacksResponse* resp) {
  return gate_.Run(ctx, Rpc::kListRacks, *req,
                   [&](const Principal& p) { return logic_.ListRacks(p, *req, resp); });
}

grpc::Status InventoryServiceImpl::UpdateRack(grpc::ServerContext* ctx, const v1::UpdateRackRequest* req,
                                         v1::RackRecord* resp) {
  return gate_.RunWrite(ctx, Rpc::kUpdateRack, *req, [&](const Principal& p, bool* replayed) {
    return logic_.UpdateRack(p, *req, resp, replayed);
  });
}

grpc::Status InventoryServiceImpl::SetPowerFeeds(grpc::ServerContext* ctx,
                                                const v1::SetPowerFeedsRequest* req,
                                                v1::RackRecord* resp) {
  return gate_.RunWrite(ctx, Rpc::kSetPowerFeeds, *req, [&](const Principal& p, bool* replayed) {
    return logic_.SetPowerFeeds(p, *req, resp, replayed);
  });
}

grpc::Status InventoryServiceImpl::RegisterDevice(grpc::ServerContext* ctx, const v1::RegisterDeviceRequest* req,
                                         v1::Device* resp) {
  return gate_.RunWrite(ctx, Rpc::kRegisterDevice, *req, [&](const Principal& p, bool* replayed) {
    return logic_.RegisterDevice(p, *req, resp, replayed);
  });
}

grpc::Status InventoryServiceImpl::RegisterDevices(grpc::ServerContext* ctx,
                                                 const v1::RegisterDevicesRequest* req,
                                                 v1::RegisterDevicesResponse* resp) {
  return gate_.RunWrite(ctx, Rpc::kRegisterDevices, *req, [&](const Principal& p, bool* replayed) {
    return logic_.RegisterDevices(p, *req, resp, replayed);
  });
}

grpc::Status InventoryServiceImpl::GetDevice(grpc::ServerContext* ctx, const v1::GetDeviceRequest* req,
                                         v1::Device* resp) {
  return gate_.Run(ctx, Rpc::kGetDevice, *req,
                   [&](const Principal& p) { return logic_.GetDevice(p, *req, resp); });
}

grpc::Status InventoryServiceImpl::ListDevices(grpc::ServerContext* ctx, const v1::ListDevicesRequest* req,
                                         v1::ListDevicesResponse* resp) {
  return gate_.Run(ctx, Rpc::kListDevices, *req,
                   [&](const Principal& p) { return logic_.ListDevices(p, *req, resp); });
}

grpc::Status InventoryServiceImpl::UpdateDevice(grpc::ServerContext* ctx, const v1::UpdateDeviceRequest* req,
                                         v1::Device* resp) {
  return gate_.RunWrite(ctx, Rpc::kUpdateDevice, *req, [&](const Principal& p, bool* replayed) {
    return logic_.UpdateDevice(p, *req, resp, replayed);
  });
}

grpc::Status InventoryServiceImpl::SetDeviceState(grpc::ServerContext* ctx, const v1::SetDeviceStateRequest* req,
                                         v1::Device* resp) {
  return gate_.RunWrite(ctx, Rpc::kSetDeviceState, *req, [&](const Principal& p, bool* replayed) {
    return logic_.SetDeviceState(p, *req, resp, replayed);
  });
}

grpc::Status InventoryServiceImpl::DecommissionDevice(grpc::ServerContext* ctx, const v1::DecommissionDeviceRequest* req,
                                         v1::Device* resp) {
  return gate_.RunWrite(ctx, Rpc::kDecommissionDevice, *req, [&](const Principal& p, bool* replayed) {
    return logic_.DecommissionDevice(p, *req, resp, replayed);
  });
}

}  // namespace dcl::inventory
