#include "dclctl/commands.h"

#include <algorithm>
#include <cctype>

#include "dclctl/command_groups.h"
#include "dclctl/command_support.h"
#include "dclctl/db_commands.h"

namespace dcl::admin {
namespace {

// --- Servers -------------------------------------------------------------------------------

// grpc.health.v1 of one server, for scripts that wait for a server to come up: exit 0 only
// when SERVING.
int HealthCheck(Invocation& inv) {
  std::string target = absl::GetFlag(FLAGS_target);
  if (target.empty() && std::getenv("DCL_TARGET") != nullptr) target = std::getenv("DCL_TARGET");
  if (target.empty()) throw UsageError("--target (or DCL_TARGET) is required");
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel = MakeChannel(inv.client, target);
  if (!channel.ok()) throw UsageError(std::string(channel.status().message()));
  auto stub = grpc::health::v1::Health::NewStub(*channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(absl::GetFlag(FLAGS_service));
  grpc::health::v1::HealthCheckResponse response;
  const grpc::Status status = stub->Check(&context, request, &response);
  if (!status.ok()) return ReportFailure(inv, status);
  std::printf("%s\n",
              grpc::health::v1::HealthCheckResponse::ServingStatus_Name(response.status()).c_str());
  return response.status() == grpc::health::v1::HealthCheckResponse::SERVING ? kExitOk : kExitOther;
}

// --- The table -----------------------------------------------------------------------------

int Database(Invocation& inv) {
  const size_t space = inv.name.find(' ');
  return RunDatabaseCommand(inv.name.substr(0, space), inv.name.substr(space + 1));
}

std::vector<Command> ServerCommands() {
  return {
      {{"health", "check"},
       "--target HOST:PORT [--service NAME]",
       "exit 0 only when the server answers SERVING",
       0,
       0,
       Section::kServers,
       HealthCheck},
  };
}

std::vector<Command> DatabaseCommands() {
  return {
      {{"token", "create"},
       "--org ORG --role ROLE [--subject S] [--label L]",
       "a new API token, printed once (stored hashed)",
       0,
       0,
       Section::kDatabase,
       Database},
      {{"token", "revoke"},
       "--id TOKEN_ID",
       "effective on the next call",
       0,
       0,
       Section::kDatabase,
       Database},
      {{"module", "enable"},
       "[--org ORG]",
       "the datacenter module: without --org the global switch",
       0,
       0,
       Section::kDatabase,
       Database},
      {{"module", "disable"}, "[--org ORG]", "", 0, 0, Section::kDatabase, Database},
      {{"org", "create"}, "--name NAME", "a new organization", 0, 0, Section::kDatabase, Database},
  };
}

const std::vector<Command>& Commands() {
  // In the order of `dclctl --help` within each section.
  static const std::vector<Command> commands = [] {
    std::vector<Command> all;
    for (std::vector<Command> group :
         {RackCommands(), BookingCommands(), DeliveryCommands(), DeviceCommands(),
          ImportCommands(), MoveCommands(), ReservationCommands(), ServerCommands(),
          DatabaseCommands()}) {
      all.insert(all.end(), group.begin(), group.end());
    }
    return all;
  }();
  return commands;
}

const char* SectionTitle(Section section) {
  switch (section) {
    case Section::kRacks:
      return "Racks and bookings (OccupancyService, a dc-operator token)";
    case Section::kInventory:
      return "Inventory (InventoryService on the occupancy server, a dc-operator token)";
    case Section::kMoves:
      return "Moves (MoveService, a dc-operator token)";
    case Section::kReservations:
      return "Reservations (ReservationService, a commerce token)";
    case Section::kServers:
      return "Servers";
    case Section::kDatabase:
      return "Administration, straight on the database (--database_url or DCL_DATABASE_URL)";
  }
  return "";
}

std::string CommandLine(const Command& c) {
  return absl::StrJoin(c.words, " ") + (c.usage.empty() ? "" : " " + c.usage);
}

// The flags defined by dclctl's own files, with their help and defaults.
std::string FlagsHelp() {
  std::vector<const absl::CommandLineFlag*> flags;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (absl::StrContains(flag->Filename(), "dclctl/") || name == "database_url") {
      flags.push_back(flag);
    }
  }
  std::sort(flags.begin(), flags.end(),
            [](const auto* a, const auto* b) { return a->Name() < b->Name(); });
  std::string text;
  for (const absl::CommandLineFlag* flag : flags) {
    absl::StrAppend(&text, "  --", flag->Name(), "  ", flag->Help());
    const std::string default_value = flag->DefaultValue();
    if (!default_value.empty() && default_value != "false") {
      absl::StrAppend(&text, " (default ", default_value, ")");
    }
    absl::StrAppend(&text, "\n");
  }
  return text;
}

// The command whose words begin `positional`, or null.
const Command* FindCommand(const std::vector<std::string>& positional) {
  for (const Command& c : Commands()) {
    if (positional.size() >= c.words.size() &&
        std::equal(c.words.begin(), c.words.end(), positional.begin())) {
      return &c;
    }
  }
  return nullptr;
}

// dclctl's flags that no command's usage names: every command reads them (targets, tokens, TLS,
// output, deadline, the database of the administration commands).
std::vector<std::string> FlagsOfEveryCommand() {
  std::vector<std::string> names;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (!absl::StrContains(flag->Filename(), "dclctl/") && name != "database_url") {
      continue;
    }
    const std::string spelled = absl::StrCat("--", name);
    const bool named_by_a_command =
        std::any_of(Commands().begin(), Commands().end(), [&](const Command& c) {
          for (size_t at = c.usage.find(spelled); at != std::string::npos;
               at = c.usage.find(spelled, at + 1)) {
            const size_t end = at + spelled.size();
            if (end == c.usage.size() || !(std::isalnum(static_cast<unsigned char>(c.usage[end])) ||
                                           c.usage[end] == '_')) {
              return true;
            }
          }
          return false;
        });
    if (!named_by_a_command) names.push_back(spelled);
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

std::string CommandHelpText(const std::vector<std::string>& positional) {
  const Command* c = FindCommand(positional);
  if (c == nullptr) return "";
  std::string text = absl::StrCat("usage: dclctl ", CommandLine(*c), "\n");
  if (!c->help.empty()) absl::StrAppend(&text, "  ", c->help, "\n");
  absl::StrAppend(&text, "  (", SectionTitle(c->section), ")\n",
                  "\nFlags of every command (dclctl --help explains each):\n  ",
                  absl::StrJoin(FlagsOfEveryCommand(), " "), "\n");
  return text;
}

std::string HelpText() {
  std::string text =
      "dclctl: the DC team's command line for dcl.\n"
      "Usage: dclctl COMMAND [ARGS] [FLAGS]\n";
  for (Section section : {Section::kRacks, Section::kInventory, Section::kMoves,
                          Section::kReservations, Section::kServers, Section::kDatabase}) {
    absl::StrAppend(&text, "\n", SectionTitle(section), ":\n");
    for (const Command& c : Commands()) {
      if (c.section != section) continue;
      absl::StrAppend(&text, "  dclctl ", CommandLine(c), "\n");
      if (!c.help.empty()) absl::StrAppend(&text, "      ", c.help, "\n");
    }
  }
  absl::StrAppend(
      &text,
      "\nTargets and tokens: --target (or DCL_TARGET) for every service, and its token in\n"
      "DCL_TOKEN or a file named by --dcl_token_file (never on the command line: ps shows it);\n"
      "per service --reservation_target, --occupancy_target, --moves_target and the\n"
      "*_token_file flags (or DCL_RESERVATION_TARGET, DCL_OCCUPANCY_TOKEN …) win over them.\n"
      "Flags win over the environment.\n"
      "Defaults: 127.0.0.1:50051 reservation, :50052 occupancy, :50053 moves.\n"
      "TLS: --tls_ca (and --tls_client_cert/--tls_client_key for mutual TLS).\n"
      "\nOutput: tables for people; --json prints protobuf's JSON (a watch: one object per line),\n"
      "and a failure as a google.rpc.Status on stderr.\n"
      "\nExit status: 0 done; 1 other failure; 2 bad flags or input (INVALID_ARGUMENT);\n"
      "3 not found; 4 refused by a rule (FAILED_PRECONDITION, RESOURCE_EXHAUSTED; a plan that\n"
      "would be refused); 5 lost a race, retry now (ABORTED); 6 unavailable or deadline, retry\n"
      "later; 7 not authenticated or not allowed; 8 import netbox: NetBox and dcl disagree\n"
      "(drift; nothing refused); 130 a watch stopped by Ctrl-C.\n"
      "\nFlags (a dash in a name is an underscore: --dry-run is --dry_run):\n",
      FlagsHelp());
  return text;
}

int RunCommand(const std::vector<std::string>& positional) {
  const Command* match = FindCommand(positional);
  if (match == nullptr) {
    std::fprintf(stderr, "dclctl: unknown command \"%s\"; dclctl --help lists the commands\n",
                 absl::StrJoin(positional, " ").c_str());
    return kExitUsage;
  }
  Invocation inv;
  inv.name = absl::StrJoin(match->words, " ");
  inv.args.assign(positional.begin() + static_cast<long>(match->words.size()), positional.end());
  inv.json = absl::GetFlag(FLAGS_json);
  ClientFlags flags;
  flags.target = absl::GetFlag(FLAGS_target);
  flags.reservation_target = absl::GetFlag(FLAGS_reservation_target);
  flags.occupancy_target = absl::GetFlag(FLAGS_occupancy_target);
  flags.moves_target = absl::GetFlag(FLAGS_moves_target);
  // A token given as an argument has already been shown to every user of the machine (ps,
  // /proc/PID/cmdline): refused before anything is sent, so that no script keeps doing it.
  struct TokenSource {
    const char* refused_flag;
    std::string refused_value;
    const char* env;
    const char* file_flag;
    std::string file;
    std::string* token;
  };
  TokenSource sources[] = {
      {"--token", absl::GetFlag(FLAGS_token), "DCL_TOKEN", "--dcl_token_file",
       absl::GetFlag(FLAGS_dcl_token_file), &flags.token},
      {"--reservation_token", absl::GetFlag(FLAGS_reservation_token), "DCL_RESERVATION_TOKEN",
       "--reservation_token_file", absl::GetFlag(FLAGS_reservation_token_file),
       &flags.reservation_token},
      {"--occupancy_token", absl::GetFlag(FLAGS_occupancy_token), "DCL_OCCUPANCY_TOKEN",
       "--occupancy_token_file", absl::GetFlag(FLAGS_occupancy_token_file), &flags.occupancy_token},
      {"--moves_token", absl::GetFlag(FLAGS_moves_token), "DCL_MOVES_TOKEN", "--moves_token_file",
       absl::GetFlag(FLAGS_moves_token_file), &flags.moves_token},
  };
  for (const TokenSource& source : sources) {
    if (!source.refused_value.empty()) {
      std::fprintf(stderr,
                   "dclctl: %s is refused: a token on the command line is shown to every user of "
                   "this machine (ps). Set %s in the environment, or name a file holding it with "
                   "%s FILE\n",
                   source.refused_flag, source.env, source.file_flag);
      return kExitUsage;
    }
    if (source.file.empty()) continue;
    absl::StatusOr<std::string> token = ReadTokenFile(source.file_flag, source.file);
    if (!token.ok()) {
      std::fprintf(stderr, "dclctl: %s\n", std::string(token.status().message()).c_str());
      return kExitUsage;
    }
    *source.token = *std::move(token);
  }
  flags.tls_ca = absl::GetFlag(FLAGS_tls_ca);
  flags.tls_client_cert = absl::GetFlag(FLAGS_tls_client_cert);
  flags.tls_client_key = absl::GetFlag(FLAGS_tls_client_key);
  flags.deadline_seconds = std::max(1, absl::GetFlag(FLAGS_deadline_seconds));
  inv.client = ResolveClientOptions(flags, [](const char* name) { return std::getenv(name); });
  try {
    if (inv.args.size() < match->min_args || inv.args.size() > match->max_args) {
      throw UsageError(inv.args.size() < match->min_args ? "missing argument"
                                                         : "too many arguments");
    }
    return match->run(inv);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "dclctl %s: %s\nusage: dclctl %s\n", inv.name.c_str(), e.what(),
                 CommandLine(*match).c_str());
    return kExitUsage;
  }
}

bool CheckFlags(int argc, char** argv, std::string* error) {
  // absl's own flags, handled by absl itself.
  static const std::vector<std::string> kBuiltin = {
      "help",    "helpfull",        "helpshort", "helppackage", "helpon",     "helpmatch",
      "version", "only_check_args", "flagfile",  "fromenv",     "tryfromenv", "undefok"};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") break;
    if (arg.size() < 2 || arg[0] != '-') continue;
    std::string name = arg.substr(arg[1] == '-' ? 2 : 1);
    std::string value;
    const size_t eq = name.find('=');
    const bool has_value = eq != std::string::npos;
    if (has_value) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    if (std::find(kBuiltin.begin(), kBuiltin.end(), name) != kBuiltin.end()) continue;
    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    if (flag == nullptr && absl::StartsWith(name, "no")) {
      absl::CommandLineFlag* negated = absl::FindCommandLineFlag(name.substr(2));
      if (negated != nullptr && negated->IsOfType<bool>() && !has_value) continue;
    }
    if (flag == nullptr) {
      *error = "unknown flag --" + name + "; dclctl --help lists the flags";
      return false;
    }
    if (!has_value) {
      if (flag->IsOfType<bool>()) continue;
      if (i + 1 >= argc) {
        *error = "--" + name + " needs a value";
        return false;
      }
      value = argv[++i];
    }
    std::string parse_error;
    if (!flag->ParseFrom(value, &parse_error)) {
      *error = "--" + name + ": " + parse_error;
      return false;
    }
  }
  return true;
}

}  // namespace dcl::admin
