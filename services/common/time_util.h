// Timestamps as the stores read them: microseconds since the epoch (selected exactly with
// extract(epoch …) * 1000000 as bigint) turned into google.protobuf.Timestamp.
#ifndef DCL_SERVICES_COMMON_TIME_UTIL_H_
#define DCL_SERVICES_COMMON_TIME_UTIL_H_

#include <cstdint>

#include <google/protobuf/timestamp.pb.h>

namespace dcl {

// Correct before 1970 too: nanos stay in [0, 1e9) as the Timestamp contract requires.
void SetTimestampFromMicros(int64_t micros, google::protobuf::Timestamp* ts);

}  // namespace dcl

#endif  // DCL_SERVICES_COMMON_TIME_UTIL_H_
