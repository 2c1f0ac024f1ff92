// The benchmarks' results as CSV, one row per measured run, so that figures become charts
// (docs/perf/plot.py) instead of being copied by hand. A benchmark appends to the file that its
// --csv flag names; without the flag nothing is written. Rows of several runs may share a file:
// each carries its benchmark, scenario and the UTC time it was measured.
#ifndef DCL_TESTS_BENCH_BENCH_CSV_H_
#define DCL_TESTS_BENCH_BENCH_CSV_H_

#include <string>

namespace dcl::bench {

struct CsvRow {
  std::string benchmark;  // "reservation", "occupancy"
  std::string scenario;   // e.g. "shared 10k throughput", "site 50 racks"
  // "service" (the real RPC), "echo-insert floor", "database alone", "gRPC only", "ceiling"
  // (occupancy: "PlaceDevice", "write calls", "echo-insert floor")
  std::string run;
  int clients = 0;
  double calls_per_second = 0;
  double p50_ms = -1, p95_ms = -1, p99_ms = -1;  // -1: not measured for this run
  double ceiling_tx_per_second = -1;             // the one-row INSERT ceiling beside it
  // CPU per call (tests/bench/cpu_meter.h). cpu_client_ms: for runs through gRPC, the server's
  // share of the benchmark process (its load-generator threads apart); for runs without a
  // server (database alone, the ceiling), the client's.
  double cpu_client_ms = -1, cpu_postgres_ms = -1;
};

// Appends `row` to the --csv file (with the header line first when the file is new or empty).
// Does nothing without --csv; exits with status 2 when the file cannot be written, since a
// benchmark whose figures are lost has not done its job.
void AppendCsv(const CsvRow& row);

}  // namespace dcl::bench

#endif  // DCL_TESTS_BENCH_BENCH_CSV_H_
