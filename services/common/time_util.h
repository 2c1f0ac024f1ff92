// Timestamps as the stores read and compare them: microseconds since the epoch. The SQL that
// converts between timestamptz and those microseconds is spelled here only (exact both ways:
// numeric extract, not float), and SetTimestampFromMicros turns the result into a
// google.protobuf.Timestamp.
#ifndef DCL_SERVICES_COMMON_TIME_UTIL_H_
#define DCL_SERVICES_COMMON_TIME_UTIL_H_

#include <cstdint>
#include <string>

#include <google/protobuf/timestamp.pb.h>

#include "absl/strings/string_view.h"

namespace dcl {

// SQL for a timestamptz expression as a bigint of microseconds since the epoch (NULL stays
// NULL): SqlMicros("r.created_at").
std::string SqlMicros(absl::string_view timestamptz);

// SQL for the timestamptz of a bigint expression of microseconds since the epoch, the inverse
// of SqlMicros: a page cursor compared with its column, SqlTimestampFromMicros("$4").
std::string SqlTimestampFromMicros(absl::string_view micros);

// Correct before 1970 too: nanos stay in [0, 1e9) as the Timestamp contract requires.
void SetTimestampFromMicros(int64_t micros, google::protobuf::Timestamp* ts);

}  // namespace dcl

#endif  // DCL_SERVICES_COMMON_TIME_UTIL_H_
