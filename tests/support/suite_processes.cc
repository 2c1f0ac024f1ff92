#include "tests/support/suite_processes.h"

#include <signal.h>

#include <regex>
#include <stdexcept>

#include "absl/strings/str_cat.h"
#include "grpc/health/v1/health.grpc.pb.h"

namespace dcl::testing {

int WaitForServingPort(ChildProcess& process, std::chrono::milliseconds timeout) {
  int port = 0;
  WaitUntil(
      [&] {
        std::smatch match;
        const std::string log = process.Log();
        if (std::regex_search(log, match, std::regex("serving on port ([0-9]+)"))) {
          port = std::stoi(match[1]);
          return true;
        }
        return !process.Running();
      },
      timeout);
  return port;
}

std::shared_ptr<grpc::Channel> LocalChannel(int port, int distinct) {
  grpc::ChannelArguments args;
  args.SetInt("dcl.test.channel", distinct);
  args.SetMaxReceiveMessageSize(64 * 1024 * 1024);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 50);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 50);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 250);
  return grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", port),
                                   grpc::InsecureChannelCredentials(), args);
}

bool IsServing(int port, std::chrono::milliseconds timeout) {
  auto stub = grpc::health::v1::Health::NewStub(LocalChannel(port, -1));
  grpc::ClientContext context;
  context.set_wait_for_ready(true);
  context.set_deadline(std::chrono::system_clock::now() + timeout);
  grpc::health::v1::HealthCheckResponse response;
  const grpc::Status status =
      stub->Check(&context, grpc::health::v1::HealthCheckRequest(), &response);
  return status.ok() && response.status() == grpc::health::v1::HealthCheckResponse::SERVING;
}

namespace {

constexpr auto kStartTimeout = std::chrono::seconds(60);

struct ServerBinary {
  SuiteService service;
  const char* prefix;
  const char* path;
};

constexpr ServerBinary kServers[] = {
    {SuiteService::kReservation, "reservation", "services/reservation/reservation_server"},
    {SuiteService::kOccupancy, "occupancy", "services/occupancy/occupancy_server"},
    {SuiteService::kMoves, "moves", "services/moves/moves_server"},
};

// The binary at workspace `path` ("services/moves/moves_server"), or the file of the same
// name in `binary_dir` when one is given.
std::string BinaryIn(const std::string& binary_dir, const std::string& path) {
  if (binary_dir.empty()) return path;
  return binary_dir + "/" + path.substr(path.rfind('/') + 1);
}

}  // namespace

