// The /metrics endpoint over real HTTP on a port chosen by the kernel: the registry's text with
// Prometheus' content type, 404 elsewhere, 405 for other methods, and addresses refused before
// anything is bound.
#include "services/common/metrics_http.h"

#include <catch2/catch.hpp>
#include <memory>

#include "tests/support/metrics_scrape.h"

namespace dcl {
namespace {

TEST_CASE("GET /metrics answers the registry's exposition, on the port it reports") {
  MetricsRegistry registry;
  Counter& calls = registry.AddCounter("dcl_test_calls_total", "calls", {"rpc"}).WithLabels({"/x"});
  calls.Increment(41);
  absl::StatusOr<std::unique_ptr<MetricsHttpServer>> server =
      MetricsHttpServer::Start("127.0.0.1:0", registry);
  REQUIRE(server.ok());
  const int port = (*server)->port();
  REQUIRE(port > 0);

  testing::HttpResponse response = testing::HttpRequest(port, "/metrics");
  CHECK(response.status == 200);
  CHECK(response.content_type == "text/plain; version=0.0.4; charset=utf-8");
  CHECK(response.body == registry.Render());
  CHECK(testing::Scrape(port).at("dcl_test_calls_total{rpc=\"/x\"}") == 41);

  // Every scrape reads the values of that moment.
  calls.Increment();
  CHECK(testing::Scrape(port).at("dcl_test_calls_total{rpc=\"/x\"}") == 42);

  CHECK(testing::HttpRequest(port, "/").status == 404);
  CHECK(testing::HttpRequest(port, "/metrics/more").status == 404);
  CHECK(testing::HttpRequest(port, "/metrics", "POST").status == 405);
  testing::HttpResponse head = testing::HttpRequest(port, "/metrics", "HEAD");
  CHECK(head.status == 200);
  CHECK(head.body.empty());
}

TEST_CASE("the endpoint is gone once its server is destroyed") {
  MetricsRegistry registry;
  int port = 0;
  {
    auto server = MetricsHttpServer::Start("127.0.0.1:0", registry);
    REQUIRE(server.ok());
    port = (*server)->port();
    REQUIRE(testing::HttpRequest(port, "/metrics").status == 200);
  }
  CHECK(testing::HttpRequest(port, "/metrics").status == 0);
}

TEST_CASE("a malformed address is INVALID_ARGUMENT, a taken port UNAVAILABLE") {
  MetricsRegistry registry;
  for (const char* bad : {"", "9090", "localhost:9090", "[::1]:9090", "127.0.0.1:", "127.0.0.1:x",
                          "127.0.0.1:70000", "127.0.0.1:9090s", "127.0.0.1:1,127.0.0.1:2"}) {
    INFO(bad);
    CHECK(MetricsHttpServer::Start(bad, registry).status().code() ==
          absl::StatusCode::kInvalidArgument);
  }
  auto first = MetricsHttpServer::Start("127.0.0.1:0", registry);
  REQUIRE(first.ok());
  auto second =
      MetricsHttpServer::Start("127.0.0.1:" + std::to_string((*first)->port()), registry);
  CHECK(second.status().code() == absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace dcl
