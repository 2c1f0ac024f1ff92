#include "services/common/command_line.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace dcl {
namespace {

// The flags of each group, as defined in shared_flags.cc and service_main.cc.
std::vector<std::string> FlagsOf(SharedFlags group) {
  switch (group) {
    case SharedFlags::kDatabaseUrl:
      return {"database_url"};
    case SharedFlags::kDatabasePool:
      return {"pool_size", "statement_timeout_ms", "lock_timeout_ms",
              "idle_in_transaction_timeout_ms", "database_pooler"};
    case SharedFlags::kLogFormat:
      return {"log_format"};
    case SharedFlags::kServer:
      return {"listen",     "tls_cert",
              "tls_key",    "tls_client_ca",
              "reflection", "max_receive_message_bytes",
              "shutdown_grace_seconds", "token_cache_database_url"};
    case SharedFlags::kMetrics:
      return {"metrics_listen"};
    case SharedFlags::kHttp:
      return {"http_listen", "http_upstream", "console_dir", "http_cors_origins", "http_threads"};
  }
  return {};
}

bool IsOwn(const absl::CommandLineFlag& flag, const ProgramInfo& program) {
  const std::string file = flag.Filename();
  return file == program.main_file || absl::EndsWith(file, "/" + program.main_file) ||
         absl::EndsWith(program.main_file, "/" + file);
}

// Abseil's own flags (--helpfull, --flagfile, --version ...) stay abseil's.
bool IsAbseils(const absl::CommandLineFlag& flag) {
  return absl::StrContains(flag.Filename(), "absl/flags/");
}

[[noreturn]] void Refuse(const ProgramInfo& program, const std::string& message) {
  std::fprintf(stderr, "%s: %s (see --help)\n", program.name.c_str(), message.c_str());
  std::exit(kExitConfigurationError);
}

// "  --batch_size=1000  rows per transaction": the flag with its default value, and its help.
std::string Describe(const absl::CommandLineFlag& flag) {
  const std::string default_value = flag.DefaultValue();
  return absl::StrCat("  --", flag.Name(), "=", default_value.empty() ? "\"\"" : default_value,
                      "  ", flag.Help(), "\n");
}

[[noreturn]] void PrintHelp(const ProgramInfo& program,
                            const std::vector<absl::CommandLineFlag*>& own,
                            const std::vector<absl::CommandLineFlag*>& shared) {
  std::string text = absl::StrCat(program.synopsis, "\n");
  if (!own.empty()) {
    absl::StrAppend(&text, "\nFlags of ", program.name, ":\n");
    for (const absl::CommandLineFlag* flag : own) absl::StrAppend(&text, Describe(*flag));
  }
  if (!shared.empty()) {
    absl::StrAppend(&text, "\nShared flags:\n");
    for (const absl::CommandLineFlag* flag : shared) absl::StrAppend(&text, Describe(*flag));
  }
  absl::StrAppend(&text, "\n  --help  this text\n");
  std::fputs(text.c_str(), stdout);
  std::fflush(stdout);
  std::exit(0);
}

}  // namespace

std::vector<char*> ParseCommandLineOrExit(int argc, char** argv, const ProgramInfo& program) {
  std::vector<absl::CommandLineFlag*> own;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (!flag->IsRetired() && IsOwn(*flag, program)) own.push_back(flag);
  }
  std::sort(own.begin(), own.end(), [](const absl::CommandLineFlag* a,
                                       const absl::CommandLineFlag* b) {
    return a->Name() < b->Name();
  });
  std::vector<absl::CommandLineFlag*> shared;
  std::set<std::string> shared_names;
  for (SharedFlags group : program.shared) {
    for (const std::string& name : FlagsOf(group)) {
      absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
      if (flag == nullptr) {
        // A group names a flag this binary does not link: a build mistake, not a user's.
        std::fprintf(stderr, "%s: shared flag --%s is not linked into this binary\n",
                     program.name.c_str(), name.c_str());
        std::abort();
      }
      shared.push_back(flag);
      shared_names.insert(name);
    }
  }

  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    if (arg == "--") break;  // the rest is positional
    if (arg.size() < 2 || arg[0] != '-') continue;
    absl::string_view body = arg.substr(arg[1] == '-' ? 2 : 1);
    const size_t equals = body.find('=');
    const bool has_value = equals != absl::string_view::npos;
    const std::string name(body.substr(0, equals));
    std::string value = has_value ? std::string(body.substr(equals + 1)) : std::string();
    if (!has_value && (name == "help" || name == "helpshort")) PrintHelp(program, own, shared);

    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    if (flag == nullptr && !has_value && absl::StartsWith(name, "no")) {
      // --noonce is --once=false.
      absl::CommandLineFlag* negated = absl::FindCommandLineFlag(name.substr(2));
      if (negated != nullptr && negated->IsOfType<bool>()) {
        flag = negated;
        value = "false";
      }
    }
    if (flag == nullptr || flag->IsRetired()) Refuse(program, absl::StrCat("unknown flag --", name));
    const bool bool_flag = flag->IsOfType<bool>();
    if (IsAbseils(*flag)) {
      if (!has_value && !bool_flag) ++i;  // its value is the next argument
      continue;
    }
    if (!IsOwn(*flag, program) && shared_names.count(std::string(flag->Name())) == 0) {
      Refuse(program, absl::StrCat("unknown flag --", name, ": ", program.name,
                                   " does not read it"));
    }
    if (!has_value && value.empty()) {
      if (bool_flag) {
        value = "true";
      } else if (i + 1 < argc) {
        value = argv[++i];
      } else {
        Refuse(program, absl::StrCat("flag --", name, " needs a value"));
      }
    }
    std::string error;
    if (!flag->ParseFrom(value, &error)) {
      Refuse(program, absl::StrCat("bad value for --", flag->Name(), ": ", error));
    }
  }

  absl::SetProgramUsageMessage(program.synopsis);
  return absl::ParseCommandLine(argc, argv);
}

}  // namespace dcl
