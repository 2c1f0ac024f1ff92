// The in-process suite: the four services — reservation, occupancy, moves, inventory — wired as
// their binaries wire them (one pool → one RPC gate → each service's logic → its gRPC service)
// behind one in-process server, with a stub per service; a world that serves one organization
// from its own test database with a token per role; and the call tests make through it, whose
// replay header and error detail can be read afterwards. A test says what it checks; the wiring
// lives here.
#ifndef DCL_TESTS_SUPPORT_SUITE_H_
#define DCL_TESTS_SUPPORT_SUITE_H_

#include <grpcpp/grpcpp.h>

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "dcl/v1/common.pb.h"
#include "dcl/v1/inventory.grpc.pb.h"
#include "dcl/v1/moves.grpc.pb.h"
#include "dcl/v1/occupancy.grpc.pb.h"
#include "dcl/v1/reservation.grpc.pb.h"
#include "services/common/auth.h"
#include "services/common/db.h"
#include "services/common/rpc_gate.h"
#include "services/inventory/inventory_logic.h"
#include "services/inventory/inventory_service.h"
#include "services/moves/move_logic.h"
#include "services/moves/move_service.h"
#include "services/occupancy/occupancy_logic.h"
#include "services/occupancy/occupancy_service.h"
#include "services/reservation/reservation_logic.h"
#include "services/reservation/reservation_service.h"
#include "tests/support/grpc_harness.h"
#include "tests/support/test_db.h"

namespace dcl::testing {

// All four services on `pool` behind one in-process server; the pool must outlive the suite.
class InProcessSuite {
 public:
  explicit InProcessSuite(DbPool& pool);
  InProcessSuite(const InProcessSuite&) = delete;
  InProcessSuite& operator=(const InProcessSuite&) = delete;

  InProcessServer& server() { return server_; }
  std::shared_ptr<grpc::Channel> Channel() const { return channel_; }

 private:
  RpcGate gate_;
  reservation::ReservationLogic reservation_logic_;
  occupancy::OccupancyLogic occupancy_logic_;
  moves::MoveLogic move_logic_;
  inventory::InventoryLogic inventory_logic_;
  reservation::ReservationServiceImpl reservation_;
  occupancy::OccupancyServiceImpl occupancy_;
  moves::MoveServiceImpl moves_;
  inventory::InventoryServiceImpl inventory_;
  InProcessServer server_;
  std::shared_ptr<grpc::Channel> channel_;

 public:
  std::unique_ptr<v1::ReservationService::Stub> reservations;
  std::unique_ptr<v1::OccupancyService::Stub> occupancy;
  std::unique_ptr<v1::MoveService::Stub> moves;
  std::unique_ptr<v1::InventoryService::Stub> inventory;
};

// The database and pool a SuiteWorld serves: a base, so that both exist before the suite does.
struct SuiteDatabase {
  explicit SuiteDatabase(int pool_size) : pool(db.MakePool(pool_size)) {}
  TestDatabase db;
  std::unique_ptr<DbPool> pool;
};

// One organization ("acme", module on) in a fresh test database, served by the whole suite.
class SuiteWorld : public SuiteDatabase, public InProcessSuite {
 public:
  explicit SuiteWorld(int pool_size = 16);

  // A token of `org` for `role`, created through the real token path on first use.
  const std::string& Token(Role role);

  std::string org;

 private:
  std::map<Role, std::string> tokens_;
};

// Whether the server answered with the replay header (`dcl-replay: true`): the answer is the
// first one, given again for a client request id already answered.
bool Replayed(const grpc::ClientContext& ctx);

// A call whose response headers and error detail can be read afterwards.
struct Call {
  std::unique_ptr<grpc::ClientContext> ctx;
  grpc::Status status;
  bool replay() const { return Replayed(*ctx); }
  std::optional<v1::ErrorDetail> detail() const;
};

// `method` of `stub` with "authorization: Bearer <token>" (none when empty).
template <typename Stub, typename Req, typename Resp>
Call Invoke(Stub& stub, grpc::Status (Stub::*method)(grpc::ClientContext*, const Req&, Resp*),
            const std::string& token, const Req& req, Resp* resp) {
  Call call;
  call.ctx = ContextWithToken(token);
  call.status = (stub.*method)(call.ctx.get(), req, resp);
  return call;
}

}  // namespace dcl::testing

#endif  // DCL_TESTS_SUPPORT_SUITE_H_
