#include "services/common/stream_quota.h"

#include "absl/strings/str_cat.h"
#include "services/common/status.h"

namespace dcl {

absl::StatusOr<StreamQuota::Ticket> StreamQuota::Acquire(const std::string& org_id) {
  absl::MutexLock lock(&mu_);
  if (open_ >= limits_.per_server) {
    return Error(absl::StatusCode::kResourceExhausted, v1::LIMIT_REACHED,
                 "too many streams are open on this server; retry later")
        .Meta("limit_scope", "server")
        .Meta("limit", absl::StrCat(limits_.per_server));
  }
  int& mine = open_by_org_[org_id];
  if (mine >= limits_.per_org) {
    if (mine == 0) open_by_org_.erase(org_id);
    return Error(absl::StatusCode::kResourceExhausted, v1::LIMIT_REACHED,
                 "your organization has the most streams it may open on this server; close one "
                 "or retry later")
        .Meta("limit_scope", "organization")
        .Meta("limit", absl::StrCat(limits_.per_org));
  }
  ++mine;
  ++open_;
  return Ticket(this, org_id);
}

void StreamQuota::Release(const std::string& org_id) {
  absl::MutexLock lock(&mu_);
  --open_;
  auto it = open_by_org_.find(org_id);
  if (it != open_by_org_.end() && --it->second <= 0) open_by_org_.erase(it);
}

int StreamQuota::open() const {
  absl::MutexLock lock(&mu_);
  return open_;
}

int StreamQuota::open_for(const std::string& org_id) const {
  absl::MutexLock lock(&mu_);
  auto it = open_by_org_.find(org_id);
  return it == open_by_org_.end() ? 0 : it->second;
}

}  // namespace dcl
