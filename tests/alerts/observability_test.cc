// The alerts and the dashboard against what really runs: the four dcl binaries are started on a
// test database and scraped, and every metric the rules (deploy/prometheus/dcl-alerts.yml), their
// promtool tests and the Grafana dashboard name must be one of the families they export, with
// label values the services can write (an RPC's full name, a status code name, a Reason). Every
// alert has a runbook section in docs/day-two.md, is made to fire and to stay silent by the
// promtool tests, and every dashboard query parses as PromQL (promtool check rules over them).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "dcl/v1/common.pb.h"
#include "services/common/rpc_catalog.h"
#include "tests/support/child_process.h"
#include "tests/support/metrics_scrape.h"
#include "tests/support/test_db.h"

namespace dcl {
namespace {

std::string RunfilePath(const std::string& workspace_path) {
  const char* root = std::getenv("TEST_SRCDIR");
  REQUIRE(root != nullptr);
  return std::string(root) + "/dcl/" + workspace_path;
}

std::string ReadFile(const std::string& workspace_path) {
  std::ifstream in(RunfilePath(workspace_path));
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Metric family name → type ("counter", "gauge", "histogram"), from the "# TYPE" lines of the
// four binaries' /metrics.
std::map<std::string, std::string> ExportedFamilies(const testing::TestDatabase& db) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> binaries = {
      {"services/reservation/reservation_server", {"--listen=127.0.0.1:0"}},
      {"services/occupancy/occupancy_server", {"--listen=127.0.0.1:0"}},
      {"services/moves/moves_server", {"--listen=127.0.0.1:0"}},
      {"sweeper/sweeper", {"--interval_seconds=3600"}},
  };
  std::map<std::string, std::string> families;
  for (const auto& [binary, flags] : binaries) {
    std::vector<std::string> args = flags;
    args.push_back("--database_url=" + db.service_url());
    args.push_back("--metrics_listen=127.0.0.1:0");
    args.push_back("--pool_size=2");
    testing::ChildProcess process(testing::RunfilesBinary(binary), args);
    std::optional<int> port;
    REQUIRE(testing::WaitUntil(
        [&] {
          port = testing::LoggedMetricsPort(process.Log());
          return port.has_value();
        },
        std::chrono::seconds(30)));
    const testing::HttpResponse response = testing::HttpRequest(*port, "/metrics");
    INFO(binary << "\n" << process.Log());
    REQUIRE(response.status == 200);
    std::smatch match;
    const std::regex type_line("# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) ([a-z]+)");
    for (const std::string& line : std::vector<std::string>(absl::StrSplit(response.body, '\n'))) {
      if (std::regex_match(line, match, type_line)) families[match[1]] = match[2];
    }
  }
  return families;
}

// Every identifier in `text` that names a dcl metric or a recorded series of one
// ("dcl_rpc_calls_total", "service:dcl_rpc_server_errors:ratio_rate5m").
std::set<std::string> MetricNamesIn(const std::string& text) {
  std::set<std::string> names;
  const std::regex identifier("[a-zA-Z_:][a-zA-Z0-9_:]*");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), identifier);
       it != std::sregex_iterator(); ++it) {
    const std::string name = it->str();
    if (name.rfind("dcl_", 0) == 0 || name.find(":dcl_") != std::string::npos) names.insert(name);
  }
  return names;
}

// The names the rules file records ("- record: NAME").
std::set<std::string> RecordedNames(const std::string& rules) {
  std::set<std::string> names;
  const std::regex record("record: *([a-zA-Z_:][a-zA-Z0-9_:]*)");
  for (auto it = std::sregex_iterator(rules.begin(), rules.end(), record);
       it != std::sregex_iterator(); ++it) {
    names.insert((*it)[1]);
  }
  return names;
}

