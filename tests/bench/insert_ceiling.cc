#include "tests/bench/insert_ceiling.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <pqxx/pqxx>

#include "tests/bench/run_together.h"

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
  const double elapsed = RunTogether(clients, [&](int c, const std::function<void()>& start) {
    pqxx::connection conn(url);
    conn.prepare("ceiling", "INSERT INTO bench_ceiling (client) VALUES ($1)");
    start();
    const auto until = Clock::now() + std::chrono::duration<double>(seconds);
    long long n = 0;
    while (Clock::now() < until) {
      pqxx::nontransaction tx(conn);
      tx.exec_prepared("ceiling", c);
      ++n;
    }
    committed += n;
  });
  pqxx::connection conn(url);
  pqxx::nontransaction tx(conn);
  tx.exec("TRUNCATE bench_ceiling");
  return committed / elapsed;
}

}  // namespace dcl::bench
