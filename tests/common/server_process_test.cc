// A real server binary under SIGTERM: a call in flight when the signal arrives completes, and the
// process exits 0.
#include <catch2/catch.hpp>

#include <signal.h>

#include <regex>
#include <thread>

#include "dcl/v1/reservation.grpc.pb.h"
#include "tests/support/child_process.h"
#include "tests/support/fixtures.h"
#include "tests/support/grpc_harness.h"
#include "tests/support/test_db.h"

namespace dcl {
namespace {

using testing::WaitUntil;

int ServingPort(testing::ChildProcess& server) {
  int port = 0;
  WaitUntil(
      [&] {
        std::smatch match;
        const std::string log = server.Log();
        if (!std::regex_search(log, match, std::regex("serving on port ([0-9]+)"))) return false;
        port = std::stoi(match[1]);
        return true;
      },
      std::chrono::seconds(30));
  return port;
}

TEST_CASE("SIGTERM with a call in flight: the call completes and the server exits 0") {
  testing::TestDatabase db;
  const std::string org = testing::CreateOrg(db, "acme");
  const std::string token = testing::CreateTokenFor(db, org, Role::kCommerce);
  testing::ChildProcess server(
      testing::RunfilesBinary("services/reservation/reservation_server"),
      {"--database_url=" + db.service_url(), "--listen=127.0.0.1:0", "--shutdown_grace_seconds=20"});
  const int port = ServingPort(server);
  REQUIRE(port > 0);
  auto stub = v1::ReservationService::NewStub(grpc::CreateChannel(
      "127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));

  // Hold the token table so the call waits inside the server, in flight, on a database lock.
  auto blocker = db.Connect();
  pqxx::work hold(*blocker);
  hold.exec("LOCK TABLE api_tokens IN ACCESS EXCLUSIVE MODE");

  grpc::Status in_flight;
  v1::ListReservationsResponse response;
  std::thread caller([&] {
    in_flight = stub->ListReservations(testing::ContextWithToken(token).get(),
                                       v1::ListReservationsRequest(), &response);
  });
  auto observer = db.Connect();
  REQUIRE(WaitUntil(
      [&] {
        pqxx::nontransaction tx(*observer);
        return tx.exec("SELECT 1 FROM pg_stat_activity WHERE application_name = 'dcl' "
                       "AND wait_event_type = 'Lock'")
                   .size() == 1;
      },
      std::chrono::seconds(10)));

  server.Signal(SIGTERM);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  CHECK(server.Running());  // draining, not dead
  hold.commit();            // the call may now finish

  caller.join();
  CHECK(in_flight.ok());
  CHECK(server.WaitForExit(std::chrono::seconds(20)) == std::optional<int>(0));
  CHECK(server.Log().find("server stopped") != std::string::npos);
}

}  // namespace
}  // namespace dcl
