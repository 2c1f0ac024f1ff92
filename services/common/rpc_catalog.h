// Every RPC of the four services, and which roles may call it: one record over all RPCs,
// indexed by the Rpc enum and checked complete at compile time. An RPC without an entry cannot
// be dispatched through the gate (rpc_gate.h), so it is denied, never silently allowed; a test
// checks this table against the services' descriptors.
#ifndef DCL_SERVICES_COMMON_RPC_CATALOG_H_
#define DCL_SERVICES_COMMON_RPC_CATALOG_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace dcl {

enum class Role : uint8_t { kCommerce, kDcOperator, kCustomer, kAdmin };
inline constexpr size_t kRoleCount = 4;

constexpr uint8_t RoleBit(Role role) { return uint8_t{1} << static_cast<uint8_t>(role); }

// "commerce", "dc-operator", "customer", "admin": the names tokens and logs carry.
const char* RoleName(Role role);
// The role RoleName names; false for anything else.
bool ParseRole(const std::string& name, Role* role);

enum class Rpc : uint8_t {
  // ReservationService
  kReserve,
  kConvert,
  kCancel,
  kGetReservation,
  kListReservations,
  kCreateService,
  kEndBinding,
  kGetServiceLocation,
  // OccupancyService
  kGetRack,
  kGetRackCapacity,
  kPlanBooking,
  kPlaceDevice,
  kPlaceDevices,
  kBlockUnits,
  kReserveUnits,
  kReleaseBooking,
  kPlanDelivery,
  kReserveDelivery,
  kGetSiteCapacity,
  // MoveService
  kStartMove,
  kAdvanceMove,
  kCancelMove,
  kGetMove,
  kListMoves,
  kWatchMove,
  kListLocationHistory,
  kCorrectLocation,
  // InventoryService
  kCreateSite,
  kGetSite,
  kListSites,
  kCreateRack,
  kInventoryGetRack,  // InventoryService.GetRack (OccupancyService.GetRack is kGetRack)
  kListRacks,
  kUpdateRack,
  kSetPowerFeeds,
  kRegisterDevice,
  kRegisterDevices,
  kGetDevice,
  kListDevices,
  kUpdateDevice,
  kSetDeviceState,
  kDecommissionDevice,
  kCount,
};
inline constexpr size_t kRpcCount = static_cast<size_t>(Rpc::kCount);

struct RpcInfo {
  Rpc rpc;
  const char* full_name;  // "/package.Service/Method", as gRPC names it
  uint8_t allowed_roles;       // RoleBit mask
};

inline constexpr uint8_t kCommerce = RoleBit(Role::kCommerce);
inline constexpr uint8_t kOperator = RoleBit(Role::kDcOperator);
inline constexpr uint8_t kCustomer = RoleBit(Role::kCustomer);

