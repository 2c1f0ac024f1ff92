// Stream limits per server and per organization: one tenant cannot take every stream, the
// server's total still holds, and a closed stream gives its place back.
#include "services/common/stream_quota.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <optional>
#include <thread>
#include <vector>

#include "services/common/status.h"

namespace dcl {
namespace {

std::string ScopeOf(const absl::Status& status) {
  REQUIRE(status.code() == absl::StatusCode::kResourceExhausted);
  auto detail = GetErrorDetail(status);
  REQUIRE(detail.has_value());
  CHECK(detail->reason() == v1::LIMIT_REACHED);
  return detail->metadata().at("limit_scope");
}

TEST_CASE("one organization at its share leaves the rest of the server to the others") {
  StreamQuota quota({.per_server = 5, .per_org = 2});
  std::vector<StreamQuota::Ticket> held;
  for (int i = 0; i < 2; ++i) held.push_back(*quota.Acquire("greedy"));
  CHECK(ScopeOf(quota.Acquire("greedy").status()) == "organization");
  CHECK(quota.open_for("greedy") == 2);
  for (int i = 0; i < 2; ++i) held.push_back(*quota.Acquire("modest"));
  held.push_back(*quota.Acquire("third"));
  CHECK(quota.open() == 5);
  // The server's total holds even for an organization below its share.
  CHECK(ScopeOf(quota.Acquire("fourth").status()) == "server");
  CHECK(quota.open_for("fourth") == 0);
}

TEST_CASE("a closed stream gives its place back, to its organization and the server") {
  StreamQuota quota({.per_server = 2, .per_org = 1});
  {
    StreamQuota::Ticket ticket = *quota.Acquire("a");
    CHECK_FALSE(quota.Acquire("a").ok());
    StreamQuota::Ticket moved = std::move(ticket);  // a moved ticket is released once
    CHECK(quota.open() == 1);
  }
  CHECK(quota.open() == 0);
  CHECK(quota.open_for("a") == 0);
  CHECK(quota.Acquire("a").ok());  // the ticket is a temporary: released at once
  CHECK(quota.open() == 0);
}

TEST_CASE("concurrent acquisitions never admit more than the limits") {
  StreamQuota quota({.per_server = 16, .per_org = 4});
  std::atomic<int> admitted{0};
  std::atomic<int> peak{0};
  std::atomic<int> over_share{0};  // Catch2's assertions are not thread-safe: count, check later
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      const std::string org = "org" + std::to_string(t % 3);
      for (int i = 0; i < 2000; ++i) {
        absl::StatusOr<StreamQuota::Ticket> ticket = quota.Acquire(org);
        if (!ticket.ok()) continue;
        ++admitted;
        const int open = quota.open();
        int seen = peak.load();
        while (open > seen && !peak.compare_exchange_weak(seen, open)) {
        }
        if (quota.open_for(org) > 4) ++over_share;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  CHECK(admitted.load() > 0);
  CHECK(over_share.load() == 0);
  CHECK(peak.load() <= 12);  // three organizations of at most four each
  CHECK(quota.open() == 0);
}

}  // namespace
}  // namespace dcl
