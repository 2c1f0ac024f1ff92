// Input checks shared by every handler: each violation is INVALID_ARGUMENT naming the field.
#ifndef DCL_SERVICES_COMMON_VALIDATION_H_
#define DCL_SERVICES_COMMON_VALIDATION_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <limits>
#include <string>

#include "absl/status/status.h"
#include "google/protobuf/message.h"
#include "services/common/status.h"

namespace dcl {

inline constexpr size_t kMaxIdLength = 36;
inline constexpr size_t kMaxKeyLength = 200;
inline constexpr size_t kMaxNoteLength = 2000;
inline constexpr size_t kMaxNameLength = 200;

// The largest rack unit number any rack can have: the schema bounds a rack's first unit to
// 0..900 (racks_first_unit_bounded) and its unit count to 1..100 (racks_unit_count_positive).
inline constexpr int64_t kMaxRackUnit = 999;
inline constexpr int64_t kMaxPageSize = 500;
// The range a request's page_size may take: a size above kMaxPageSize is coerced to it by
// PageSize() (page_token.h), as Google's AIP-158 asks, rather than refused; a negative one is
// refused.
inline constexpr int64_t kMaxRequestedPageSize = INT32_MAX;
// A hold longer than a week is not a checkout; the configured maximum may only be lower.
inline constexpr int64_t kMaxHoldTtlSeconds = 7 * 24 * 3600;
// A reservation of rack units longer than 90 days is a typo, not a plan.
inline constexpr int64_t kMaxRackReservationTtlSeconds = 90LL * 24 * 3600;
// Rack geometry, as the schema bounds it (racks_first_unit_bounded, racks_unit_count_positive):
// every unit of every rack stays within 0..kMaxRackUnit.
inline constexpr int64_t kMaxRackFirstUnit = 900;
inline constexpr int64_t kMaxRackUnitCount = 100;
static_assert(kMaxRackFirstUnit + kMaxRackUnitCount - 1 <= kMaxRackUnit,
              "every unit of every rack must be a unit a request can name");
// A device's height (devices_height_positive).
inline constexpr int64_t kMaxDeviceHeightUnits = 20;
// Budgets and device figures: far above any real rack or machine, far below int32 overflow
// when a rack's worth of them is summed in 64 bits.
inline constexpr int64_t kMaxRackPowerWatts = 1000000;
inline constexpr int64_t kMaxRackWeightKg = 100000;
inline constexpr int64_t kMaxDevicePowerWatts = 100000;
inline constexpr int64_t kMaxDeviceWeightKg = 10000;
// A power feed's rating as the schema bounds it (power_feeds_voltage_valid, _amperage_valid),
// a device's power ports (devices_power_port_count_valid), and the feeds of one rack: a rack
// has two or four; 32 leaves room for any real one and keeps the N-1 rows (F x (F-1)) small.
inline constexpr int64_t kMaxFeedVoltage = 1000;
inline constexpr int64_t kMaxFeedAmperage = 1000;
inline constexpr int64_t kMaxDevicePowerPorts = 16;
inline constexpr int64_t kMaxRackPowerFeeds = 32;
// Switch ports of one speed in a rack, and network ports of one speed a device needs, as the
// schema bounds them (racks_switch_ports_valid, devices_network_ports_valid).
inline constexpr int64_t kMaxRackSwitchPorts = 100000;
inline constexpr int64_t kMaxDeviceNetworkPorts = 1024;
// Items of one batch write (RegisterDevices, PlaceDevices): one transaction holds the locks of
// all of them until it commits, so a batch stays short.
inline constexpr int64_t kMaxBatchItems = 500;
// Devices in one delivery (PlanDelivery / ReserveDelivery), a spec's count included.
inline constexpr int64_t kMaxDeliveryItems = 1000;

// GetSiteCapacity's forecast window (days back from now): a month by default, at most a year.
inline constexpr int64_t kDefaultCapacityWindowDays = 30;
inline constexpr int64_t kMaxCapacityWindowDays = 365;

// The range one integer field of one request message may take, inclusive.
struct IntegerRange {
  const char* message;  // full protobuf name, e.g. "dcl.v1.PlaceDeviceRequest"
  const char* field;
  int64_t min;
  int64_t max;
};

// Every integer field of every request message of the services, in one table: the gate refuses
// a value outside its range before any handler runs, so no RPC can forget a bound that another
// RPC checks. An integer field missing here is refused whatever its value (fail closed), and a
// test holds this table against the services' descriptors. Policy bounds that depend on
// configuration (Reserve's configured maximum TTL) stay with the logic that owns them.
inline constexpr IntegerRange kIntegerRanges[] = {
    {"dcl.v1.ReserveRequest", "ttl_seconds", 1, kMaxHoldTtlSeconds},
    {"dcl.v1.ListReservationsRequest", "page_size", 0, kMaxRequestedPageSize},
    {"dcl.v1.BookingRequest", "first_unit", 0, kMaxRackUnit},
    {"dcl.v1.BookingRequest", "last_unit", 0, kMaxRackUnit},
    {"dcl.v1.PlaceDeviceRequest", "unit", 0, kMaxRackUnit},
    {"dcl.v1.BlockUnitsRequest", "first_unit", 0, kMaxRackUnit},
    {"dcl.v1.BlockUnitsRequest", "last_unit", 0, kMaxRackUnit},
    {"dcl.v1.ReserveUnitsRequest", "first_unit", 0, kMaxRackUnit},
    {"dcl.v1.ReserveUnitsRequest", "last_unit", 0, kMaxRackUnit},
    {"dcl.v1.ReserveUnitsRequest", "ttl_seconds", 0, kMaxRackReservationTtlSeconds},
    {"dcl.v1.ReserveUnitsRequest", "power_watts", 0, kMaxRackPowerWatts},
    {"dcl.v1.ReserveUnitsRequest", "weight_kg", 0, kMaxRackWeightKg},
    {"dcl.v1.DeliverySpec", "height_units", 1, kMaxDeviceHeightUnits},
    {"dcl.v1.DeliverySpec", "power_draw_watts", 0, kMaxDevicePowerWatts},
    {"dcl.v1.DeliverySpec", "weight_kg", 0, kMaxDeviceWeightKg},
    {"dcl.v1.DeliverySpec", "count", 0, kMaxDeliveryItems},
    {"dcl.v1.DeliveryConstraints", "max_per_rack", 0, kMaxDeliveryItems},
    {"dcl.v1.DeliveryConstraints", "power_headroom_watts", 0, kMaxRackPowerWatts},
    {"dcl.v1.DeliveryConstraints", "weight_headroom_kg", 0, kMaxRackWeightKg},
    {"dcl.v1.PlannedDeliveryItem", "item", 0, kMaxDeliveryItems - 1},
    {"dcl.v1.PlannedDeliveryItem", "unit", 0, kMaxRackUnit},
    {"dcl.v1.PlannedDeliveryItem", "power_watts", 0, kMaxDevicePowerWatts},
    {"dcl.v1.PlannedDeliveryItem", "weight_kg", 0, kMaxDeviceWeightKg},
    {"dcl.v1.Slot", "unit", 0, kMaxRackUnit},
    {"dcl.v1.GetSiteCapacityRequest", "window_days", 0, kMaxCapacityWindowDays},
    {"dcl.v1.GetSiteCapacityRequest", "typical_power_watts", 0, kMaxDevicePowerWatts},
    {"dcl.v1.GetSiteCapacityRequest", "typical_weight_kg", 0, kMaxDeviceWeightKg},
    {"dcl.v1.ReserveDeliveryRequest", "ttl_seconds", 0, kMaxRackReservationTtlSeconds},
    {"dcl.v1.StartMoveRequest", "destination_unit", 0, kMaxRackUnit},
    {"dcl.v1.ListMovesRequest", "page_size", 0, kMaxRequestedPageSize},
    {"dcl.v1.ListLocationHistoryRequest", "page_size", 0, kMaxRequestedPageSize},
    {"dcl.v1.CorrectLocationRequest", "corrects_id", 1, INT64_MAX},
    {"dcl.v1.CorrectLocationRequest", "first_unit", 0, kMaxRackUnit},
    {"dcl.v1.CorrectLocationRequest", "last_unit", 0, kMaxRackUnit},
    {"dcl.v1.ListSitesRequest", "page_size", 0, kMaxRequestedPageSize},
    {"dcl.v1.RackGeometry", "first_unit", 0, kMaxRackFirstUnit},
    {"dcl.v1.RackGeometry", "unit_count", 1, kMaxRackUnitCount},
    {"dcl.v1.CreateRackRequest", "power_budget_watts", 0, kMaxRackPowerWatts},
    {"dcl.v1.CreateRackRequest", "weight_budget_kg", 0, kMaxRackWeightKg},
    {"dcl.v1.ListRacksRequest", "page_size", 0, kMaxRequestedPageSize},
    {"dcl.v1.UpdateRackRequest", "power_budget_watts", 0, kMaxRackPowerWatts},
    {"dcl.v1.UpdateRackRequest", "weight_budget_kg", 0, kMaxRackWeightKg},
    {"dcl.v1.UpdateRackRequest", "cooling_budget_watts", 0, kMaxRackPowerWatts},
    {"dcl.v1.PowerFeed", "voltage", 1, kMaxFeedVoltage},
    {"dcl.v1.PowerFeed", "amperage", 1, kMaxFeedAmperage},
    {"dcl.v1.PowerFeed", "max_utilization", 0, 100},
    {"dcl.v1.PowerFeed", "available_watts", 0, INT64_MAX},  // output only: ignored on input
    {"dcl.v1.PortCount", "count", 0, kMaxRackSwitchPorts},
    {"dcl.v1.RegisterDeviceRequest", "power_port_count", 0, kMaxDevicePowerPorts},
    {"dcl.v1.UpdateDeviceRequest", "power_port_count", 0, kMaxDevicePowerPorts},
    {"dcl.v1.RegisterDeviceRequest", "height_units", 1, kMaxDeviceHeightUnits},
    {"dcl.v1.RegisterDeviceRequest", "power_draw_watts", 0, kMaxDevicePowerWatts},
    {"dcl.v1.RegisterDeviceRequest", "weight_kg", 0, kMaxDeviceWeightKg},
    {"dcl.v1.ListDevicesRequest", "page_size", 0, kMaxRequestedPageSize},
    {"dcl.v1.UpdateDeviceRequest", "height_units", 1, kMaxDeviceHeightUnits},
    {"dcl.v1.UpdateDeviceRequest", "power_draw_watts", 0, kMaxDevicePowerWatts},
    {"dcl.v1.UpdateDeviceRequest", "weight_kg", 0, kMaxDeviceWeightKg},
};

// A batch's items (`requests`) name distinct client request ids (empty ids aside): one id names
// one write. INVALID_ARGUMENT naming `requests[i].request_id` of the later item otherwise.
template <typename Batch>
absl::Status CheckDistinctRequestIds(const Batch& batch) {
  std::map<std::string, int> first;
  for (int i = 0; i < batch.requests_size(); ++i) {
    const std::string& id = batch.requests(i).request_id();
    if (id.empty()) continue;
    auto [it, fresh] = first.emplace(id, i);
    if (!fresh) {
      return InvalidInput("requests[" + std::to_string(i) + "].request_id",
                          "the same request id as requests[" + std::to_string(it->second) +
                              "]; one id names one write");
    }
  }
  return absl::OkStatus();
}

// The declared range of an integer field, or nullptr when the table has none.
const IntegerRange* FindIntegerRange(const std::string& message, const std::string& field);

bool IsUuid(const std::string& s);

// A required id: a UUID.
absl::Status CheckId(const std::string& field, const std::string& value);
// Free text of at most max_length bytes, valid UTF-8 and without NUL; required = non-empty.
absl::Status CheckText(const std::string& field, const std::string& value, size_t max_length,
                       bool required);

// The limits on every field of a request, applied by the gate before any handler runs, so that
// no RPC can forget them. Strings: fields named *_id or id at most kMaxIdLength, idempotency
// keys kMaxKeyLength, note/reason kMaxNoteLength, anything else kMaxNameLength; all valid UTF-8
// without NUL. Integers: the range kIntegerRanges declares. Enums: a value the enum defines
// (proto3 lets a client send any number). Nested messages are checked too, an item of a repeated
// field named by its index ("requests[3].serial"). Whether a field is
// required, or must be a UUID, is the handler's check.
absl::Status CheckRequestLimits(const google::protobuf::Message& request);

}  // namespace dcl

#endif  // DCL_SERVICES_COMMON_VALIDATION_H_
