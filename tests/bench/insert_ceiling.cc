#include "tests/bench/insert_ceiling.h"

#include <atomic>
#include <chrono>
#include <pqxx/pqxx>
#include <thread>
#include <vector>

namespace dcl::bench {

double InsertCeiling(const std::string& url, int clients, double seconds) {
  using Clock = std::chrono::steady_clock;
  {
    pqxx::connection conn(url);
    pqxx::nontransaction tx(conn);
    tx.exec("CREATE TABLE IF NOT EXISTS bench_ceiling (id bigserial PRIMARY KEY, "
            "at timestamptz NOT NULL DEFAULT now(), client integer NOT NULL)");
  }
  std::atomic<long long> committed{0};
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      pqxx::connection conn(url);
      conn.prepare("ceiling", "INSERT INTO bench_ceiling (client) VALUES ($1)");
      ++ready;
      while (!go) std::this_thread::yield();
      const auto until = Clock::now() + std::chrono::duration<double>(seconds);
      long long n = 0;
      while (Clock::now() < until) {
        pqxx::nontransaction tx(conn);
        tx.exec_prepared("ceiling", c);
        ++n;
      }
      committed += n;
    });
  }
  while (ready < clients) std::this_thread::yield();
  const auto start = Clock::now();
  go = true;
  for (auto& t : threads) t.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  pqxx::connection conn(url);
  pqxx::nontransaction tx(conn);
  tx.exec("TRUNCATE bench_ceiling");
  return committed / elapsed;
}

}  // namespace dcl::bench
