// seed_demo: loads the demo inventory of deploy/local/up (sites, racks, devices) through
// InventoryService, the way an operator's tool would, and writes the ids it got back as shell
// variables (DCL_DEMO_SITE_FRA1=..., DCL_DEMO_RACK_FRA1_A01=..., DCL_DEMO_DEVICE_DL_0001=...).
//
//   seed_demo --target 127.0.0.1:50052 --token $DCL_TOKEN_dc_operator \
//             --file deploy/local/demo.inventory --env_out .local/demo.env
//
// The description is one object per line (see demo.inventory); `#` starts a comment. Every call
// carries a request id derived from its line, so a run interrupted half-way is simply run again:
// what was done replays (within the ledger's retention), what was not is done now.
//
// Exit status: 0 done, 1 a call failed (the message says which line and why), 2 bad usage or an
// unreadable description.
#include <openssl/sha.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "dcl/v1/inventory.grpc.pb.h"

ABSL_FLAG(std::string, target, "127.0.0.1:50052", "host:port of the InventoryService");
ABSL_FLAG(std::string, token, "", "a dc-operator token (or DCL_TOKEN)");
ABSL_FLAG(std::string, file, "deploy/local/demo.inventory", "the inventory description");
ABSL_FLAG(std::string, env_out, "", "where to write the ids as shell variables ('' = stdout)");

namespace {

// A request id that is the same for the same line every time: SHA-256 of the line, shaped as a
// UUID (version 4 and variant bits set, so it reads like one).
std::string RequestIdFor(const std::string& line) {
  const std::string input = "dcl-demo-seed:" + line;
  unsigned char d[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(input.data()), input.size(), d);
  d[6] = (d[6] & 0x0f) | 0x40;
  d[8] = (d[8] & 0x3f) | 0x80;
  char out[37];
  std::snprintf(out, sizeof(out),
                "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", d[0], d[1],
                d[2], d[3], d[4], d[5], d[6], d[7], d[8], d[9], d[10], d[11], d[12], d[13], d[14],
                d[15]);
  return out;
}

// DCL_DEMO_<KIND>_<NAME>, the name upper-cased with every non-alphanumeric turned into '_'.
std::string VariableName(const std::string& kind, const std::string& name) {
  std::string out = "DCL_DEMO_" + kind + "_";
  for (char c : name) out += absl::ascii_isalnum(c) ? absl::ascii_toupper(c) : '_';
  return out;
}

struct Line {
  int number = 0;
  std::string text;
  std::vector<std::string> words;            // positional words
  std::map<std::string, std::string> options;  // key=value words
};

class Seeder {
 public:
  Seeder(std::shared_ptr<grpc::Channel> channel, std::string token)
      : stub_(dcl::v1::InventoryService::NewStub(channel)), token_(std::move(token)) {}

  // False after printing why.
  bool Apply(const Line& line) {
    const std::string& kind = line.words[0];
    if (kind == "site" && line.words.size() == 2) return Site(line);
    if (kind == "rack" && line.words.size() == 3) return Rack(line);
    if (kind == "device" && line.words.size() == 4) return Device(line);
    return Bad(line, "expected 'site NAME', 'rack SITE NAME key=value...' or "
                     "'device SITE VENDOR MODEL key=value...'");
  }

  const std::vector<std::pair<std::string, std::string>>& variables() const { return variables_; }

 private:
  std::unique_ptr<grpc::ClientContext> Context() {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->AddMetadata("authorization", "Bearer " + token_);
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return ctx;
  }

  bool Bad(const Line& line, const std::string& why) {
    std::fprintf(stderr, "seed_demo: line %d: %s\n  %s\n", line.number, why.c_str(),
                 line.text.c_str());
    return false;
  }

  bool Failed(const Line& line, const grpc::Status& status) {
    return Bad(line, absl::StrCat("the call failed: ", status.error_message(), " (code ",
                                  static_cast<int>(status.error_code()), ")"));
  }

  bool Int(const Line& line, const std::string& key, int* out, bool required) {
    auto it = line.options.find(key);
    if (it == line.options.end()) return !required || Bad(line, key + "= is required");
    if (!absl::SimpleAtoi(it->second, out)) return Bad(line, key + "= is not a number");
    return true;
  }

  std::string Option(const Line& line, const std::string& key) {
    auto it = line.options.find(key);
    return it == line.options.end() ? "" : it->second;
  }

  bool SiteId(const Line& line, const std::string& name, std::string* id) {
    auto it = sites_.find(name);
    if (it == sites_.end()) return Bad(line, "site " + name + " is not declared above");
    *id = it->second;
    return true;
  }

  bool Site(const Line& line) {
    dcl::v1::CreateSiteRequest req;
    req.set_request_id(RequestIdFor(line.text));
    req.set_name(line.words[1]);
    dcl::v1::Site site;
    grpc::Status status = stub_->CreateSite(Context().get(), req, &site);
    if (!status.ok()) return Failed(line, status);
    sites_[site.name()] = site.id();
    variables_.emplace_back(VariableName("SITE", site.name()), site.id());
    return true;
  }

