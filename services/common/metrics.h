// A small Prometheus metrics registry: counters, gauges and fixed-bucket histograms, each a
// family of series told apart by label values, rendered in the text exposition format 0.0.4
// (what GET /metrics answers, see metrics_http.h).
//
// Cost on the hot path: a series is a handful of atomics. Looking a series up by its label
// values takes the family's mutex; callers on a hot path look each series up once and keep the
// reference (series are never removed, so references stay valid as long as the registry), and
// from then on recording is a relaxed atomic add, with no lock shared between calls.
//
// Every dcl process has one registry, MetricsRegistry::Default(), which the instrumented code
// (the RPC gate, the pool, the sweeper, WatchMove) records into and the HTTP endpoint renders.
// Several instrumented objects in one process (two pools, two gates in a test) share its
// series: gauges then hold the sum, counters the total.
#ifndef DCL_SERVICES_COMMON_METRICS_H_
#define DCL_SERVICES_COMMON_METRICS_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace dcl {

// A value that only goes up (calls, rows ended).
class Counter {
 public:
  void Increment(uint64_t by = 1) { value_.fetch_add(by, std::memory_order_relaxed); }
  uint64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

// A value that goes up and down (connections in use), or is set (a timestamp).
class Gauge {
 public:
  void Set(double value) { value_.store(value, std::memory_order_relaxed); }
  void Add(double delta);
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

// Observations counted into fixed buckets (upper bounds, strictly increasing, finite; +Inf is
// implicit), with their sum.
class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  Histogram(const Histogram&) = delete;
  Histogram& operator=(const Histogram&) = delete;

  void Observe(double value);

  struct Snapshot {
    std::vector<uint64_t> cumulative;  // per bound, then +Inf (= count)
    double sum = 0;
    uint64_t count() const { return cumulative.empty() ? 0 : cumulative.back(); }
  };
  // Read while others observe: each bucket is exact, but an observation made during the read
  // may be in the sum and not yet in its bucket (or the reverse).
  Snapshot Read() const;
  const std::vector<double>& upper_bounds() const { return upper_bounds_; }

 private:
  const std::vector<double> upper_bounds_;
  // Per bucket, not cumulative (one add per observation); the last one is +Inf.
  const std::unique_ptr<std::atomic<uint64_t>[]> buckets_;
  Gauge sum_;
};

// The series of one metric, by label values (in the order of the family's label names).
template <typename Series>
class MetricFamily {
 public:
  // The series for `label_values` (one per label name), created at its first use. The reference
  // stays valid as long as the registry. Takes the family's mutex: keep the reference.
  Series& WithLabels(const std::vector<std::string>& label_values);
  // The series of a family without labels.
  Series& Get() { return WithLabels({}); }

 private:
  friend class MetricsRegistry;
  MetricFamily(std::string name, std::string help, std::vector<std::string> label_names,
               std::vector<double> upper_bounds)
      : name_(std::move(name)),
        help_(std::move(help)),
        label_names_(std::move(label_names)),
        upper_bounds_(std::move(upper_bounds)) {}
  std::unique_ptr<Series> NewSeries() const;

  const std::string name_;
  const std::string help_;
  const std::vector<std::string> label_names_;
  const std::vector<double> upper_bounds_;  // histograms only
  mutable absl::Mutex mu_;
  // Ordered by label values, so the rendering is stable.
  std::map<std::vector<std::string>, std::unique_ptr<Series>> series_ ABSL_GUARDED_BY(mu_);
};

class MetricsRegistry {
 public:
  MetricsRegistry() = default;
  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;

  // The process's registry; never destroyed.
  static MetricsRegistry& Default();

  // Registers a family, or returns the one registered under `name` before. Names follow
  // Prometheus' rules ([a-zA-Z_:][a-zA-Z0-9_:]*, labels [a-zA-Z_][a-zA-Z0-9_]*, no "__"
  // prefix, no "le" label on a histogram); breaking them, or registering one name twice with
  // another type, labels or buckets, is a programming error and aborts. A family without labels
  // has its one series from the start, so it is rendered (as 0) before anything is recorded.
  MetricFamily<Counter>& AddCounter(const std::string& name, const std::string& help,
                                    const std::vector<std::string>& label_names = {});
  MetricFamily<Gauge>& AddGauge(const std::string& name, const std::string& help,
                                const std::vector<std::string>& label_names = {});
  MetricFamily<Histogram>& AddHistogram(const std::string& name, const std::string& help,
                                        const std::vector<std::string>& label_names,
                                        const std::vector<double>& upper_bounds);

  // Every family in registration order, in the text exposition format 0.0.4.
  std::string Render() const;

 private:
  enum class Type { kCounter, kGauge, kHistogram };
  struct Entry {
    Type type;
    std::vector<std::string> label_names;
    std::vector<double> upper_bounds;
    std::unique_ptr<MetricFamily<Counter>> counter;
    std::unique_ptr<MetricFamily<Gauge>> gauge;
    std::unique_ptr<MetricFamily<Histogram>> histogram;
  };
  Entry& Register(Type type, const std::string& name, const std::vector<std::string>& label_names,
                  const std::vector<double>& upper_bounds) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  std::vector<std::pair<std::string, std::unique_ptr<Entry>>> families_ ABSL_GUARDED_BY(mu_);
};

// Text-format helpers, exposed for the tests: a value as Prometheus reads it ("+Inf", "NaN",
// the shortest decimal that reads back as the same double), and a label value escaped (\\, \",
// \n).
std::string FormatMetricValue(double value);
std::string EscapeLabelValue(const std::string& value);

}  // namespace dcl

#endif  // DCL_SERVICES_COMMON_METRICS_H_
