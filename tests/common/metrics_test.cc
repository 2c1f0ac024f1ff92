// The metrics registry and its text exposition (format 0.0.4): exact output for counters,
// gauges and histograms with labels, escaping, number formatting, bucket edges, re-registration,
// and totals that stay exact under concurrent recording.
#include "services/common/metrics.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <thread>
#include <vector>

#include "tests/support/metrics_scrape.h"

namespace dcl {
namespace {

TEST_CASE("the exposition of a counter, a gauge and a histogram is exactly the text format") {
  MetricsRegistry registry;
  MetricFamily<Counter>& calls =
      registry.AddCounter("dcl_calls_total", "calls by method and code", {"rpc", "code"});
  calls.WithLabels({"/a.B/C", "OK"}).Increment();
  calls.WithLabels({"/a.B/C", "OK"}).Increment(2);
  calls.WithLabels({"/a.B/A", "NOT_FOUND"}).Increment();
  registry.AddGauge("dcl_in_use", "connections in use").Get().Set(3);
  MetricFamily<Histogram>& latency =
      registry.AddHistogram("dcl_latency_seconds", "latency", {"rpc"}, {0.125, 0.5, 1});
  Histogram& c = latency.WithLabels({"/a.B/C"});
  // Binary fractions, so that the sum is exact.
  c.Observe(0.0625);
  c.Observe(0.125);  // on a bound: counted in that bucket ("le")
  c.Observe(0.75);
  c.Observe(7);

  CHECK(registry.Render() ==
        "# HELP dcl_calls_total calls by method and code\n"
        "# TYPE dcl_calls_total counter\n"
        "dcl_calls_total{rpc=\"/a.B/A\",code=\"NOT_FOUND\"} 1\n"
        "dcl_calls_total{rpc=\"/a.B/C\",code=\"OK\"} 3\n"
        "# HELP dcl_in_use connections in use\n"
        "# TYPE dcl_in_use gauge\n"
        "dcl_in_use 3\n"
        "# HELP dcl_latency_seconds latency\n"
        "# TYPE dcl_latency_seconds histogram\n"
        "dcl_latency_seconds_bucket{rpc=\"/a.B/C\",le=\"0.125\"} 2\n"
        "dcl_latency_seconds_bucket{rpc=\"/a.B/C\",le=\"0.5\"} 2\n"
        "dcl_latency_seconds_bucket{rpc=\"/a.B/C\",le=\"1\"} 3\n"
        "dcl_latency_seconds_bucket{rpc=\"/a.B/C\",le=\"+Inf\"} 4\n"
        "dcl_latency_seconds_sum{rpc=\"/a.B/C\"} 7.9375\n"
        "dcl_latency_seconds_count{rpc=\"/a.B/C\"} 4\n");
}

TEST_CASE("families without labels are rendered as 0 before anything is recorded") {
  MetricsRegistry registry;
  registry.AddCounter("dcl_rows_total", "rows");
  registry.AddGauge("dcl_open", "open");
  registry.AddHistogram("dcl_size", "size", {}, {1, 2});
  registry.AddCounter("dcl_labelled_total", "appears at first use", {"kind"});
  CHECK(registry.Render() ==
        "# HELP dcl_rows_total rows\n# TYPE dcl_rows_total counter\ndcl_rows_total 0\n"
        "# HELP dcl_open open\n# TYPE dcl_open gauge\ndcl_open 0\n"
        "# HELP dcl_size size\n# TYPE dcl_size histogram\n"
        "dcl_size_bucket{le=\"1\"} 0\ndcl_size_bucket{le=\"2\"} 0\n"
        "dcl_size_bucket{le=\"+Inf\"} 0\ndcl_size_sum 0\ndcl_size_count 0\n"
        "# HELP dcl_labelled_total appears at first use\n# TYPE dcl_labelled_total counter\n");
}

TEST_CASE("label values and help text are escaped as the format asks") {
  MetricsRegistry registry;
  registry.AddCounter("dcl_odd_total", "a \\ backslash\nand a \"quote\"", {"v"})
      .WithLabels({"back\\slash \"quoted\"\nnext line"})
      .Increment();
  CHECK(registry.Render() ==
        "# HELP dcl_odd_total a \\\\ backslash\\nand a \"quote\"\n"
        "# TYPE dcl_odd_total counter\n"
        "dcl_odd_total{v=\"back\\\\slash \\\"quoted\\\"\\nnext line\"} 1\n");
  CHECK(EscapeLabelValue("plain") == "plain");
}

TEST_CASE("values are written as Prometheus reads them") {
  CHECK(FormatMetricValue(0) == "0");
  CHECK(FormatMetricValue(-2.5) == "-2.5");
  CHECK(FormatMetricValue(0.1) == "0.1");
  CHECK(FormatMetricValue(1e-9) == "1e-09");
  CHECK(FormatMetricValue(1e300) == "1e+300");
  CHECK(FormatMetricValue(1800000000) == "1800000000");  // Unix seconds in full
  CHECK(FormatMetricValue(1800000000.25) == "1800000000.25");
  CHECK(FormatMetricValue(-16) == "-16");
  CHECK(FormatMetricValue(std::numeric_limits<double>::infinity()) == "+Inf");
  CHECK(FormatMetricValue(-std::numeric_limits<double>::infinity()) == "-Inf");
  CHECK(FormatMetricValue(std::nan("")) == "NaN");
  // Shortest text that reads back as the same double.
  const double third = 1.0 / 3;
  CHECK(std::stod(FormatMetricValue(third)) == third);
  // Counters are integers, written in full beyond a double's 2^53.
  MetricsRegistry registry;
  Counter& big = registry.AddCounter("dcl_big_total", "big").Get();
  big.Increment((uint64_t{1} << 53) + 1);
  CHECK(registry.Render().find("dcl_big_total 9007199254740993\n") != std::string::npos);
}

TEST_CASE("a gauge goes up and down, a histogram puts NaN and large values in +Inf") {
  MetricsRegistry registry;
  Gauge& gauge = registry.AddGauge("dcl_g", "g").Get();
  gauge.Add(5);
  gauge.Add(-2);
  CHECK(gauge.value() == 3);
  gauge.Set(1.5);
  CHECK(gauge.value() == 1.5);

  Histogram& histogram = registry.AddHistogram("dcl_h", "h", {}, {1}).Get();
  histogram.Observe(1e300);
  histogram.Observe(0.5);
  const Histogram::Snapshot snapshot = histogram.Read();
  CHECK(snapshot.cumulative == std::vector<uint64_t>{1, 2});
  CHECK(snapshot.count() == 2);
}

TEST_CASE("registering a name again returns the same family, and its series") {
  MetricsRegistry registry;
  MetricFamily<Counter>& first = registry.AddCounter("dcl_x_total", "x", {"a"});
  MetricFamily<Counter>& second = registry.AddCounter("dcl_x_total", "x", {"a"});
  CHECK(&first == &second);
  Counter& series = first.WithLabels({"1"});
  CHECK(&series == &second.WithLabels({"1"}));
  CHECK(&series != &second.WithLabels({"2"}));
  MetricFamily<Histogram>& h1 = registry.AddHistogram("dcl_y", "y", {"a"}, {1, 2});
  CHECK(&h1 == &registry.AddHistogram("dcl_y", "y", {"a"}, {1, 2}));
}

TEST_CASE("what the registry renders parses back sample by sample") {
  MetricsRegistry registry;
  registry.AddCounter("dcl_c_total", "c", {"rpc", "code", "reason"})
      .WithLabels({"/dcl.v1.S/M", "FAILED_PRECONDITION", "UNIT_OCCUPIED"})
      .Increment(4);
  registry.AddHistogram("dcl_d_seconds", "d", {"rpc"}, {0.5})
      .WithLabels({"/dcl.v1.S/M"})
      .Observe(0.25);
  const testing::Samples samples = testing::ParseSamples(registry.Render());
  CHECK(samples.size() == 5);
  CHECK(samples.at("dcl_c_total{rpc=\"/dcl.v1.S/M\",code=\"FAILED_PRECONDITION\","
                   "reason=\"UNIT_OCCUPIED\"}") == 4);
  CHECK(samples.at("dcl_d_seconds_bucket{rpc=\"/dcl.v1.S/M\",le=\"+Inf\"}") == 1);
  CHECK(samples.at("dcl_d_seconds_sum{rpc=\"/dcl.v1.S/M\"}") == 0.25);
  CHECK(testing::ValueOr0(samples, "dcl_absent_total") == 0);
}

TEST_CASE("concurrent recording from many threads loses nothing") {
  MetricsRegistry registry;
  MetricFamily<Counter>& family = registry.AddCounter("dcl_n_total", "n", {"t"});
  Gauge& gauge = registry.AddGauge("dcl_level", "level").Get();
  Histogram& histogram = registry.AddHistogram("dcl_obs", "obs", {}, {0.5, 1.5}).Get();
  constexpr int kThreads = 8;
  constexpr int kPerThread = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Half the threads share one series (looked up each time, as a first use races), half
      // have their own.
      for (int i = 0; i < kPerThread; ++i) {
        family.WithLabels({t % 2 == 0 ? "shared" : std::to_string(t)}).Increment();
        gauge.Add(1);
        gauge.Add(-0.5);
        histogram.Observe(i % 2 == 0 ? 1.0 : 2.0);
      }
    });
  }
  // Rendering while they record must not disturb them (and must not crash).
  for (int i = 0; i < 20; ++i) CHECK_FALSE(registry.Render().empty());
  for (std::thread& thread : threads) thread.join();

  CHECK(family.WithLabels({"shared"}).value() == uint64_t{kThreads / 2} * kPerThread);
  CHECK(family.WithLabels({"1"}).value() == uint64_t{kPerThread});
  CHECK(gauge.value() == 0.5 * kThreads * kPerThread);
  const Histogram::Snapshot snapshot = histogram.Read();
  CHECK(snapshot.cumulative ==
        std::vector<uint64_t>{0, uint64_t{kThreads} * kPerThread / 2,
                              uint64_t{kThreads} * kPerThread});
  CHECK(snapshot.sum == 1.5 * kThreads * kPerThread);
}

}  // namespace
}  // namespace dcl
