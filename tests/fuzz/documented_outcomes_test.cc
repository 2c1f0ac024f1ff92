// docs/api.md's table "Status codes per RPC", read the way the fuzzer reads it: it covers every
// RPC of the four services and names nothing else, and a malformed row is refused rather than
// read as "anything goes".
#include "tests/fuzz/documented_outcomes.h"

#include <catch2/catch.hpp>

#include <set>
#include <stdexcept>
#include <string>

#include <google/protobuf/descriptor.h>

#include "dcl/v1/inventory.grpc.pb.h"
#include "dcl/v1/moves.grpc.pb.h"
#include "dcl/v1/occupancy.grpc.pb.h"
#include "dcl/v1/reservation.grpc.pb.h"

namespace dcl::fuzz {
namespace {

std::set<std::string> ServedMethods() {
  std::set<std::string> methods;
  for (const char* service :
       {v1::ReservationService::service_full_name(), v1::OccupancyService::service_full_name(),
        v1::InventoryService::service_full_name(), v1::MoveService::service_full_name()}) {
    const google::protobuf::ServiceDescriptor* descriptor =
        google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(service);
    REQUIRE(descriptor != nullptr);
    for (int i = 0; i < descriptor->method_count(); ++i) {
      methods.insert(descriptor->method(i)->full_name());
    }
  }
  return methods;
}

TEST_CASE("docs/api.md documents the answers of every RPC the servers offer, and of no other") {
  const std::map<std::string, OutcomeSet> table = ReadDocumentedOutcomes(kApiDocPath);
  const std::set<std::string> served = ServedMethods();
  for (const std::string& method : served) {
    INFO(method << " has no row in docs/api.md, \"Status codes per RPC\"");
    CHECK(table.count(method) == 1);
  }
  for (const auto& [method, outcomes] : table) {
    INFO(method << " is documented but no service offers it");
    CHECK(served.count(method) == 1);
  }
}

TEST_CASE("a documented row reads as its codes and reasons; commentary is not a reason") {
  const std::string page =
      "# API\n\n## Status codes per RPC\n\ntext\n\n"
      "| RPC | answers |\n| --- | --- |\n"
      "| `OccupancyService.PlanBooking` | `OK` (a refusal is `ok: false`); `NOT_FOUND`: "
      "`NOT_FOUND` |\n"
      "| `MoveService.WatchMove` | `RESOURCE_EXHAUSTED`: `LIMIT_REACHED`, `NOT_FOUND`; "
      "`DEADLINE_EXCEEDED` (the client's) |\n\n"
      "## Next section\n\n| `ReservationService.Reserve` | `INTERNAL` |\n";
  const std::map<std::string, OutcomeSet> table = ParseDocumentedOutcomes(page);
  REQUIRE(table.size() == 2);  // the row after the table's section is not part of it
  const OutcomeSet& plan = table.at("dcl.v1.OccupancyService.PlanBooking");
  CHECK(IsAllowed(plan, grpc::StatusCode::OK, ""));
  CHECK(IsAllowed(plan, grpc::StatusCode::NOT_FOUND, "NOT_FOUND"));
  CHECK_FALSE(IsAllowed(plan, grpc::StatusCode::NOT_FOUND, "UNIT_OCCUPIED"));
  CHECK_FALSE(IsAllowed(plan, grpc::StatusCode::INTERNAL, ""));
  // What every RPC may answer comes with each row.
  CHECK(IsAllowed(plan, grpc::StatusCode::UNAUTHENTICATED, "UNAUTHENTICATED_CALLER"));
  const OutcomeSet& watch = table.at("dcl.v1.MoveService.WatchMove");
  CHECK(IsAllowed(watch, grpc::StatusCode::RESOURCE_EXHAUSTED, "LIMIT_REACHED"));
  CHECK(IsAllowed(watch, grpc::StatusCode::RESOURCE_EXHAUSTED, "NOT_FOUND"));
  CHECK(IsAllowed(watch, grpc::StatusCode::DEADLINE_EXCEEDED, ""));
  CHECK_FALSE(IsAllowed(watch, grpc::StatusCode::OK, ""));
}

TEST_CASE("a malformed status table is refused, naming the row") {
  const std::string head = "## Status codes per RPC\n\n| RPC | answers |\n| --- | --- |\n";
  auto refused = [&](const std::string& row) {
    try {
      ParseDocumentedOutcomes(head + row + "\n");
    } catch (const std::runtime_error& e) {
      return std::string(e.what()).find(row.substr(0, row.find('\n'))) != std::string::npos;
    }
    return false;
  };
  CHECK(refused("| `ReservationService.Reserve` | `OK`; `NOT_FOUND`: `NO_SUCH_REASON` |"));
  CHECK(refused("| `ReservationService.Reserve` | `TEAPOT` |"));
  CHECK(refused("| `Reserve` | `OK` |"));
  CHECK(refused("| `ReservationService.Reserve` | `OK` (unclosed |"));
  CHECK(refused("| `ReservationService.Reserve` | `OK` | extra |"));
  CHECK(refused("| `ReservationService.Reserve` | `OK` |\n| `ReservationService.Reserve` | `OK` |"));
  CHECK_THROWS(ParseDocumentedOutcomes("# no table here\n"));
}

}  // namespace
}  // namespace dcl::fuzz
