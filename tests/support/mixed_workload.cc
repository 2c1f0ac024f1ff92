#include "tests/support/mixed_workload.h"

namespace dcl::workload {

Workload::Workload(SuiteProcesses& suite, const Seeded& seeded, int clients, uint64_t seed,
                   Report& report, const std::atomic<bool>& disrupted) {
  const World& world = seeded.world;
  for (int c = 0; c < clients; ++c) {
    reservation_.push_back(
        std::make_unique<ReservationClient>(suite, world, c, seeded.services[c], seed, report));
    occupancy_.push_back(std::make_unique<OccupancyClient>(
        suite, world, c, seeded.occupancy_devices[c], seed, report));
    moves_.push_back(
        std::make_unique<MoveClient>(suite, world, c, seeded.move_devices[c], seed, report));
  }
  probe_ = std::make_unique<WatchProbe>(suite, world, seeded.probe_device, report);
  for (int c = 0; c < clients; ++c) {
    threads_.emplace_back([this, c] { reservation_[c]->Run(stop_); });
    threads_.emplace_back([this, c] { occupancy_[c]->Run(stop_); });
    threads_.emplace_back([this, c] { moves_[c]->Run(stop_); });
  }
  threads_.emplace_back([this, &disrupted] { probe_->Run(stop_, disrupted); });
}

void Workload::Stop() {
  stop_.store(true);
  for (std::thread& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
}

void Workload::AuditWrites(Reader& db, const std::string& org, const std::string& disruption,
                           Report& report) const {
  AuditHolds(db, org, reservation_, report);
  AuditBookings(db, org, occupancy_, report);
  std::vector<const MoveRecord*> moves;
  for (const auto& client : moves_) {
    for (const MoveRecord& move : client->moves()) moves.push_back(&move);
  }
  for (const MoveRecord& move : probe_->moves()) moves.push_back(&move);
  AuditMoves(db, moves, report);
  if (report.Counter("watch probe: cycles complete before the kill") == 0 ||
      report.Counter("watch probe: cycles complete after the kill") == 0) {
    report.Fail("3. the watch probe completed no cycle before or none after " + disruption);
  }
}

}  // namespace dcl::workload
