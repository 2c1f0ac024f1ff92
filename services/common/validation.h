// Input checks shared by every handler: each violation is INVALID_ARGUMENT naming the field.
#ifndef DCL_SERVICES_COMMON_VALIDATION_H_
#define DCL_SERVICES_COMMON_VALIDATION_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"

namespace dcl {

inline constexpr size_t kMaxIdLength = 36;
inline constexpr size_t kMaxKeyLength = 200;
inline constexpr size_t kMaxNoteLength = 2000;
inline constexpr size_t kMaxNameLength = 200;

bool IsUuid(const std::string& s);

// A required id: a UUID.
absl::Status CheckId(const std::string& field, const std::string& value);
// Free text of at most max_length bytes, valid UTF-8 and without NUL; required = non-empty.
absl::Status CheckText(const std::string& field, const std::string& value, size_t max_length,
                       bool required);

}  // namespace dcl

#endif  // DCL_SERVICES_COMMON_VALIDATION_H_
