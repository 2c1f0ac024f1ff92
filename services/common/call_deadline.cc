#include "services/common/call_deadline.h"

#include "absl/strings/str_cat.h"

namespace dcl {

namespace {
thread_local absl::Time t_call_deadline = absl::InfiniteFuture();
}  // namespace

CallDeadlineScope::CallDeadlineScope(absl::Time deadline) : previous_(t_call_deadline) {
  t_call_deadline = deadline;
}

CallDeadlineScope::~CallDeadlineScope() { t_call_deadline = previous_; }

absl::Time CallDeadlineOnThisThread() { return t_call_deadline; }

std::string CallDeadlineParameter(absl::Time deadline) {
  if (deadline == absl::InfiniteFuture()) return "";
  return absl::StrCat(absl::ToUnixMicros(deadline));
}

}  // namespace dcl
