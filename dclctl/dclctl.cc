// dclctl: the DC team's command line. Racks, bookings, moves and reservations over gRPC; tokens,
// organizations and the module switch on the database; health checks. `dclctl --help` lists
// every command; commands.h holds them, cli_format.h and rack_elevation.h what they print.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "dclctl/format/cli_format.h"
#include "dclctl/commands.h"

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("the DC team's command line for dcl; dclctl --help lists the commands");
  // `dclctl --help` lists every command; `dclctl rack show --help` shows one, with the flags
  // every command takes (the words before --help name it).
  std::vector<std::string> words;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-help") == 0 ||
        std::strcmp(argv[i], "-h") == 0 || (i == 1 && std::strcmp(argv[i], "help") == 0)) {
      const std::string one = dcl::admin::CommandHelpText(words);
      std::printf("%s", one.empty() ? dcl::admin::HelpText().c_str() : one.c_str());
      return dcl::admin::kExitOk;
    }
    if (argv[i][0] != '-') words.emplace_back(argv[i]);
  }
  // Flags may be spelled with dashes as well as underscores (--dry-run, --site-map): absl
  // knows only the underscores, so the names are rewritten before it parses them.
  std::vector<std::string> spelled(argv, argv + argc);
  std::vector<char*> normalized;
  for (std::string& arg : spelled) {
    if (arg == "--") break;
    if (arg.size() > 2 && arg[0] == '-') {
      const size_t end = std::min(arg.find('='), arg.size());
      std::replace(arg.begin() + 2, arg.begin() + static_cast<long>(end), '-', '_');
    }
  }
  // `--site` may be repeated (import netbox --site fra1 --site ams2): absl keeps the last
  // value only, so the values are joined into one comma-separated list.
  std::vector<std::string> sites;
  std::vector<std::string> kept;
  for (size_t i = 0; i < spelled.size(); ++i) {
    const std::string& arg = spelled[i];
    if (arg == "--") {
      kept.insert(kept.end(), spelled.begin() + static_cast<long>(i), spelled.end());
      break;
    }
    if ((arg == "--site" || arg == "-site") && i + 1 < spelled.size()) {
      sites.push_back(spelled[++i]);
    } else if (arg.rfind("--site=", 0) == 0 || arg.rfind("-site=", 0) == 0) {
      sites.push_back(arg.substr(arg.find('=') + 1));
    } else {
      kept.push_back(arg);
    }
  }
  if (sites.size() > 1) {
    std::string joined;
    for (const std::string& site : sites) joined += (joined.empty() ? "" : ",") + site;
    kept.push_back("--site=" + joined);
    spelled = kept;
    argc = static_cast<int>(spelled.size());
  }
  for (std::string& arg : spelled) normalized.push_back(arg.data());
  normalized.push_back(nullptr);  // argv[argc], as main's own argv
  argv = normalized.data();
  std::string error;
  if (!dcl::admin::CheckFlags(argc, argv, &error)) {
    std::fprintf(stderr, "dclctl: %s\n", error.c_str());
    return dcl::admin::kExitUsage;
  }
  const std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  if (args.size() < 2) {
    std::fprintf(stderr, "usage: dclctl COMMAND [ARGS] [FLAGS]; dclctl --help lists the commands\n");
    return dcl::admin::kExitUsage;
  }
  return dcl::admin::RunCommand(std::vector<std::string>(args.begin() + 1, args.end()));
}
