#include "tests/bench/bench_csv.h"

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

ABSL_FLAG(std::string, csv, "",
          "append one CSV row per measured run to this file (docs/perf/plot.py draws them)");

namespace dcl::bench {
namespace {

// A number, or an empty field where the run did not measure it.
std::string Field(double value) {
  return value < 0 ? std::string() : absl::StrCat(value);
}

// Text fields hold commas ("10,000 site"): quoted, with quotes doubled, as RFC 4180 says.
std::string Quoted(const std::string& text) {
  return absl::StrCat("\"", absl::StrReplaceAll(text, {{"\"", "\"\""}}), "\"");
}

std::string UtcNow() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

}  // namespace

void AppendCsv(const CsvRow& row) {
  const std::string path = absl::GetFlag(FLAGS_csv);
  if (path.empty()) return;
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  std::FILE* file = std::fopen(path.c_str(), "a");
  if (file == nullptr) {
    std::fprintf(stderr, "--csv: cannot write %s\n", path.c_str());
    std::exit(2);
  }
  if (std::ftell(file) == 0) {
    std::fputs(
        "measured_at,benchmark,scenario,run,clients,calls_per_second,p50_ms,p95_ms,p99_ms,"
        "ceiling_tx_per_second,cpu_client_ms,cpu_postgres_ms\n",
        file);
  }
  const std::string line = absl::StrCat(
      UtcNow(), ",", Quoted(row.benchmark), ",", Quoted(row.scenario), ",", Quoted(row.run), ",",
      row.clients, ",", Field(row.calls_per_second), ",", Field(row.p50_ms), ",",
      Field(row.p95_ms), ",", Field(row.p99_ms), ",", Field(row.ceiling_tx_per_second), ",",
      Field(row.cpu_client_ms), ",", Field(row.cpu_postgres_ms), "\n");
  const bool written = std::fputs(line.c_str(), file) >= 0;
  if (std::fclose(file) != 0 || !written) {
    std::fprintf(stderr, "--csv: cannot write %s\n", path.c_str());
    std::exit(2);
  }
}

}  // namespace dcl::bench
