// Input checks shared by every handler: each violation is INVALID_ARGUMENT naming the field.
#ifndef DCL_SERVICES_COMMON_VALIDATION_H_
#define DCL_SERVICES_COMMON_VALIDATION_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "google/protobuf/message.h"

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

// Length and encoding limits on every string field of a request, applied by the gate before
// any handler runs, so that no RPC can forget them: fields named *_id or id at most
// kMaxIdLength, idempotency keys kMaxKeyLength, note/reason kMaxNoteLength, anything else
// kMaxNameLength; all valid UTF-8 without NUL. Nested messages are checked too. Whether a field
// is required, or must be a UUID, is the handler's check.
absl::Status CheckRequestLimits(const google::protobuf::Message& request);

}  // namespace dcl

#endif  // DCL_SERVICES_COMMON_VALIDATION_H_
