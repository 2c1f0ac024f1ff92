#include "tests/support/suite.h"

#include "services/common/grpc_status.h"
#include "tests/support/fixtures.h"

namespace dcl::testing {

InProcessSuite::InProcessSuite(DbPool& pool)
    : gate_(pool),
      reservation_logic_(pool, reservation::ReservationOptions{}),
      occupancy_logic_(pool),
      move_logic_(pool),
      inventory_logic_(pool),
      reservation_(gate_, reservation_logic_),
      occupancy_(gate_, occupancy_logic_),
      moves_(gate_, move_logic_),
      inventory_(gate_, inventory_logic_),
      server_(&pool, {{"dcl.v1.ReservationService", &reservation_},
                      {"dcl.v1.OccupancyService", &occupancy_},
                      {"dcl.v1.MoveService", &moves_},
                      {"dcl.v1.InventoryService", &inventory_}}),
      channel_(server_.Channel()),
      reservations(v1::ReservationService::NewStub(channel_)),
      occupancy(v1::OccupancyService::NewStub(channel_)),
      moves(v1::MoveService::NewStub(channel_)),
      inventory(v1::InventoryService::NewStub(channel_)) {}

SuiteWorld::SuiteWorld(int pool_size)
    : SuiteDatabase(pool_size), InProcessSuite(*pool), org(CreateOrg(db, "acme")) {}

const std::string& SuiteWorld::Token(Role role) {
  auto it = tokens_.find(role);
  if (it == tokens_.end()) it = tokens_.emplace(role, CreateTokenFor(db, org, role)).first;
  return it->second;
}

bool Replayed(const grpc::ClientContext& ctx) {
  const auto& headers = ctx.GetServerInitialMetadata();
  auto it = headers.find(kReplayHeader);
  return it != headers.end() && std::string(it->second.data(), it->second.size()) == "true";
}

std::optional<v1::ErrorDetail> Call::detail() const { return ErrorDetailFromGrpc(status); }

}  // namespace dcl::testing