inline constexpr std::array<RpcInfo, kRpcCount> kRpcTable = {{
    {Rpc::kReserve, "/dcl.v1.ReservationService/Reserve", kCommerce},
    {Rpc::kConvert, "/dcl.v1.ReservationService/Convert", kCommerce},
    {Rpc::kCancel, "/dcl.v1.ReservationService/Cancel", kCommerce},
    {Rpc::kGetReservation, "/dcl.v1.ReservationService/GetReservation", kCommerce},
    {Rpc::kListReservations, "/dcl.v1.ReservationService/ListReservations", kCommerce},
    {Rpc::kCreateService, "/dcl.v1.ReservationService/CreateService", kCommerce},
    {Rpc::kEndBinding, "/dcl.v1.ReservationService/EndBinding", kCommerce},
    {Rpc::kGetServiceLocation, "/dcl.v1.ReservationService/GetServiceLocation",
     kCustomer | kCommerce},
    {Rpc::kGetRack, "/dcl.v1.OccupancyService/GetRack", kOperator},
    {Rpc::kGetRackCapacity, "/dcl.v1.OccupancyService/GetRackCapacity", kOperator},
    {Rpc::kPlanBooking, "/dcl.v1.OccupancyService/PlanBooking", kOperator},
    {Rpc::kPlaceDevice, "/dcl.v1.OccupancyService/PlaceDevice", kOperator},
    {Rpc::kPlaceDevices, "/dcl.v1.OccupancyService/PlaceDevices", kOperator},
    {Rpc::kBlockUnits, "/dcl.v1.OccupancyService/BlockUnits", kOperator},
    {Rpc::kReserveUnits, "/dcl.v1.OccupancyService/ReserveUnits", kOperator},
    {Rpc::kReleaseBooking, "/dcl.v1.OccupancyService/ReleaseBooking", kOperator},
    {Rpc::kPlanDelivery, "/dcl.v1.OccupancyService/PlanDelivery", kOperator},
    {Rpc::kReserveDelivery, "/dcl.v1.OccupancyService/ReserveDelivery", kOperator},
    {Rpc::kGetSiteCapacity, "/dcl.v1.OccupancyService/GetSiteCapacity", kOperator},
    {Rpc::kStartMove, "/dcl.v1.MoveService/StartMove", kOperator},
    {Rpc::kAdvanceMove, "/dcl.v1.MoveService/AdvanceMove", kOperator},
    {Rpc::kCancelMove, "/dcl.v1.MoveService/CancelMove", kOperator},
    {Rpc::kGetMove, "/dcl.v1.MoveService/GetMove", kOperator},
    {Rpc::kListMoves, "/dcl.v1.MoveService/ListMoves", kOperator},
    {Rpc::kWatchMove, "/dcl.v1.MoveService/WatchMove", kOperator},
    {Rpc::kListLocationHistory, "/dcl.v1.MoveService/ListLocationHistory", kOperator},
    {Rpc::kCorrectLocation, "/dcl.v1.MoveService/CorrectLocation", kOperator},
    // Operators keep the inventory; commerce reads the sites and devices it sells from (the
    // site ids of Reserve's criteria, what stock exists). Racks are the operators' alone.
    {Rpc::kCreateSite, "/dcl.v1.InventoryService/CreateSite", kOperator},
    {Rpc::kGetSite, "/dcl.v1.InventoryService/GetSite", kOperator | kCommerce},
    {Rpc::kListSites, "/dcl.v1.InventoryService/ListSites", kOperator | kCommerce},
    {Rpc::kCreateRack, "/dcl.v1.InventoryService/CreateRack", kOperator},
    {Rpc::kInventoryGetRack, "/dcl.v1.InventoryService/GetRack", kOperator},
    {Rpc::kListRacks, "/dcl.v1.InventoryService/ListRacks", kOperator},
    {Rpc::kUpdateRack, "/dcl.v1.InventoryService/UpdateRack", kOperator},
    {Rpc::kSetPowerFeeds, "/dcl.v1.InventoryService/SetPowerFeeds", kOperator},
    {Rpc::kRegisterDevice, "/dcl.v1.InventoryService/RegisterDevice", kOperator},
    {Rpc::kRegisterDevices, "/dcl.v1.InventoryService/RegisterDevices", kOperator},
    {Rpc::kGetDevice, "/dcl.v1.InventoryService/GetDevice", kOperator | kCommerce},
    {Rpc::kListDevices, "/dcl.v1.InventoryService/ListDevices", kOperator | kCommerce},
    {Rpc::kUpdateDevice, "/dcl.v1.InventoryService/UpdateDevice", kOperator},
    {Rpc::kSetDeviceState, "/dcl.v1.InventoryService/SetDeviceState", kOperator},
    {Rpc::kDecommissionDevice, "/dcl.v1.InventoryService/DecommissionDevice", kOperator},
}};

// Every slot filled, in enum order: a missing or misplaced entry fails the build.
constexpr bool RpcTableIsComplete() {
  for (size_t i = 0; i < kRpcCount; ++i) {
    if (static_cast<size_t>(kRpcTable[i].rpc) != i || kRpcTable[i].full_name == nullptr || kRpcTable[i].full_name[0] != '/') {
      return false;
    }
  }
  return true;
}
static_assert(RpcTableIsComplete(), "kRpcTable needs exactly one entry per Rpc, in order");

constexpr const RpcInfo& InfoOf(Rpc rpc) { return kRpcTable[static_cast<size_t>(rpc)]; }

constexpr bool RoleMayCall(Role role, Rpc rpc) {
  return (InfoOf(rpc).allowed_roles & RoleBit(role)) != 0;
}

}  // namespace dcl

#endif  // DCL_SERVICES_COMMON_RPC_CATALOG_H_
