// The inventory's domain logic, free of gRPC: sites, racks and devices, and the rules that keep
// them consistent with what is booked, held, bound and moving. Each method validates its request
// (INVALID_ARGUMENT before anything is read or written) and runs in one transaction scoped by
// the caller's organization; ids of another organization are NOT_FOUND like unknown ids.
//
// Every write takes an optional client request id and runs the request ledger
// (services/common/request_ledger.h) first and last in its transaction; `replayed` is set when
// the answer is the stored answer of an earlier call with the same id and parameters.
//
// The rules, and where the race against them is decided:
//  - A rack's geometry change that would leave an active booking's slot outside the rack (unit
//    range, or rear slots of a rack that loses its rear) is refused: OUT_OF_BOUNDS naming the
//    bookings and slots. The rack row lock (FOR UPDATE) orders it against the booking write
//    path, which reads the rack FOR KEY SHARE: a booking in flight finishes first and is seen;
//    a booking after it plans against the new geometry. Bookings keep their unit numbers: a
//    change of numbering direction or first unit is a correction of the rack's record.
//  - Height or depth of a device with an active placement or move hold is not changed: those
//    bookings' slots were derived from them. DEVICE_IN_USE naming the booking (release, change,
//    place again). The device row lock orders it against the booking write path.
//  - A rack's feeds, cooling budget and airflow are judged by the schema (0038/0039), which
//    rebuilds the rack's budget rows from its active bookings under the rack row lock; the
//    refusal's constraint name becomes the capacity reason (inventory_store.cc, CapacityRefusal).
//    So are a rack's switch ports by speed (0040: PORTS_EXHAUSTED naming the speed, PORTS_UNKNOWN
//    naming a device without its network ports); the speeds and counts of a request are checked
//    here first (INVALID_ARGUMENT naming switch_ports[i] / network_ports[i]).
//  - Process state: staging <-> normal by operators. moving and in_transit belong to the move
//    workflow: refused here as a target (INVALID_TRANSITION), and a device in them, or with an
//    open move (which restores the state it froze when it ends), is not changed here
//    (INVALID_TRANSITION / MOVE_ALREADY_OPEN).
//  - Decommission: refused while the device is held, bound, placed, held for a move or moving
//    (DEVICE_IN_USE, naming each that applies); read in one statement under the device row
//    lock, which Reserve, StartMove and the booking write path also take. A decommissioned
//    device is never changed again (DEVICE_DECOMMISSIONED), is not offered by Reserve
//    (exclusion "decommissioned") and is not placed (booking write path).
#ifndef DCL_SERVICES_INVENTORY_INVENTORY_LOGIC_H_
#define DCL_SERVICES_INVENTORY_INVENTORY_LOGIC_H_

#include "absl/status/status.h"
#include "dcl/v1/inventory.pb.h"
#include "services/common/db.h"
#include "services/common/principal.h"

namespace dcl::inventory {

class InventoryLogic {
 public:
  explicit InventoryLogic(DbPool& pool) : pool_(pool) {}
  InventoryLogic(const InventoryLogic&) = delete;
  InventoryLogic& operator=(const InventoryLogic&) = delete;

  absl::Status CreateSite(const Principal& p, const v1::CreateSiteRequest& req, v1::Site* out,
                          bool* replayed);
  absl::Status GetSite(const Principal& p, const v1::GetSiteRequest& req, v1::Site* out);
  absl::Status ListSites(const Principal& p, const v1::ListSitesRequest& req,
                         v1::ListSitesResponse* out);

  absl::Status CreateRack(const Principal& p, const v1::CreateRackRequest& req,
                          v1::RackRecord* out, bool* replayed);
  absl::Status GetRack(const Principal& p, const v1::GetRackRequest& req, v1::RackRecord* out);
  absl::Status ListRacks(const Principal& p, const v1::ListRacksRequest& req,
                         v1::ListRacksResponse* out);
  absl::Status UpdateRack(const Principal& p, const v1::UpdateRackRequest& req,
                          v1::RackRecord* out, bool* replayed);
  // Makes the rack's feeds exactly req.feeds (by name), judged by the schema on the set as it
  // ends; a set the rack's load refuses is FAILED_PRECONDITION with the capacity reason.
  absl::Status SetPowerFeeds(const Principal& p, const v1::SetPowerFeedsRequest& req,
                             v1::RackRecord* out, bool* replayed);

  absl::Status RegisterDevice(const Principal& p, const v1::RegisterDeviceRequest& req,
                              v1::Device* out, bool* replayed);
  // Up to kMaxBatchItems registrations in one transaction, all or none; a refused item fails
  // the batch with its own status (ForBatchItem: `requests[i]`). *replayed: every item was
  // answered from the request ledger (nothing written).
  absl::Status RegisterDevices(const Principal& p, const v1::RegisterDevicesRequest& req,
                               v1::RegisterDevicesResponse* out, bool* replayed);
  absl::Status GetDevice(const Principal& p, const v1::GetDeviceRequest& req, v1::Device* out);
  absl::Status ListDevices(const Principal& p, const v1::ListDevicesRequest& req,
                           v1::ListDevicesResponse* out);
  absl::Status UpdateDevice(const Principal& p, const v1::UpdateDeviceRequest& req,
                            v1::Device* out, bool* replayed);
  absl::Status SetDeviceState(const Principal& p, const v1::SetDeviceStateRequest& req,
                              v1::Device* out, bool* replayed);
  absl::Status DecommissionDevice(const Principal& p, const v1::DecommissionDeviceRequest& req,
                                  v1::Device* out, bool* replayed);

 private:
  DbPool& pool_;
};

}  // namespace dcl::inventory

#endif  // DCL_SERVICES_INVENTORY_INVENTORY_LOGIC_H_