// "" when `name` is exported (a histogram's series carry _bucket, _sum, _count) or recorded;
// otherwise why not.
std::string Unknown(const std::string& name, const std::map<std::string, std::string>& families,
                    const std::set<std::string>& recorded) {
  if (name.find(':') != std::string::npos) {
    return recorded.count(name) > 0 ? "" : name + " is recorded by no rule";
  }
  if (families.count(name) > 0) {
    return families.at(name) == "histogram" ? name + " is a histogram: use its _bucket/_sum/_count"
                                            : "";
  }
  for (const std::string suffix : {"_bucket", "_sum", "_count"}) {
    if (name.size() > suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      const std::string family = name.substr(0, name.size() - suffix.size());
      if (families.count(family) > 0 && families.at(family) == "histogram") return "";
    }
  }
  return name + " is exported by no dcl binary";
}

// The label values the services write, per label name the rules filter on.
std::set<std::string> RpcNames() {
  std::set<std::string> names;
  for (const RpcInfo& info : kRpcTable) names.insert(info.full_name);
  return names;
}
std::set<std::string> CodeNames() {
  std::set<std::string> names;
  for (int code = 0; code <= 16; ++code) {
    names.insert(absl::StatusCodeToString(static_cast<absl::StatusCode>(code)));
  }
  return names;
}
std::set<std::string> ReasonNames() {
  std::set<std::string> names = {""};
  const auto* descriptor = v1::Reason_descriptor();
  for (int i = 0; i < descriptor->value_count(); ++i) names.insert(descriptor->value(i)->name());
  return names;
}

// PromQL's double-quoted string, unescaped (the regex "/dcl\\.v1\\.X/.*" reads /dcl\.v1\.X/.*).
std::string Unescape(const std::string& quoted) {
  std::string out;
  for (size_t i = 0; i < quoted.size(); ++i) {
    if (quoted[i] == '\\' && i + 1 < quoted.size()) ++i;
    out.push_back(quoted[i]);
  }
  return out;
}

// Every matcher on rpc, code, reason or outcome in `text` that no series the services write can
// satisfy: an exact value that is not one, or a regex that matches none of them.
std::vector<std::string> ImpossibleMatchers(const std::string& text) {
  const std::map<std::string, std::set<std::string>> values = {
      {"rpc", RpcNames()},
      {"code", CodeNames()},
      {"reason", ReasonNames()},
      {"outcome", {"success", "failure"}},
  };
  std::vector<std::string> impossible;
  const std::regex matcher("\\b(rpc|code|reason|outcome)(=~|!=|=)\"((?:[^\"\\\\]|\\\\.)*)\"");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), matcher);
       it != std::sregex_iterator(); ++it) {
    const std::string label = (*it)[1];
    const std::string op = (*it)[2];
    const std::string value = Unescape((*it)[3]);
    const std::set<std::string>& allowed = values.at(label);
    if (op == "=~") {
      // Each alternative of a regex must be able to match something (a typo in one of
      // "UNKNOWN|INTERNAL|..." would silently match nothing).
      for (const std::string& alternative : std::vector<std::string>(absl::StrSplit(value, '|'))) {
        bool plain = std::all_of(alternative.begin(), alternative.end(),
                                 [](char c) { return absl::ascii_isalnum(c) || c == '_'; });
        if (!plain) {
          const std::regex pattern(value);
          bool any = false;
          for (const std::string& candidate : allowed) {
            any = any || std::regex_match(candidate, pattern);
          }
          if (!any) impossible.push_back(label + "=~\"" + value + "\" matches nothing");
          break;
        }
        if (allowed.count(alternative) == 0) {
          impossible.push_back(label + "=~ alternative \"" + alternative + "\" is never written");
        }
      }
    } else if (allowed.count(value) == 0) {
      impossible.push_back(label + op + "\"" + value + "\" is never written");
    }
  }
  return impossible;
}

std::vector<std::string> AlertNames(const std::string& rules) {
  std::vector<std::string> names;
  const std::regex alert("- alert: *([A-Za-z0-9]+)");
  for (auto it = std::sregex_iterator(rules.begin(), rules.end(), alert);
       it != std::sregex_iterator(); ++it) {
    names.push_back((*it)[1]);
  }
  return names;
}

