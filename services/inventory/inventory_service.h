// The gRPC adapter of the inventory service: each method is one call through the gate
// (authentication, role, module switch, limits, logging, status conversion) into InventoryLogic.
// Writes go through RpcGate::RunWrite, which marks a replayed answer with `dcl-replay: true`.
#ifndef DCL_SERVICES_INVENTORY_INVENTORY_SERVICE_H_
#define DCL_SERVICES_INVENTORY_INVENTORY_SERVICE_H_

#include "dcl/v1/inventory.grpc.pb.h"
#include "services/common/rpc_gate.h"
#include "services/inventory/inventory_logic.h"

namespace dcl::inventory {

class InventoryServiceImpl final : public v1::InventoryService::Service {
 public:
  InventoryServiceImpl(RpcGate& gate, InventoryLogic& logic) : gate_(gate), logic_(logic) {}
  InventoryServiceImpl(const InventoryServiceImpl&) = delete;
  InventoryServiceImpl& operator=(const InventoryServiceImpl&) = delete;

  grpc::Status CreateSite(grpc::ServerContext* ctx, const v1::CreateSiteRequest* req,
                      v1::Site* resp) override;
  grpc::Status GetSite(grpc::ServerContext* ctx, const v1::GetSiteRequest* req,
                      v1::Site* resp) override;
  grpc::Status ListSites(grpc::ServerContext* ctx, const v1::ListSitesRequest* req,
                      v1::ListSitesResponse* resp) override;
  grpc::Status CreateRack(grpc::ServerContext* ctx, const v1::CreateRackRequest* req,
                      v1::RackRecord* resp) override;
  grpc::Status GetRack(grpc::ServerContext* ctx, const v1::GetRackRequest* req,
                      v1::RackRecord* resp) override;
  grpc::Status ListRacks(grpc::ServerContext* ctx, const v1::ListRacksRequest* req,
                      v1::ListRacksResponse* resp) override;
  grpc::Status UpdateRack(grpc::ServerContext* ctx, const v1::UpdateRackRequest* req,
                      v1::RackRecord* resp) override;
  grpc::Status SetPowerFeeds(grpc::ServerContext* ctx, const v1::SetPowerFeedsRequest* req,
                             v1::RackRecord* resp) override;
  grpc::Status RegisterDevice(grpc::ServerContext* ctx, const v1::RegisterDeviceRequest* req,
                      v1::Device* resp) override;
  grpc::Status RegisterDevices(grpc::ServerContext* ctx, const v1::RegisterDevicesRequest* req,
                      v1::RegisterDevicesResponse* resp) override;
  grpc::Status GetDevice(grpc::ServerContext* ctx, const v1::GetDeviceRequest* req,
                      v1::Device* resp) override;
  grpc::Status ListDevices(grpc::ServerContext* ctx, const v1::ListDevicesRequest* req,
                      v1::ListDevicesResponse* resp) override;
  grpc::Status UpdateDevice(grpc::ServerContext* ctx, const v1::UpdateDeviceRequest* req,
                      v1::Device* resp) override;
  grpc::Status SetDeviceState(grpc::ServerContext* ctx, const v1::SetDeviceStateRequest* req,
                      v1::Device* resp) override;
  grpc::Status DecommissionDevice(grpc::ServerContext* ctx, const v1::DecommissionDeviceRequest* req,
                      v1::Device* resp) override;

 private:
  RpcGate& gate_;
  InventoryLogic& logic_;
};

}  // namespace dcl::inventory

#endif  // DCL_SERVICES_INVENTORY_INVENTORY_SERVICE_H_
