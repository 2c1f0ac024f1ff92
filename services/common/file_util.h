// Reading a file whole, for the binaries that load one at start-up (TLS certificates and keys
// for the servers and dclctl): a library of its own so that a client links no server to do it.
#ifndef DCL_SERVICES_COMMON_FILE_UTIL_H_
#define DCL_SERVICES_COMMON_FILE_UTIL_H_

#include <string>

#include "absl/status/statusor.h"

namespace dcl {

// Reads a file whole (certificates); NOT_FOUND when it cannot be read.
absl::StatusOr<std::string> ReadFileToString(const std::string& path);

}  // namespace dcl

#endif  // DCL_SERVICES_COMMON_FILE_UTIL_H_
