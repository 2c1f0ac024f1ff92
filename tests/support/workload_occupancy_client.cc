#include "tests/support/workload_occupancy_client.h"

#include "absl/strings/str_cat.h"

namespace dcl::workload {

OccupancyClient::OccupancyClient(SuiteProcesses& suite, const World& world, int index,
                                 std::vector<std::string> devices, uint64_t seed, Report& report)
    : rpc_(suite, SuiteService::kOccupancy, index, world.operator_token, report),
      world_(world),
      index_(index),
      unplaced_(std::move(devices)),
      rng_(seed * 2000 + index),
      report_(report) {}

void OccupancyClient::Run(const std::atomic<bool>& stop) {
  while (!stop.load()) Step();
}

void OccupancyClient::Step() {
  std::vector<std::string> active;
  for (const auto& [id, booking] : bookings_) {
    if (!booking.released && !booking.release_unknown) active.push_back(id);
  }
  const uint32_t r = rng_() % 100;
  const std::string rack = world_.occupancy_racks[rng_() % world_.occupancy_racks.size()];
  const int first = 1 + static_cast<int>(rng_() % (kRackUnits - 1));
  const std::string reason = absl::StrCat("occupancy-", index_, "-", next_++);
  if (r < 25 && !unplaced_.empty()) {
    v1::PlaceDeviceRequest request;
    request.set_rack_id(rack);
    request.set_device_id(unplaced_.back());
    request.set_side(v1::SIDE_FRONT);
    request.set_unit(first);
    request.set_reason(reason);
    Create(&v1::OccupancyService::Stub::PlaceDevice, "PlaceDevice", request, reason);
  } else if (r < 45 || (active.empty() && r < 70)) {
    v1::BlockUnitsRequest request;
    request.set_rack_id(rack);
    request.set_side(v1::SIDE_FRONT);
    request.set_both_sides(rng_() % 2 == 0);
    request.set_first_unit(first);
    request.set_last_unit(first + static_cast<int>(rng_() % 2));
    request.set_reason(reason);
    Create(&v1::OccupancyService::Stub::BlockUnits, "BlockUnits", request, reason);
  } else if (r < 70 || active.empty()) {
    v1::ReserveUnitsRequest request;
    request.set_rack_id(rack);
    request.set_side(v1::SIDE_FRONT);
    request.set_both_sides(rng_() % 2 == 0);
    request.set_first_unit(first);
    request.set_last_unit(first + static_cast<int>(rng_() % 2));
    request.set_reason(reason);
    request.set_ttl_seconds(2 + static_cast<int>(rng_() % 3));
    Create(&v1::OccupancyService::Stub::ReserveUnits, "ReserveUnits", request, reason);
  } else {
    Release(bookings_[active[rng_() % active.size()]]);
  }
}

void OccupancyClient::Release(BookingRecord& booking) {
  v1::ReleaseBookingRequest request;
  request.set_booking_id(booking.id);
  request.set_reason("replica test");
  v1::Booking response;
  const Answer answer =
      rpc_.Call(&v1::OccupancyService::Stub::ReleaseBooking, "ReleaseBooking", request, &response);
  const bool already_released = ReasonOf(answer.status) == "WRONG_STATE";
  if (answer.status.ok() || (answer.in_doubt && already_released)) {
    // After an unknown first attempt, WRONG_STATE from the retry says the first released it.
    booking.released = true;
    if (auto it = placed_.find(booking.id); it != placed_.end()) {
      unplaced_.push_back(it->second);
      placed_.erase(it);
    }
    if (answer.in_doubt) report_.Note("ReleaseBooking outcome unknown, resolved by the retry");
    return;
  }
  if (answer.in_doubt || OutcomeUnknown(answer.status)) {
    booking.release_unknown = true;
    report_.Note("ReleaseBooking outcome unknown, left to the audit");
  } else if (booking.kind == v1::BOOKING_RESERVATION && already_released) {
    booking.released = true;  // lapsed and released by a sweeper
  }
}

}  // namespace dcl::workload
