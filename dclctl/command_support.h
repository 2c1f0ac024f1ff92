// What every dclctl command group shares: the invocation a command runs with, the command
// table's entry (Command), reading flags, calling a service (Unary, Write, CollectPages) and
// printing its answer or its refusal. Each group (rack_commands.cc, booking_commands.cc,
// device_commands.cc, move_commands.cc, reservation_commands.cc, import_commands.cc) exposes
// its commands through command_groups.h; commands.cc puts them into one table.
#ifndef DCL_DCLCTL_COMMAND_SUPPORT_H_
#define DCL_DCLCTL_COMMAND_SUPPORT_H_

#include <fcntl.h>
#include <google/protobuf/struct.pb.h>
#include <grpcpp/grpcpp.h>
#include <openssl/rand.h>
#include <signal.h>
#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>
#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "dcl/v1/inventory.grpc.pb.h"
#include "dcl/v1/moves.grpc.pb.h"
#include "dcl/v1/occupancy.grpc.pb.h"
#include "dcl/v1/reservation.grpc.pb.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "dclctl/format/cli_format.h"
#include "dclctl/command_flags.h"
#include "dclctl/grpc_client.h"
#include "dclctl/netbox/netbox_mapping.h"
#include "dclctl/format/rack_elevation.h"
#include "dclctl/format/text_table.h"
#include "services/common/grpc_status.h"

namespace dcl::admin {

// The sections of `dclctl --help`, in order.
enum class Section { kRacks, kInventory, kMoves, kReservations, kServers, kDatabase };

// A mistake on the command line: printed with the command's usage, exit status 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Invocation {
  std::string name;               // "move advance"
  std::vector<std::string> args;  // positional arguments after the command's words
  ClientOptions client;
  bool json = false;
};

inline void PrintLines(const std::vector<std::string>& lines) {
  for (const std::string& line : lines) std::printf("%s\n", line.c_str());
}

// --- Reading flags -------------------------------------------------------------------------

inline std::string Required(const absl::Flag<std::string>& flag, const char* name) {
  std::string value = absl::GetFlag(flag);
  if (value.empty()) throw UsageError(absl::StrCat("--", name, " is required"));
  return value;
}

inline int RequiredInt(const absl::Flag<std::string>& flag, const char* name) {
  const std::string text = Required(flag, name);
  int value = 0;
  if (!absl::SimpleAtoi(text, &value)) {
    throw UsageError(absl::StrCat("--", name, " must be a whole number, not \"", text, "\""));
  }
  return value;
}

inline v1::Side RequiredSide() {
  v1::Side side;
  const std::string text = Required(FLAGS_side, "side");
  if (!ParseSide(text, &side))
    throw UsageError("--side must be front or rear, not \"" + text + "\"");
  return side;
}

// --side or --both_sides, for ranges.
inline v1::Side SideOrBoth() {
  if (absl::GetFlag(FLAGS_both_sides)) {
    if (!absl::GetFlag(FLAGS_side).empty())
      throw UsageError("--side and --both_sides exclude each other");
    return v1::SIDE_UNSPECIFIED;
  }
  if (absl::GetFlag(FLAGS_side).empty()) throw UsageError("--side or --both_sides is required");
  return RequiredSide();
}

inline v1::MoveState OptionalMoveState() {
  v1::MoveState state = v1::MOVE_STATE_UNSPECIFIED;
  const std::string text = absl::GetFlag(FLAGS_state);
  if (!text.empty() && !ParseMoveState(text, &state)) {
    throw UsageError("--state: unknown move state \"" + text + "\"");
  }
  return state;
}

// --- Calling -------------------------------------------------------------------------------

// The failure of a call on stderr (readable, or JSON under --json); returns its exit status.
inline int ReportFailure(const Invocation& inv, const grpc::Status& status) {
  if (inv.json) {
    std::fprintf(stderr, "%s\n", ErrorJson(status).c_str());
  } else {
    for (const std::string& line : DescribeError(status)) {
      std::fprintf(stderr, "dclctl %s: %s\n", inv.name.c_str(), line.c_str());
    }
  }
  return ExitCodeFor(status.error_code());
}

template <typename Grpc>
std::unique_ptr<typename Grpc::Stub> StubFor(const Invocation& inv, Service service) {
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
      MakeChannel(inv.client, inv.client.For(service).target);
  if (!channel.ok()) throw UsageError(std::string(channel.status().message()));
  return Grpc::NewStub(*channel);
}

// One unary call: `call(context, response)` against the service; on success prints the answer
// (JSON, or `text(response)`), on failure the refusal. Returns the exit status.
template <typename Response>
int Unary(const Invocation& inv, Service service,
          const std::function<grpc::Status(grpc::ClientContext*, Response*)>& call,
          const std::function<std::vector<std::string>(const Response&)>& text) {
  Response response;
  std::unique_ptr<grpc::ClientContext> context = MakeContext(inv.client, service);
  const grpc::Status status = call(context.get(), &response);
  if (!status.ok()) return ReportFailure(inv, status);
  if (inv.json) {
    std::printf("%s\n", ToJson(response).c_str());
  } else {
    PrintLines(text(response));
  }
  return kExitOk;
}

