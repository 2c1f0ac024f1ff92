// The mixed workload's occupancy clients: PlaceDevice, BlockUnits, ReserveUnits (short, for the
// sweepers), ReleaseBooking, on racks every client shares; the bookings each acknowledged and the
// creates whose outcome stayed unknown or that were refused (found by their reason at the end).
#ifndef DCL_TESTS_SUPPORT_WORKLOAD_OCCUPANCY_CLIENT_H_
#define DCL_TESTS_SUPPORT_WORKLOAD_OCCUPANCY_CLIENT_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "dcl/v1/occupancy.grpc.pb.h"
#include "tests/support/workload_failover_client.h"
#include "tests/support/workload_report.h"
#include "tests/support/workload_world.h"

namespace dcl::workload {

struct BookingRecord {
  std::string id;
  std::string rack;
  v1::BookingKind kind = v1::BOOKING_KIND_UNSPECIFIED;
  std::string device;
  std::set<std::pair<int, int>> slots;  // (side, unit)
  bool released = false;
  bool release_unknown = false;
};

// A create whose outcome stayed unknown: found (or not) by its unique reason at the end.
struct UnknownCreate {
  std::string reason;
  std::string rpc;
};

class OccupancyClient {
 public:
  OccupancyClient(SuiteProcesses& suite, const World& world, int index,
                  std::vector<std::string> devices, uint64_t seed, Report& report);

  void Run(const std::atomic<bool>& stop);
  const std::map<std::string, BookingRecord>& bookings() const { return bookings_; }
  const std::vector<UnknownCreate>& unknown_creates() const { return unknown_creates_; }
  // Creates answered with a refusal on their only attempt: found by their reason, none may exist.
  const std::vector<UnknownCreate>& refused_creates() const { return refused_creates_; }

 private:
  void Step();

  template <typename Request>
  void Create(grpc::Status (v1::OccupancyService::Stub::*method)(grpc::ClientContext*,
                                                                 const Request&, v1::Booking*),
              const std::string& rpc, const Request& request, const std::string& reason) {
    v1::Booking booking;
    const Answer answer = rpc_.Call(method, rpc, request, &booking);
    const bool placement = rpc == "PlaceDevice";
    if (answer.status.ok()) {
      // The retry answered OK, so the first attempt wrote nothing: its slots (or the device's
      // one placement) would have refused the retry. The audit checks that only one booking
      // carries this request's reason.
      if (answer.in_doubt) unknown_creates_.push_back({reason, rpc});
      BookingRecord& record = bookings_[booking.id()];
      record.id = booking.id();
      record.rack = booking.rack_id();
      record.kind = booking.kind();
      record.device = booking.device_id();
      for (const v1::Slot& slot : booking.slots()) record.slots.insert({slot.side(), slot.unit()});
      if (placement) {
        placed_[record.id] = unplaced_.back();
        unplaced_.pop_back();
      }
      return;
    }
    if (!answer.in_doubt && !OutcomeUnknown(answer.status)) {
      refused_creates_.push_back({reason, rpc});  // a refusal wrote nothing
      return;
    }
    {
      unknown_creates_.push_back({reason, rpc});
      report_.Note(absl::StrCat(rpc, " outcome unknown, resolved by its reason at the end"));
      if (placement) unplaced_.pop_back();  // placed or not: no longer used
    }
  }

  void Release(BookingRecord& booking);

  FailoverClient<v1::OccupancyService> rpc_;
  const World& world_;
  const int index_;
  std::vector<std::string> unplaced_;
  std::map<std::string, std::string> placed_;  // placement booking -> device
  std::mt19937_64 rng_;
  Report& report_;
  int next_ = 0;
  std::map<std::string, BookingRecord> bookings_;
  std::vector<UnknownCreate> unknown_creates_;
  std::vector<UnknownCreate> refused_creates_;
};

}  // namespace dcl::workload

#endif  // DCL_TESTS_SUPPORT_WORKLOAD_OCCUPANCY_CLIENT_H_