SuiteProcesses::SuiteProcesses(SuiteOptions options) : options_(std::move(options)) {
  std::vector<std::string> common = {"--database_url=" + options_.database_url};
  if (options_.transaction_pooler) common.push_back("--database_pooler=transaction");
  for (const ServerBinary& server : kServers) {
    for (int i = 0; i < options_.replicas; ++i) {
      Member member;
      member.binary = BinaryIn(options_.binary_dir, server.path);
      member.server = true;
      member.args = common;
      member.args.push_back("--listen=127.0.0.1:0");
      if (server.service == SuiteService::kMoves && !options_.watch_database_url.empty()) {
        member.args.push_back("--watch_database_url=" + options_.watch_database_url);
      }
      member.args.insert(member.args.end(), options_.server_flags.begin(),
                         options_.server_flags.end());
      const std::string name = absl::StrCat(server.prefix, "-", i);
      order_.push_back(name);
      members_[name] = std::move(member);
    }
  }
  for (int i = 0; i < options_.sweepers; ++i) {
    Member member;
    member.binary = BinaryIn(options_.binary_dir, "sweeper/sweeper");
    member.args = common;
    member.args.push_back(absl::StrCat("--sweeper_name=sweeper-", i));
    member.args.insert(member.args.end(), options_.sweeper_flags.begin(),
                       options_.sweeper_flags.end());
    const std::string name = absl::StrCat("sweeper-", i);
    order_.push_back(name);
    members_[name] = std::move(member);
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (const std::string& name : order_) StartMember(name, members_.at(name));
}

SuiteProcesses::~SuiteProcesses() = default;  // each ChildProcess SIGKILLs itself

void SuiteProcesses::StartMember(const std::string& name, Member& member) {
  if (member.process != nullptr) absl::StrAppend(&member.earlier_logs, member.process->Log());
  member.process = std::make_unique<ChildProcess>(RunfilesBinary(member.binary), member.args);
  member.stopped = false;
  if (!member.server) return;
  const int port = WaitForServingPort(*member.process, kStartTimeout);
  if (port == 0 || !IsServing(port, kStartTimeout)) {
    throw std::runtime_error(absl::StrCat(name, " did not start:\n", member.process->Log()));
  }
  if (member.port == 0) {
    // From now on the server comes back on the same port, so that clients find it again.
    member.port = port;
    for (std::string& arg : member.args) {
      if (arg == "--listen=127.0.0.1:0") arg = absl::StrCat("--listen=127.0.0.1:", port);
    }
  }
}

SuiteProcesses::Member& SuiteProcesses::Find(const std::string& name) {
  auto it = members_.find(name);
  if (it == members_.end()) throw std::runtime_error("no process named " + name);
  return it->second;
}

const SuiteProcesses::Member& SuiteProcesses::Find(const std::string& name) const {
  auto it = members_.find(name);
  if (it == members_.end()) throw std::runtime_error("no process named " + name);
  return it->second;
}

std::vector<std::string> SuiteProcesses::Names() const { return order_; }

std::vector<std::string> SuiteProcesses::ReplicasOf(SuiteService service) const {
  std::vector<std::string> names;
  for (const ServerBinary& server : kServers) {
    if (server.service != service) continue;
    for (int i = 0; i < options_.replicas; ++i) {
      names.push_back(absl::StrCat(server.prefix, "-", i));
    }
  }
  return names;
}

// Ports are fixed once the constructor returns (a restart reuses them), so no lock is needed.
int SuiteProcesses::Port(const std::string& name) const { return Find(name).port; }

void SuiteProcesses::Kill(const std::string& name, int signal_number) {
  std::lock_guard<std::mutex> lock(mu_);
  Member& member = Find(name);
  member.stopped = true;
  member.process->Signal(signal_number);
  if (signal_number == SIGKILL || signal_number == SIGTERM) {
    WaitUntil([&] { return !member.process->Running(); }, std::chrono::seconds(60));
  }
}

void SuiteProcesses::Signal(const std::string& name, int signal_number) {
  std::lock_guard<std::mutex> lock(mu_);
  Find(name).process->Signal(signal_number);
}

void SuiteProcesses::Restart(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  Member& member = Find(name);
  if (member.process->Running()) throw std::runtime_error(name + " still runs: kill it first");
  StartMember(name, member);
}

void SuiteProcesses::RestartWith(const std::string& name, const std::string& binary_dir) {
  std::lock_guard<std::mutex> lock(mu_);
  Member& member = Find(name);
  if (member.process->Running()) throw std::runtime_error(name + " still runs: kill it first");
  for (const ServerBinary& server : kServers) {
    if (name.rfind(std::string(server.prefix) + "-", 0) == 0) {
      member.binary = BinaryIn(binary_dir, server.path);
    }
  }
  if (name.rfind("sweeper-", 0) == 0) member.binary = BinaryIn(binary_dir, "sweeper/sweeper");
  StartMember(name, member);
}

bool SuiteProcesses::Running(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  return Find(name).process->Running();
}

std::string SuiteProcesses::Log(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  const Member& member = Find(name);
  return member.earlier_logs + member.process->Log();
}

std::vector<std::string> SuiteProcesses::UnexpectedExits() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> exits;
  for (const std::string& name : order_) {
    Member& member = members_.at(name);
    if (member.stopped || member.process->Running()) continue;
    const auto signal_number = member.process->TerminatingSignal();
    const auto status = member.process->WaitForExit(std::chrono::milliseconds(0));
    exits.push_back(signal_number
                        ? absl::StrCat(name, " killed by signal ", *signal_number)
                        : absl::StrCat(name, " exited with status ", status ? *status : -1));
  }
  return exits;
}

}  // namespace dcl::testing
