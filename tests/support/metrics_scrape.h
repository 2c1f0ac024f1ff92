// Reading Prometheus metrics in tests: a plain HTTP/1.0 GET over a socket (what a scraper does,
// with no client library between the test and the endpoint), a parser of the text format into
// samples, and finding the port a binary logged ("metrics on port N").
#ifndef DCL_TESTS_SUPPORT_METRICS_SCRAPE_H_
#define DCL_TESTS_SUPPORT_METRICS_SCRAPE_H_

#include <map>
#include <optional>
#include <string>

namespace dcl::testing {

struct HttpResponse {
  int status = 0;            // 0: no HTTP answer at all
  std::string content_type;  // the Content-Type header's value
  std::string body;
};

// GET (or another method) http://127.0.0.1:port/path with HTTP/1.0: the server closes the
// connection after the answer, which ends the body.
HttpResponse HttpRequest(int port, const std::string& path, const std::string& method = "GET");

// Samples by series as written: `name{label="value",...}` (labels in the exposition's order),
// or `name` alone. Comment lines are skipped; a line that is not "series value" fails the test.
using Samples = std::map<std::string, double>;
Samples ParseSamples(const std::string& exposition);

// GET /metrics, checked to be 200 with the text format's content type, parsed.
Samples Scrape(int port);

// The value of `series`, or 0 when the exposition does not have it (a series appears at its
// first use).
double ValueOr0(const Samples& samples, const std::string& series);

// The port in the first "metrics on port N" of `log`; nullopt when not logged yet.
std::optional<int> LoggedMetricsPort(const std::string& log);

}  // namespace dcl::testing

#endif  // DCL_TESTS_SUPPORT_METRICS_SCRAPE_H_