struct DashboardQuery {
  std::string panel;
  std::string expr;
};

std::vector<DashboardQuery> DashboardQueries(const google::protobuf::Struct& dashboard) {
  std::vector<DashboardQuery> queries;
  for (const auto& panel : dashboard.fields().at("panels").list_value().values()) {
    const auto& fields = panel.struct_value().fields();
    if (fields.at("type").string_value() == "row") continue;
    const std::string title = fields.at("title").string_value();
    for (const auto& target : fields.at("targets").list_value().values()) {
      queries.push_back({title, target.struct_value().fields().at("expr").string_value()});
    }
  }
  return queries;
}

google::protobuf::Struct ParseDashboard() {
  google::protobuf::Struct dashboard;
  const auto status = google::protobuf::util::JsonStringToMessage(
      ReadFile("deploy/grafana/dcl-golden-signals.json"), &dashboard);
  INFO(status.ToString());
  REQUIRE(status.ok());
  return dashboard;
}

TEST_CASE("every metric the alerts, their tests and the dashboard name is exported, with "
          "label values the services write") {
  testing::TestDatabase db;
  const std::map<std::string, std::string> families = ExportedFamilies(db);
  // The families the rules are written against; if one disappears, the check below must not
  // pass vacuously.
  for (const char* expected : {"dcl_rpc_calls_total", "dcl_rpc_duration_seconds",
                               "dcl_db_pool_waiters", "dcl_sweeper_last_success_timestamp_seconds",
                               "dcl_watch_events_sent_total"}) {
    INFO(expected);
    CHECK(families.count(expected) == 1);
  }
  const std::string rules = ReadFile("deploy/prometheus/dcl-alerts.yml");
  const std::set<std::string> recorded = RecordedNames(rules);
  REQUIRE(!recorded.empty());

  std::vector<std::pair<std::string, std::string>> texts = {
      {"dcl-alerts.yml", rules},
      {"dcl-alerts.test.yml", ReadFile("deploy/prometheus/dcl-alerts.test.yml")},
  };
  for (const DashboardQuery& query : DashboardQueries(ParseDashboard())) {
    texts.push_back({"dashboard panel \"" + query.panel + "\"", query.expr});
  }
  std::vector<std::string> problems;
  size_t names_checked = 0;
  for (const auto& [where, text] : texts) {
    for (const std::string& name : MetricNamesIn(text)) {
      ++names_checked;
      const std::string why = Unknown(name, families, recorded);
      if (!why.empty()) problems.push_back(where + ": " + why);
    }
    for (const std::string& why : ImpossibleMatchers(text)) problems.push_back(where + ": " + why);
  }
  INFO("problems:\n" << absl::StrJoin(problems, "\n"));
  CHECK(problems.empty());
  CHECK(names_checked > 20);
}

TEST_CASE("the checks catch a misspelt metric and a label value no service writes") {
  const std::map<std::string, std::string> families = {{"dcl_rpc_calls_total", "counter"},
                                                       {"dcl_rpc_duration_seconds", "histogram"}};
  CHECK(Unknown("dcl_rpc_call_total", families, {}) != "");
  CHECK(Unknown("dcl_rpc_duration_seconds", families, {}) != "");
  CHECK(Unknown("dcl_rpc_duration_seconds_bucket", families, {}) == "");
  CHECK(Unknown("job:dcl_x:rate5m", families, {}) != "");
  CHECK(ImpossibleMatchers("dcl_rpc_calls_total{code=\"UNAVAILABLE\",reason=\"\"}").empty());
  CHECK(ImpossibleMatchers("x{code=~\"INTERNAL|UNAVAILIBLE\"}").size() == 1);
  CHECK(ImpossibleMatchers("x{reason=\"DB_DOWN\"}").size() == 1);
  CHECK(ImpossibleMatchers("x{rpc=~\"/dcl\\\\.v1\\\\.MoveService/.*\"}").empty());
  CHECK(ImpossibleMatchers("x{rpc=~\"/dcl\\\\.v1\\\\.MovesService/.*\"}").size() == 1);
  CHECK(ImpossibleMatchers("x{rpc=\"/dcl.v1.MoveService/Watch\"}").size() == 1);
}

