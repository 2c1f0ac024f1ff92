// Who is calling: the organization and role a bearer token resolved to (auth.h resolves it; the
// gate, rpc_gate.h, hands it to the handler). Plain data, so that the logic and store layers
// that scope their queries by it link neither the token checks nor the RPC gate.
#ifndef DCL_SERVICES_COMMON_PRINCIPAL_H_
#define DCL_SERVICES_COMMON_PRINCIPAL_H_

#include <string>

#include "services/common/rpc_catalog.h"

namespace dcl {

// Who is calling. Every query a handler runs is scoped by org_id.
struct Principal {
  std::string token_id;
  std::string org_id;
  Role role = Role::kCustomer;
  std::string subject;          // role customer: the customer it speaks for
  bool module_enabled = false;  // the datacenter module's switch for this organization
  std::string Actor() const;    // for created_by / ended_by columns: "role:token_id"
};

}  // namespace dcl

#endif  // DCL_SERVICES_COMMON_PRINCIPAL_H_
