// Bounds long-lived streams (WatchMove) per server and per organization, so that one tenant
// cannot take every stream a server offers: a stream is admitted only while both the server's
// total and the caller's organization's share are below their limits. Pure bookkeeping, no I/O.
#ifndef DCL_SERVICES_COMMON_STREAM_QUOTA_H_
#define DCL_SERVICES_COMMON_STREAM_QUOTA_H_

#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace dcl {

// Each open WatchMove stream holds a server thread (the synchronous gRPC API), no database
// connection: the defaults are sized for threads.
struct StreamLimits {
  int per_server = 4096;
  int per_org = 1024;
};

class StreamQuota {
 public:
  // Holds one admitted stream; gives it back when destroyed.
  class Ticket {
   public:
    Ticket(Ticket&& other) noexcept : quota_(other.quota_), org_(std::move(other.org_)) {
      other.quota_ = nullptr;
    }
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;
    Ticket& operator=(Ticket&&) = delete;
    ~Ticket() {
      if (quota_ != nullptr) quota_->Release(org_);
    }

   private:
    friend class StreamQuota;
    Ticket(StreamQuota* quota, std::string org) : quota_(quota), org_(std::move(org)) {}
    StreamQuota* quota_;
    std::string org_;
  };

  explicit StreamQuota(StreamLimits limits) : limits_(limits) {}
  StreamQuota(const StreamQuota&) = delete;
  StreamQuota& operator=(const StreamQuota&) = delete;

  // A ticket, or RESOURCE_EXHAUSTED / LIMIT_REACHED naming which limit is reached
  // (metadata "limit_scope" = "server" or "organization").
  absl::StatusOr<Ticket> Acquire(const std::string& org_id);

  int open() const;
  int open_for(const std::string& org_id) const;
  const StreamLimits& limits() const { return limits_; }

 private:
  void Release(const std::string& org_id);

  const StreamLimits limits_;
  mutable absl::Mutex mu_;
  int open_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, int> open_by_org_ ABSL_GUARDED_BY(mu_);
};

}  // namespace dcl

#endif  // DCL_SERVICES_COMMON_STREAM_QUOTA_H_
