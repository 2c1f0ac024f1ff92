#include "tests/daytwo/write_load.h"

#include <grpcpp/grpcpp.h>

#include <random>

#include "absl/strings/str_cat.h"
#include "dcl/v1/occupancy.grpc.pb.h"
#include "dcl/v1/reservation.grpc.pb.h"
#include "tests/support/suite_processes.h"

namespace dcl::daytwo {

namespace {

bool Unknown(const grpc::Status& status) {
  return status.error_code() == grpc::StatusCode::UNAVAILABLE ||
         status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
}

void Prepare(grpc::ClientContext& context, const std::string& token) {
  context.AddMetadata("authorization", "Bearer " + token);
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
}

}  // namespace

WriteLoad::WriteLoad(const Volume& volume, int reservation_port, int occupancy_port,
                     int reserve_clients, int place_clients, WriteLog& log,
                     std::chrono::milliseconds place_pause)
    : volume_(volume),
      reservation_port_(reservation_port),
      occupancy_port_(occupancy_port),
      log_(log),
      place_pause_(place_pause) {
  for (int i = 0; i < reserve_clients; ++i) threads_.emplace_back([this, i] { Reserve(i); });
  for (int i = 0; i < place_clients; ++i) {
    threads_.emplace_back([this, i, place_clients] { Place(i, place_clients); });
  }
}

WriteLoad::~WriteLoad() { Stop(); }

void WriteLoad::Stop() {
  stop_ = true;
  for (std::thread& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
}

void WriteLoad::Reserve(int client) {
  auto stub = v1::ReservationService::NewStub(testing::LocalChannel(reservation_port_, client));
  std::mt19937 rng(client);
  std::vector<std::string> held;
  for (int n = 0; !stop_.load(); ++n) {
    if (!held.empty() && rng() % 3 == 0) {
      v1::CancelRequest request;
      request.mutable_reservation()->set_reservation_id(held.back());
      request.set_reason("day-two load");
      request.set_request_id(absl::StrCat("cancel-", client, "-", n, "-", rng()));
      v1::CancelResponse response;
      grpc::ClientContext context;
      Prepare(context, volume_.commerce_token);
      Write write{"cancel", held.back(), WallClock::now()};
      const grpc::Status status = stub->Cancel(&context, request, &response);
      write.answered = WallClock::now();
      write.acknowledged = status.ok();
      write.unknown = Unknown(status);
      log_.Add(write);
      held.pop_back();
      continue;
    }
    v1::ReserveRequest request;
    request.set_idempotency_key(absl::StrCat("daytwo-", client, "-", n, "-", rng()));
    request.mutable_criteria()->set_site_id(volume_.site_id);
    request.set_ttl_seconds(3600);
    v1::ReserveResponse response;
    grpc::ClientContext context;
    Prepare(context, volume_.commerce_token);
    Write write{"reserve", "", WallClock::now()};
    const grpc::Status status = stub->Reserve(&context, request, &response);
    write.answered = WallClock::now();
    write.acknowledged = status.ok();
    write.unknown = Unknown(status);
    if (status.ok()) {
      write.id = response.reservation().id();
      held.push_back(write.id);
    }
    log_.Add(write);
  }
}

void WriteLoad::Place(int client, int clients) {
  auto stub = v1::OccupancyService::NewStub(testing::LocalChannel(occupancy_port_, 100 + client));
  size_t device = client;
  for (size_t rack = client; rack < volume_.free_racks.size() && !stop_.load(); rack += clients) {
    // 2U full-depth devices at units 1, 3, ..., 41 of the rack.
    for (int unit = 1; unit <= 41 && !stop_.load(); unit += 2) {
      if (device >= volume_.unplaced_devices.size()) return;
      v1::PlaceDeviceRequest request;
      request.set_rack_id(volume_.free_racks[rack]);
      request.set_device_id(volume_.unplaced_devices[device]);
      request.set_side(v1::SIDE_FRONT);
      request.set_unit(unit);
      request.set_reason("day-two load");
      request.set_request_id(absl::StrCat("place-", client, "-", rack, "-", unit));
      v1::Booking booking;
      grpc::ClientContext context;
      Prepare(context, volume_.operator_token);
      Write write{"place", "", WallClock::now()};
      const grpc::Status status = stub->PlaceDevice(&context, request, &booking);
      write.answered = WallClock::now();
      write.acknowledged = status.ok();
      write.unknown = Unknown(status);
      if (status.ok()) write.id = booking.id();
      log_.Add(write);
      device += clients;
      std::this_thread::sleep_for(place_pause_);
    }
  }
}

Stall LongestStall(const std::vector<Write>& writes, WallClock::time_point from,
                   WallClock::time_point to) {
  Stall stall;
  for (const Write& write : writes) {
    if (write.answered < from || write.started > to) continue;
    ++stall.calls;
    const double seconds = std::chrono::duration<double>(write.answered - write.started).count();
    if (seconds > stall.seconds) {
      stall.seconds = seconds;
      stall.op = write.op;
    }
  }
  return stall;
}

}  // namespace dcl::daytwo