TEST_CASE("every alert has a runbook section, and promtool tests make it fire and stay silent") {
  const std::string rules = ReadFile("deploy/prometheus/dcl-alerts.yml");
  const std::string tests = ReadFile("deploy/prometheus/dcl-alerts.test.yml");
  const std::string runbook = ReadFile("docs/day-two.md");
  const std::vector<std::string> alerts = AlertNames(rules);
  REQUIRE(alerts.size() >= 10);

  // Which alerts a test expects to fire, and which to stay silent: "alertname: X" followed by
  // "exp_alerts: []" (silent) or "exp_alerts:" and a list (fires).
  std::set<std::string> fired, silent;
  const std::regex expectation("alertname: *([A-Za-z0-9]+)\\s*\\n\\s*exp_alerts:( *\\[\\])?");
  for (auto it = std::sregex_iterator(tests.begin(), tests.end(), expectation);
       it != std::sregex_iterator(); ++it) {
    ((*it)[2].matched ? silent : fired).insert((*it)[1]);
  }
  for (const std::string& alert : alerts) {
    INFO(alert);
    CHECK(fired.count(alert) == 1);
    CHECK(silent.count(alert) == 1);
    const std::string anchor = absl::AsciiStrToLower(alert);
    // A Markdown heading of its own, whose anchor is the alert's name in lower case.
    CHECK(std::regex_search(runbook, std::regex("\\n#+ " + alert + "\\n")));
    CHECK(rules.find("runbook: docs/day-two.md#" + anchor + "\n") != std::string::npos);
  }
}

TEST_CASE("the dashboard shows the four golden signals of every service, in valid PromQL") {
  const std::vector<DashboardQuery> queries = DashboardQueries(ParseDashboard());
  const std::map<std::string, std::string> jobs = {{"ReservationService", "dcl-reservation"},
                                                   {"OccupancyService", "dcl-occupancy"},
                                                   {"MoveService", "dcl-moves"}};
  for (const auto& [service, job] : jobs) {
    for (const char* signal : {"Traffic", "Errors", "Latency", "Saturation"}) {
      const std::string title = service + " · " + signal;
      INFO(title);
      int found = 0;
      for (const DashboardQuery& query : queries) {
        if (query.panel != title) continue;
        ++found;
        // Each query of a service's panel is about that service (its RPCs or its job).
        CHECK((query.expr.find(service) != std::string::npos ||
               query.expr.find("job=\"" + job + "\"") != std::string::npos));
      }
      CHECK(found > 0);
    }
  }
  // Every query through promtool, as recording rules ($__rate_interval is Grafana's).
  const char* tmp = std::getenv("TEST_TMPDIR");
  REQUIRE(tmp != nullptr);
  const std::string path = std::string(tmp) + "/dashboard-queries.yml";
  {
    std::ofstream out(path);
    out << "groups:\n  - name: dashboard\n    rules:\n";
    int n = 0;
    for (const DashboardQuery& query : queries) {
      std::string expr = std::regex_replace(query.expr, std::regex("\\$__rate_interval"), "5m");
      REQUIRE(expr.find('\'') == std::string::npos);
      out << "      - record: dashboard:query" << n++ << "\n        expr: '" << expr << "'\n";
    }
  }
  const std::string command = "promtool check rules " + path + " > " + path + ".out 2>&1";
  const int status = std::system(command.c_str());
  std::ifstream out(path + ".out");
  std::stringstream text;
  text << out.rdbuf();
  INFO(text.str());
  CHECK(status == 0);
}

}  // namespace
}  // namespace dcl
