#include "services/common/time_util.h"

#include "absl/strings/str_cat.h"

namespace dcl {

std::string SqlMicros(absl::string_view timestamptz) {
  return absl::StrCat("(extract(epoch FROM ", timestamptz, ") * 1000000)::bigint");
}

std::string SqlTimestampFromMicros(absl::string_view micros) {
  return absl::StrCat("('epoch'::timestamptz + ", micros, "::bigint * interval '1 microsecond')");
}

void SetTimestampFromMicros(int64_t micros, google::protobuf::Timestamp* ts) {
  int64_t seconds = micros / 1000000;
  int64_t rest = micros % 1000000;
  if (rest < 0) {
    rest += 1000000;
    --seconds;
  }
  ts->set_seconds(seconds);
  ts->set_nanos(static_cast<int32_t>(rest * 1000));
}

}  // namespace dcl
