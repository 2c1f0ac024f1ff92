// The start line the benchmarks share: every client thread sets itself up first (a connection,
// a gRPC stub), then all start at once, so that no set-up falls inside the measured time.
#ifndef DCL_TESTS_BENCH_RUN_TOGETHER_H_
#define DCL_TESTS_BENCH_RUN_TOGETHER_H_

#include <functional>

namespace dcl::bench {

// Runs body(client, start) on `clients` threads. Each thread sets itself up, then calls start(),
// which returns once every thread has called it; what follows is measured. Returns the seconds
// from that common start until the last thread has returned.
double RunTogether(int clients,
                   const std::function<void(int client, const std::function<void()>& start)>& body);

}  // namespace dcl::bench

#endif  // DCL_TESTS_BENCH_RUN_TOGETHER_H_
