// The real occupancy_server binary with --metrics_listen on a kernel-chosen port, scraped over
// HTTP: one PlaceDevice refused with UNIT_OCCUPIED moves exactly its own counter by one and the
// RPC's histograms by one observation, and the pool gauges describe the server's pool.
#include <catch2/catch.hpp>

#include <chrono>
#include <regex>
#include <string>

#include "dcl/v1/occupancy.grpc.pb.h"
#include "services/common/grpc_status.h"
#include "tests/support/child_process.h"
#include "tests/support/fixtures.h"
#include "tests/support/grpc_harness.h"
#include "tests/support/metrics_scrape.h"
#include "tests/support/test_db.h"

namespace dcl {
namespace {

using testing::Samples;
using testing::ValueOr0;

constexpr char kPlaceDevice[] = "/dcl.v1.OccupancyService/PlaceDevice";

std::string Calls(const std::string& code, const std::string& reason) {
  return std::string("dcl_rpc_calls_total{rpc=\"") + kPlaceDevice + "\",code=\"" + code +
         "\",reason=\"" + reason + "\"}";
}

// The sum of every series of `family` (a histogram's: of `family` + suffix) in `samples`.
double SumOf(const Samples& samples, const std::string& prefix) {
  double total = 0;
  for (const auto& [series, value] : samples) {
    if (series.rfind(prefix, 0) == 0) total += value;
  }
  return total;
}

TEST_CASE("a PlaceDevice refused with UNIT_OCCUPIED moves its counter by exactly one") {
  testing::TestDatabase db;
  const std::string org = testing::CreateOrg(db, "acme");
  const std::string site = testing::CreateSite(db, org, "FRA1");
  const std::string rack = testing::CreateRack(db, org, site);
  const std::string d1 = testing::CreateDevice(db, org, site);
  const std::string d2 = testing::CreateDevice(db, org, site);
  const std::string token = testing::CreateTokenFor(db, org, Role::kDcOperator);

  testing::ChildProcess server(
      testing::RunfilesBinary("services/occupancy/occupancy_server"),
      {"--database_url=" + db.url(), "--listen=127.0.0.1:0", "--metrics_listen=127.0.0.1:0",
       "--pool_size=3"});
  int grpc_port = 0;
  std::optional<int> metrics_port;
  REQUIRE(testing::WaitUntil(
      [&] {
        const std::string log = server.Log();
        std::smatch match;
        if (!std::regex_search(log, match, std::regex("serving on port ([0-9]+)"))) return false;
        grpc_port = std::stoi(match[1]);
        metrics_port = testing::LoggedMetricsPort(log);
        return metrics_port.has_value();
      },
      std::chrono::seconds(30)));
  INFO(server.Log());
  auto stub = v1::OccupancyService::NewStub(grpc::CreateChannel(
      "127.0.0.1:" + std::to_string(grpc_port), grpc::InsecureChannelCredentials()));

  v1::PlaceDeviceRequest req;
  req.set_rack_id(rack);
  req.set_device_id(d1);
  req.set_side(v1::SIDE_FRONT);
  req.set_unit(9);
  v1::Booking booking;
  REQUIRE(stub->PlaceDevice(testing::ContextWithToken(token).get(), req, &booking).ok());

  const Samples before = testing::Scrape(*metrics_port);
  CHECK(ValueOr0(before, Calls("OK", "")) == 1);
  req.set_device_id(d2);
  grpc::Status taken = stub->PlaceDevice(testing::ContextWithToken(token).get(), req, &booking);
  REQUIRE(taken.error_code() == grpc::StatusCode::FAILED_PRECONDITION);
  std::optional<v1::ErrorDetail> detail = ErrorDetailFromGrpc(taken);
  REQUIRE(detail.has_value());
  REQUIRE(detail->reason() == v1::UNIT_OCCUPIED);
  const Samples after = testing::Scrape(*metrics_port);

  const std::string occupied = Calls("FAILED_PRECONDITION", "UNIT_OCCUPIED");
  CHECK(ValueOr0(before, occupied) == 0);
  CHECK(ValueOr0(after, occupied) == 1);
  // Nothing else moved: the OK series stays, and one call was added over all series.
  CHECK(ValueOr0(after, Calls("OK", "")) == 1);
  CHECK(SumOf(after, "dcl_rpc_calls_total{") - SumOf(before, "dcl_rpc_calls_total{") == 1);

  const std::string rpc = std::string("{rpc=\"") + kPlaceDevice + "\"}";
  CHECK(ValueOr0(after, "dcl_rpc_duration_seconds_count" + rpc) -
            ValueOr0(before, "dcl_rpc_duration_seconds_count" + rpc) ==
        1);
  CHECK(ValueOr0(after, "dcl_rpc_duration_seconds_sum" + rpc) >
        ValueOr0(before, "dcl_rpc_duration_seconds_sum" + rpc));
  CHECK(ValueOr0(after, "dcl_rpc_db_statements_count" + rpc) -
            ValueOr0(before, "dcl_rpc_db_statements_count" + rpc) ==
        1);
  // At least the token's lookup (one statement in autocommit) and the refused write (BEGIN, the
  // one read of rack, device and taken slots, ROLLBACK).
  const double statements = ValueOr0(after, "dcl_rpc_db_statements_sum" + rpc) -
                            ValueOr0(before, "dcl_rpc_db_statements_sum" + rpc);
  CAPTURE(statements);
  CHECK(statements >= 4);
  CHECK(statements < 100);

  // The server's own pool (the health probe may hold a connection for a moment).
  CHECK(ValueOr0(after, "dcl_db_pool_connections_max") == 3);
  CHECK(ValueOr0(after, "dcl_db_pool_waiters") == 0);
  CHECK(ValueOr0(after, "dcl_db_pool_connections_in_use") <= 1);
  CHECK(ValueOr0(after, "dcl_db_pool_connections_idle") >= 1);
}

TEST_CASE("a metrics address that cannot be used stops the server at start with exit status 2") {
  testing::TestDatabase db;
  testing::ChildProcess server(testing::RunfilesBinary("services/occupancy/occupancy_server"),
                               {"--database_url=" + db.url(), "--listen=127.0.0.1:0",
                                "--metrics_listen=localhost:9464"});
  CHECK(server.WaitForExit(std::chrono::seconds(30)) == std::optional<int>(2));
  CHECK(server.Log().find("not an IPv4 address") != std::string::npos);
}

}  // namespace
}  // namespace dcl
