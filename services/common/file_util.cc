#include "services/common/file_util.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace dcl {

absl::StatusOr<std::string> ReadFileToString(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot read ", path));
  }
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace dcl
