// The occupancy service's domain logic, free of gRPC: reading a rack (geometry, elevation,
// capacity) and booking its units through the one write path (booking_store.h). Each method
// validates its request (INVALID_ARGUMENT before anything is read or written), runs in one
// transaction scoped by the caller's organization, and returns absl::Status.
#ifndef DCL_SERVICES_OCCUPANCY_OCCUPANCY_LOGIC_H_
#define DCL_SERVICES_OCCUPANCY_OCCUPANCY_LOGIC_H_

#include <cstdint>

#include "absl/status/status.h"
#include "dcl/v1/occupancy.pb.h"
#include "services/common/db.h"
#include "services/common/principal.h"
#include "services/occupancy/booking_store.h"

namespace dcl::occupancy {

struct OccupancyOptions {
  // ReserveUnits without a TTL: a rack reservation waits for a person with a trolley.
  int64_t default_reservation_ttl_seconds = kDefaultReservationTtlSeconds;
};

// A rack reservation's figures in its write's answer (Booking.power_watts, weight_kg): those
// the spec wrote, which the database counts as written; unset, it holds units only.
void EchoFigures(const BookingSpec& spec, v1::Booking* out);

class OccupancyLogic {
 public:
  explicit OccupancyLogic(DbPool& pool, OccupancyOptions options = {})
      : pool_(pool), options_(options) {}
  OccupancyLogic(const OccupancyLogic&) = delete;
  OccupancyLogic& operator=(const OccupancyLogic&) = delete;

  // Geometry, budgets, and every active slot (unit order, front before rear) with the booking
  // and kind occupying it.
  absl::Status GetRack(const Principal& p, const v1::GetRackRequest& req, v1::Rack* out);
  // Free units per side, power and weight each on its own, as the database counts them (schema
  // 0039): every active booking with its own figures (placements and move holds their device's,
  // a rack reservation the ones it was given, or none: units only), a blocking as holding no
  // device; what has no figure is listed with its reason, never added in; the budget row's
  // allowance and whether its load is unknown (every addition refused). Every active slot
  // counts as taken (a lapsed reservation the sweeper has not released yet is taken, not free).
  absl::Status GetRackCapacity(const Principal& p, const v1::GetRackCapacityRequest& req,
                               v1::RackCapacity* out);
  // Dry run: writes nothing.
  absl::Status PlanBooking(const Principal& p, const v1::PlanBookingRequest& req,
                           v1::PlanBookingResponse* out);
  // The writes take the request's client request id (request_ledger.h): a call with an id
  // already answered sets *replayed (may be null) and returns the first answer.
  absl::Status PlaceDevice(const Principal& p, const v1::PlaceDeviceRequest& req, v1::Booking* out,
                           bool* replayed = nullptr);
  // Up to kMaxBatchItems placements through PlaceDevice's write path in one transaction, all
  // or none; a refused item fails the batch with its own status (ForBatchItem: `requests[i]`).
  // *replayed: every item was answered from the request ledger (nothing written).
  absl::Status PlaceDevices(const Principal& p, const v1::PlaceDevicesRequest& req,
                            v1::PlaceDevicesResponse* out, bool* replayed = nullptr);
  absl::Status BlockUnits(const Principal& p, const v1::BlockUnitsRequest& req, v1::Booking* out,
                          bool* replayed = nullptr);
  absl::Status ReserveUnits(const Principal& p, const v1::ReserveUnitsRequest& req,
                            v1::Booking* out, bool* replayed = nullptr);
  // A move hold belongs to its move and is released by the move service (cancel the move);
  // refused here with WRONG_STATE. Every other kind is released, header and slots together.
  absl::Status ReleaseBooking(const Principal& p, const v1::ReleaseBookingRequest& req,
                              v1::Booking* out, bool* replayed = nullptr);

  // Deliveries (delivery_logic.cc). A read: the site's racks and the named devices in one
  // snapshot, planned by the pure planner (delivery_plan.h).
  absl::Status PlanDelivery(const Principal& p, const v1::PlanDeliveryRequest& req,
                            v1::DeliveryPlan* out);
  // One unit reservation per planned item, all in one transaction or none: a plan_request is
  // planned again inside it (refused NO_CAPACITY when an item fits nowhere); planned items are
  // reserved as given. Units booked since the plan: UNIT_OCCUPIED naming every colliding unit.
  absl::Status ReserveDelivery(const Principal& p, const v1::ReserveDeliveryRequest& req,
                               v1::DeliveryReservation* out, bool* replayed = nullptr);

  // A read of the site's capacity per dimension with its stranded part and a forecast, in one
  // snapshot: the figures by site_capacity_store.h, the arithmetic by site_capacity.h (the
  // rules are stated on SiteCapacityDimension in occupancy.proto).
  absl::Status GetSiteCapacity(const Principal& p, const v1::GetSiteCapacityRequest& req,
                               v1::SiteCapacity* out);

 private:
  // The one booking write of PlaceDevice, BlockUnits and ReserveUnits, under `request`'s id.
  absl::Status Create(const Principal& p, const BookingSpec& spec, Rpc rpc,
                      const google::protobuf::Message& request, const std::string& request_id,
                      v1::Booking* out, bool* replayed);

  DbPool& pool_;
  const OccupancyOptions options_;
};

}  // namespace dcl::occupancy

#endif  // DCL_SERVICES_OCCUPANCY_OCCUPANCY_LOGIC_H_
