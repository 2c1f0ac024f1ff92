// dclctl's commands: one table of every command (its words, arguments, one line of help, the
// function that runs it), the flags they read, and the dispatch from the command line to a
// command. A command over gRPC is a handler of a few lines: build the request from flags, call,
// hand the answer to the printers of cli_format.h (or rack_elevation.h).
#ifndef DCL_DCLCTL_COMMANDS_H_
#define DCL_DCLCTL_COMMANDS_H_

#include <string>
#include <vector>

namespace dcl::admin {

// Runs the command the positional arguments name (argv without the program name and flags,
// as absl::ParseCommandLine leaves them); returns the exit status (cli_format.h).
int RunCommand(const std::vector<std::string>& positional);

// `dclctl --help`: every command with its arguments and help line, where targets and tokens
// come from, the exit statuses, and dclctl's flags.
std::string HelpText();

// `dclctl COMMAND --help`: the usage line and help of the command whose words begin
// `positional`, and the flags every command takes; empty when no command matches.
std::string CommandHelpText(const std::vector<std::string>& positional);

// Checks every flag's name and value before absl parses them, so that an unknown flag or a bad
// value ends with the usage exit status (2) and a readable message instead of absl's exit(1).
// False with `error` set on the first problem.
bool CheckFlags(int argc, char** argv, std::string* error);

}  // namespace dcl::admin

#endif  // DCL_DCLCTL_COMMANDS_H_
