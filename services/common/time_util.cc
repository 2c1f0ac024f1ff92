#include "services/common/time_util.h"

namespace dcl {

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
