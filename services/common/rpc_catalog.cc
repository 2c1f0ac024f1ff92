#include "services/common/rpc_catalog.h"

namespace dcl {
namespace {

constexpr std::array<const char*, kRoleCount> kRoleNames = {"commerce", "dc-operator",
                                                            "customer", "admin"};

}  // namespace

const char* RoleName(Role role) { return kRoleNames[static_cast<size_t>(role)]; }

bool ParseRole(const std::string& name, Role* role) {
  for (size_t i = 0; i < kRoleCount; ++i) {
    if (kRoleNames[i] == name) {
      *role = static_cast<Role>(i);
      return true;
    }
  }
  return false;
}

}  // namespace dcl