// A request id for a write: `--request_id` as given when it is already a UUID, else derived
// from its text (so any words an operator chooses replay when typed again); without the flag
// a fresh random UUID, which only protects gRPC's own retries of this one call.
inline std::string WriteRequestId() {
  const std::string given = absl::GetFlag(FLAGS_request_id);
  if (!given.empty()) {
    return given.size() == 36 && given[8] == '-' && given[13] == '-'
               ? given
               : netbox::DerivedRequestId("dclctl --request_id " + given);
  }
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof bytes) != 1) throw std::runtime_error("no random bytes");
  bytes[6] = static_cast<unsigned char>((bytes[6] & 0x0f) | 0x40);
  bytes[8] = static_cast<unsigned char>((bytes[8] & 0x3f) | 0x80);
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out.push_back('-');
    out.push_back(kHex[bytes[i] >> 4]);
    out.push_back(kHex[bytes[i] & 0x0f]);
  }
  return out;
}

inline bool Replayed(const grpc::ClientContext& context) {
  const auto& headers = context.GetServerInitialMetadata();
  auto it = headers.find("dcl-replay");
  return it != headers.end() && std::string(it->second.data(), it->second.size()) == "true";
}

// One write: like Unary, and says "(replayed)" when the server answered from its request
// ledger (on stderr under --json, so that stdout stays one JSON document).
template <typename Response>
int Write(const Invocation& inv,
          const std::function<grpc::Status(grpc::ClientContext*, Response*)>& call,
          const std::function<std::vector<std::string>(const Response&)>& text) {
  Response response;
  std::unique_ptr<grpc::ClientContext> context = MakeContext(inv.client, Service::kOccupancy);
  const grpc::Status status = call(context.get(), &response);
  if (!status.ok()) return ReportFailure(inv, status);
  const bool replayed = Replayed(*context);
  if (inv.json) {
    std::printf("%s\n", ToJson(response).c_str());
    if (replayed) std::fprintf(stderr, "(replayed)\n");
  } else {
    PrintLines(text(response));
    if (replayed) std::printf("(replayed)\n");
  }
  return kExitOk;
}

inline std::unique_ptr<v1::InventoryService::Stub> InventoryStub(const Invocation& inv) {
  return StubFor<v1::InventoryService>(inv, Service::kOccupancy);
}

inline std::optional<int> OptionalInt(const absl::Flag<std::string>& flag, const char* name) {
  if (absl::GetFlag(flag).empty()) return std::nullopt;
  return RequiredInt(flag, name);
}

inline v1::ProcessState StateFlag(bool required) {
  const std::string text = absl::GetFlag(FLAGS_state);
  if (text.empty()) {
    if (required) throw UsageError("--state is required (normal or staging)");
    return v1::PROCESS_STATE_UNSPECIFIED;
  }
  v1::ProcessState state;
  if (!ParseProcessState(text, &state)) {
    throw UsageError("--state: unknown device state \"" + text + "\"");
  }
  return state;
}


// Pages through a list until --limit rows or the end; `page(token, size, response)` fetches one
// page. The answer keeps the last page's next_page_token (--page_token continues from it).
template <typename Response>
grpc::Status CollectPages(const Invocation& inv, Service service, Response* all,
                          const std::function<void(Response&, const Response&)>& append,
                          const std::function<int(const Response&)>& count,
                          const std::function<grpc::Status(grpc::ClientContext*, const std::string&,
                                                           int, Response*)>& page) {
  const int limit = std::max(1, absl::GetFlag(FLAGS_limit));
  std::string token = absl::GetFlag(FLAGS_page_token);
  while (true) {
    Response one;
    auto context = MakeContext(inv.client, service);
    const grpc::Status status =
        page(context.get(), token, std::min(500, limit - count(*all)), &one);
    if (!status.ok()) return status;
    append(*all, one);
    all->set_next_page_token(one.next_page_token());
    token = one.next_page_token();
    if (token.empty() || count(*all) >= limit) return grpc::Status::OK;
  }
}

template <typename Response>
int PrintList(const Invocation& inv, const grpc::Status& status, const Response& all,
              const std::function<std::vector<std::string>(const Response&)>& table) {
  if (!status.ok()) return ReportFailure(inv, status);
  if (inv.json) {
    std::printf("%s\n", ToJson(all).c_str());
    return kExitOk;
  }
  PrintLines(table(all));
  if (!all.next_page_token().empty()) {
    std::fprintf(stderr, "(more rows: raise --limit, or continue with --page_token=%s)\n",
                 all.next_page_token().c_str());
  }
  return kExitOk;
}


// Labels for the devices of a rack's elevation, from the inventory of its site. Best effort:
// without an answer (an older server, a token that may not read devices) the elevation keeps
// the short ids.
inline DeviceLabels LabelsFor(const Invocation& inv, const v1::Rack& rack) {
  DeviceLabels labels;
  std::set<std::string> wanted;
  for (const v1::ElevationSlot& s : rack.occupied()) {
    if (!s.device_id().empty()) wanted.insert(s.device_id());
  }
  if (wanted.empty()) return labels;
  auto stub = InventoryStub(inv);
  for (const std::string& id : wanted) {
    v1::GetDeviceRequest req;
    req.set_device_id(id);
    v1::Device device;
    auto context = MakeContext(inv.client, Service::kOccupancy);
    if (!stub->GetDevice(context.get(), req, &device).ok()) return {};
    const std::string label = DeviceLabel(device);
    if (!label.empty()) labels[id] = label;
  }
  return labels;
}

struct Command {
  std::vector<std::string> words;
  std::string usage;  // arguments and flags
  std::string help;
  size_t min_args, max_args;  // positional arguments after the words
  Section section;
  std::function<int(Invocation&)> run;
};

}  // namespace dcl::admin

#endif  // DCL_DCLCTL_COMMAND_SUPPORT_H_
