#include "services/common/principal.h"

#include "absl/strings/str_cat.h"

namespace dcl {

std::string Principal::Actor() const { return absl::StrCat(RoleName(role), ":", token_id); }

}  // namespace dcl
