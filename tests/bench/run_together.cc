#include "tests/bench/run_together.h"

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace dcl::bench {

double RunTogether(
    int clients, const std::function<void(int client, const std::function<void()>& start)>& body) {
  using Clock = std::chrono::steady_clock;
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  const std::function<void()> start = [&] {
    ++ready;
    while (!go) std::this_thread::yield();
  };
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) threads.emplace_back([&, c] { body(c, start); });
  while (ready < clients) std::this_thread::yield();
  const auto begin = Clock::now();
  go = true;
  for (auto& t : threads) t.join();
  return std::chrono::duration<double>(Clock::now() - begin).count();
}

}  // namespace dcl::bench
