#include "services/common/metrics.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace dcl {
namespace {

// Registration mistakes are bugs in the binary, found at its start: stop there.
[[noreturn]] void Misuse(const std::string& message) {
  std::fprintf(stderr, "metrics: %s\n", message.c_str());
  std::abort();
}

bool IsMetricName(const std::string& name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
    if (!letter && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

bool IsLabelName(const std::string& name) {
  if (name.empty() || name.rfind("__", 0) == 0) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!letter && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

// HELP text: backslash and newline escaped (quotes stay, unlike in label values).
std::string EscapeHelp(const std::string& help) {
  std::string out;
  out.reserve(help.size());
  for (char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

// {a="x",b="y"} with `extra` (le="...") last; empty when there is no label at all.
std::string LabelSet(const std::vector<std::string>& names, const std::vector<std::string>& values,
                     const std::string& extra = "") {
  if (names.empty() && extra.empty()) return "";
  std::string out = "{";
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += ',';
    absl::StrAppend(&out, names[i], "=\"", EscapeLabelValue(values[i]), "\"");
  }
  if (!extra.empty()) {
    if (!names.empty()) out += ',';
    out += extra;
  }
  out += '}';
  return out;
}

void RenderHeader(std::string* out, const std::string& name, const std::string& help,
                  const char* type) {
  absl::StrAppend(out, "# HELP ", name, " ", EscapeHelp(help), "\n# TYPE ", name, " ", type,
                  "\n");
}

}  // namespace

std::string FormatMetricValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  // Whole numbers (counts, Unix seconds) in full, not as 1.8e+09.
  if (std::abs(value) < 9007199254740992.0 && value == std::trunc(value)) {
    return std::to_string(static_cast<int64_t>(value));
  }
  char buffer[64];
  const std::to_chars_result result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, result.ptr);
}

std::string EscapeLabelValue(const std::string& value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

void Gauge::Add(double delta) {
  double current = value_.load(std::memory_order_relaxed);
  while (!value_.compare_exchange_weak(current, current + delta, std::memory_order_relaxed)) {
  }
}

Histogram::Histogram(std::vector<double> upper_bounds)
    : upper_bounds_(std::move(upper_bounds)),
      buckets_(new std::atomic<uint64_t>[upper_bounds_.size() + 1]) {
  for (size_t i = 0; i <= upper_bounds_.size(); ++i) buckets_[i].store(0);
}

void Histogram::Observe(double value) {
  // The first bound at or above the value ("le"); the last bucket is +Inf (and NaN).
  size_t bucket = 0;
  while (bucket < upper_bounds_.size() && !(value <= upper_bounds_[bucket])) ++bucket;
  buckets_[bucket].fetch_add(1, std::memory_order_relaxed);
  sum_.Add(value);
}

Histogram::Snapshot Histogram::Read() const {
  Snapshot snapshot;
  snapshot.cumulative.reserve(upper_bounds_.size() + 1);
  uint64_t running = 0;
  for (size_t i = 0; i <= upper_bounds_.size(); ++i) {
    running += buckets_[i].load(std::memory_order_relaxed);
    snapshot.cumulative.push_back(running);
  }
  snapshot.sum = sum_.value();
  return snapshot;
}

template <>
std::unique_ptr<Counter> MetricFamily<Counter>::NewSeries() const {
  return std::make_unique<Counter>();
}
template <>
std::unique_ptr<Gauge> MetricFamily<Gauge>::NewSeries() const {
  return std::make_unique<Gauge>();
}
template <>
std::unique_ptr<Histogram> MetricFamily<Histogram>::NewSeries() const {
  return std::make_unique<Histogram>(upper_bounds_);
}

template <typename Series>
Series& MetricFamily<Series>::WithLabels(const std::vector<std::string>& label_values) {
  if (label_values.size() != label_names_.size()) {
    Misuse(absl::StrCat(name_, " has ", label_names_.size(), " labels, not ",
                        label_values.size()));
  }
  absl::MutexLock lock(&mu_);
  std::unique_ptr<Series>& series = series_[label_values];
  if (series == nullptr) series = NewSeries();
  return *series;
}

template class MetricFamily<Counter>;
template class MetricFamily<Gauge>;
template class MetricFamily<Histogram>;

MetricsRegistry& MetricsRegistry::Default() {
  static MetricsRegistry* registry = new MetricsRegistry();
  return *registry;
}

MetricsRegistry::Entry& MetricsRegistry::Register(Type type, const std::string& name,
                                                  const std::vector<std::string>& label_names,
                                                  const std::vector<double>& upper_bounds) {
  if (!IsMetricName(name)) Misuse(absl::StrCat("not a metric name: '", name, "'"));
  for (const std::string& label : label_names) {
    if (!IsLabelName(label)) Misuse(absl::StrCat(name, ": not a label name: '", label, "'"));
    if (type == Type::kHistogram && label == "le") {
      Misuse(absl::StrCat(name, ": a histogram's buckets own the label 'le'"));
    }
  }
  for (size_t i = 0; i < upper_bounds.size(); ++i) {
    if (!std::isfinite(upper_bounds[i]) || (i > 0 && upper_bounds[i] <= upper_bounds[i - 1])) {
      Misuse(absl::StrCat(name, ": bucket bounds must be finite and strictly increasing"));
    }
  }
  for (auto& [existing_name, entry] : families_) {
    if (existing_name != name) continue;
    if (entry->type != type || entry->label_names != label_names ||
        entry->upper_bounds != upper_bounds) {
      Misuse(absl::StrCat(name, " is registered twice, differently"));
    }
    return *entry;
  }
  auto entry = std::make_unique<Entry>();
  entry->type = type;
  entry->label_names = label_names;
  entry->upper_bounds = upper_bounds;
  families_.emplace_back(name, std::move(entry));
  return *families_.back().second;
}

MetricFamily<Counter>& MetricsRegistry::AddCounter(const std::string& name,
                                                   const std::string& help,
                                                   const std::vector<std::string>& label_names) {
  absl::MutexLock lock(&mu_);
  Entry& entry = Register(Type::kCounter, name, label_names, {});
  if (entry.counter == nullptr) {
    entry.counter.reset(new MetricFamily<Counter>(name, help, label_names, {}));
    if (label_names.empty()) entry.counter->Get();
  }
  return *entry.counter;
}

MetricFamily<Gauge>& MetricsRegistry::AddGauge(const std::string& name, const std::string& help,
                                               const std::vector<std::string>& label_names) {
  absl::MutexLock lock(&mu_);
  Entry& entry = Register(Type::kGauge, name, label_names, {});
  if (entry.gauge == nullptr) {
    entry.gauge.reset(new MetricFamily<Gauge>(name, help, label_names, {}));
    if (label_names.empty()) entry.gauge->Get();
  }
  return *entry.gauge;
}

MetricFamily<Histogram>& MetricsRegistry::AddHistogram(const std::string& name,
                                                       const std::string& help,
                                                       const std::vector<std::string>& label_names,
                                                       const std::vector<double>& upper_bounds) {
  absl::MutexLock lock(&mu_);
  Entry& entry = Register(Type::kHistogram, name, label_names, upper_bounds);
  if (entry.histogram == nullptr) {
    entry.histogram.reset(new MetricFamily<Histogram>(name, help, label_names, upper_bounds));
    if (label_names.empty()) entry.histogram->Get();
  }
  return *entry.histogram;
}

std::string MetricsRegistry::Render() const {
  std::string out;
  absl::MutexLock lock(&mu_);
  for (const auto& [name, entry] : families_) {
    switch (entry->type) {
      case Type::kCounter: {
        const MetricFamily<Counter>& family = *entry->counter;
        RenderHeader(&out, name, family.help_, "counter");
        absl::MutexLock family_lock(&family.mu_);
        for (const auto& [values, counter] : family.series_) {
          absl::StrAppend(&out, name, LabelSet(family.label_names_, values), " ",
                          counter->value(), "\n");
        }
        break;
      }
      case Type::kGauge: {
        const MetricFamily<Gauge>& family = *entry->gauge;
        RenderHeader(&out, name, family.help_, "gauge");
        absl::MutexLock family_lock(&family.mu_);
        for (const auto& [values, gauge] : family.series_) {
          absl::StrAppend(&out, name, LabelSet(family.label_names_, values), " ",
                          FormatMetricValue(gauge->value()), "\n");
        }
        break;
      }
      case Type::kHistogram: {
        const MetricFamily<Histogram>& family = *entry->histogram;
        RenderHeader(&out, name, family.help_, "histogram");
        absl::MutexLock family_lock(&family.mu_);
        for (const auto& [values, histogram] : family.series_) {
          const Histogram::Snapshot snapshot = histogram->Read();
          const std::vector<double>& bounds = histogram->upper_bounds();
          for (size_t i = 0; i <= bounds.size(); ++i) {
            const std::string le =
                i < bounds.size() ? FormatMetricValue(bounds[i]) : std::string("+Inf");
            absl::StrAppend(&out, name, "_bucket",
                            LabelSet(family.label_names_, values, absl::StrCat("le=\"", le, "\"")),
                            " ", snapshot.cumulative[i], "\n");
          }
          const std::string labels = LabelSet(family.label_names_, values);
          absl::StrAppend(&out, name, "_sum", labels, " ", FormatMetricValue(snapshot.sum), "\n");
          absl::StrAppend(&out, name, "_count", labels, " ", snapshot.count(), "\n");
        }
        break;
      }
    }
  }
  return out;
}

}  // namespace dcl