  bool Rack(const Line& line) {
    dcl::v1::CreateRackRequest req;
    req.set_request_id(RequestIdFor(line.text));
    if (!SiteId(line, line.words[1], req.mutable_site_id())) return false;
    req.set_name(line.words[2]);
    int first = 0, units = 0, power = 0, weight = 0;
    if (!Int(line, "first", &first, true) || !Int(line, "units", &units, true) ||
        !Int(line, "power", &power, false) || !Int(line, "weight", &weight, false)) {
      return false;
    }
    dcl::v1::RackGeometry* g = req.mutable_geometry();
    g->set_first_unit(first);
    g->set_unit_count(units);
    const std::string numbering = Option(line, "numbering");
    if (numbering != "ascending" && numbering != "descending") {
      return Bad(line, "numbering= must be ascending or descending");
    }
    g->set_numbering(numbering == "ascending" ? dcl::v1::NUMBERING_ASCENDING
                                              : dcl::v1::NUMBERING_DESCENDING);
    const std::string rear = Option(line, "rear");
    if (rear != "yes" && rear != "no") return Bad(line, "rear= must be yes or no");
    g->set_has_rear(rear == "yes");
    req.set_power_budget_watts(power);
    req.set_weight_budget_kg(weight);
    dcl::v1::RackRecord rack;
    grpc::Status status = stub_->CreateRack(Context().get(), req, &rack);
    if (!status.ok()) return Failed(line, status);
    variables_.emplace_back(VariableName("RACK", rack.name()), rack.id());
    return true;
  }

  bool Device(const Line& line) {
    dcl::v1::RegisterDeviceRequest req;
    req.set_request_id(RequestIdFor(line.text));
    if (!SiteId(line, line.words[1], req.mutable_site_id())) return false;
    req.set_vendor(line.words[2]);
    req.set_model(line.words[3]);
    req.set_hardware_profile(Option(line, "profile"));
    req.set_serial(Option(line, "serial"));
    int height = 0;
    if (!Int(line, "height", &height, true)) return false;
    req.set_height_units(height);
    const std::string depth = Option(line, "depth");
    if (depth == "full") {
      req.set_depth_class(dcl::v1::DEPTH_FULL);
    } else if (depth == "half") {
      req.set_depth_class(dcl::v1::DEPTH_HALF);
    } else if (depth == "unknown" || depth.empty()) {
      req.set_depth_class(dcl::v1::DEPTH_UNKNOWN);
    } else {
      return Bad(line, "depth= must be full, half or unknown");
    }
    const std::string state = Option(line, "state");
    if (state == "normal") {
      req.set_initial_state(dcl::v1::PROCESS_NORMAL);
    } else if (state == "staging" || state.empty()) {
      req.set_initial_state(dcl::v1::PROCESS_STAGING);
    } else {
      return Bad(line, "state= must be normal or staging");
    }
    int power = 0, weight = 0;
    if (line.options.count("power")) {
      if (!Int(line, "power", &power, true)) return false;
      req.set_power_draw_watts(power);
    }
    if (line.options.count("weight")) {
      if (!Int(line, "weight", &weight, true)) return false;
      req.set_weight_kg(weight);
    }
    dcl::v1::Device device;
    grpc::Status status = stub_->RegisterDevice(Context().get(), req, &device);
    if (!status.ok()) return Failed(line, status);
    variables_.emplace_back(
        VariableName("DEVICE", device.serial().empty() ? device.id() : device.serial()),
        device.id());
    return true;
  }

  std::unique_ptr<dcl::v1::InventoryService::Stub> stub_;
  const std::string token_;
  std::map<std::string, std::string> sites_;  // name → id
  std::vector<std::pair<std::string, std::string>> variables_;
};

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  std::string token = absl::GetFlag(FLAGS_token);
  if (token.empty() && std::getenv("DCL_TOKEN") != nullptr) token = std::getenv("DCL_TOKEN");
  if (token.empty()) {
    std::fprintf(stderr, "seed_demo: --token (or DCL_TOKEN) is required: a dc-operator token\n");
    return 2;
  }
  std::ifstream in(absl::GetFlag(FLAGS_file));
  if (!in) {
    std::fprintf(stderr, "seed_demo: cannot read %s\n", absl::GetFlag(FLAGS_file).c_str());
    return 2;
  }
  std::vector<Line> lines;
  std::string text;
  for (int number = 1; std::getline(in, text); ++number) {
    const std::string content(absl::StripAsciiWhitespace(text.substr(0, text.find('#'))));
    if (content.empty()) continue;
    Line line;
    line.number = number;
    line.text = content;
    for (absl::string_view word : absl::StrSplit(content, ' ', absl::SkipWhitespace())) {
      const size_t eq = word.find('=');
      if (eq == absl::string_view::npos) {
        line.words.emplace_back(word);
      } else {
        line.options[std::string(word.substr(0, eq))] = std::string(word.substr(eq + 1));
      }
    }
    lines.push_back(std::move(line));
  }

  Seeder seeder(grpc::CreateChannel(absl::GetFlag(FLAGS_target),
                                    grpc::InsecureChannelCredentials()),
                token);
  for (const Line& line : lines) {
    if (!seeder.Apply(line)) return 1;
  }
  std::ostringstream env;
  for (const auto& [name, id] : seeder.variables()) env << name << "=" << id << "\n";
  const std::string out = absl::GetFlag(FLAGS_env_out);
  if (out.empty()) {
    std::fputs(env.str().c_str(), stdout);
  } else {
    std::ofstream file(out, std::ios::trunc);
    file << env.str();
    if (!file) {
      std::fprintf(stderr, "seed_demo: cannot write %s\n", out.c_str());
      return 1;
    }
  }
  std::fprintf(stderr, "seed_demo: %zu objects created or replayed\n", seeder.variables().size());
  return 0;
}
