// Releases a fixed number of threads at the same instant, so concurrent calls really race.
#ifndef DCL_TESTS_SUPPORT_BARRIER_H_
#define DCL_TESTS_SUPPORT_BARRIER_H_

#include <condition_variable>
#include <mutex>

namespace dcl::testing {

class Barrier {
 public:
  explicit Barrier(int parties) : parties_(parties) {}
  void ArriveAndWait() {
    std::unique_lock<std::mutex> lock(mu_);
    if (++arrived_ == parties_) {
      released_ = true;
      cv_.notify_all();
      return;
    }
    cv_.wait(lock, [this] { return released_; });
  }

 private:
  const int parties_;
  int arrived_ = 0;
  bool released_ = false;
  std::mutex mu_;
  std::condition_variable cv_;
};

}  // namespace dcl::testing

#endif  // DCL_TESTS_SUPPORT_BARRIER_H_
