// The RPC table against the contracts: every method of the three services has exactly one entry,
// and no entry names a method that does not exist.
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "dcl/v1/inventory.pb.h"
#include "dcl/v1/moves.pb.h"
#include "dcl/v1/occupancy.pb.h"
#include "dcl/v1/reservation.pb.h"
#include "services/common/rpc_catalog.h"

namespace dcl {
namespace {

std::set<std::string> MethodsOf(const google::protobuf::FileDescriptor* file) {
  std::set<std::string> names;
  for (int s = 0; s < file->service_count(); ++s) {
    const auto* service = file->service(s);
    for (int m = 0; m < service->method_count(); ++m) {
      names.insert("/" + service->full_name() + "/" + service->method(m)->name());
    }
  }
  return names;
}

TEST_CASE("every RPC of the four services has exactly one entry in the permission table") {
  std::set<std::string> declared;
  for (const auto* file : {v1::ReserveRequest::descriptor()->file(),
                           v1::PlaceDeviceRequest::descriptor()->file(),
                           v1::StartMoveRequest::descriptor()->file(),
                           v1::CreateRackRequest::descriptor()->file()}) {
    for (const std::string& name : MethodsOf(file)) declared.insert(name);
  }
  std::set<std::string> tabled;
  for (const RpcInfo& info : kRpcTable) {
    CHECK(tabled.insert(info.full_name).second);  // no duplicates
    CHECK(info.allowed_roles != 0);
  }
  CHECK(tabled == declared);
}

TEST_CASE("roles reach exactly their own services") {
  CHECK(RoleMayCall(Role::kCommerce, Rpc::kReserve));
  CHECK_FALSE(RoleMayCall(Role::kCommerce, Rpc::kPlaceDevice));
  CHECK(RoleMayCall(Role::kDcOperator, Rpc::kStartMove));
  CHECK_FALSE(RoleMayCall(Role::kDcOperator, Rpc::kReserve));
  CHECK(RoleMayCall(Role::kCustomer, Rpc::kGetServiceLocation));
  CHECK_FALSE(RoleMayCall(Role::kCustomer, Rpc::kGetReservation));
  for (const RpcInfo& info : kRpcTable) CHECK_FALSE(RoleMayCall(Role::kAdmin, info.rpc));
}

TEST_CASE("role names parse back to their roles and nothing else parses") {
  for (Role role : {Role::kCommerce, Role::kDcOperator, Role::kCustomer, Role::kAdmin}) {
    Role parsed;
    REQUIRE(ParseRole(RoleName(role), &parsed));
    CHECK(parsed == role);
  }
  Role parsed;
  CHECK_FALSE(ParseRole("root", &parsed));
  CHECK_FALSE(ParseRole("", &parsed));
}

}  // namespace
}  // namespace dcl
