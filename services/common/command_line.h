// The command line of every dcl binary, read one way: --help lists the binary's own flags and the
// shared ones (services/common) it reads, and exits 0; an unknown flag, a shared flag the binary
// does not read, or a value its flag cannot take is a configuration error, exit 2.
//
// Abseil's ParseCommandLine alone exits 1 on an unknown flag (1 is a failed run for the
// sweeper's cron users) and its --help shows only flags defined in <program>.cc / <program>_main.cc,
// which matches none of ours ("No flags matched"). So every flag is checked here first, against
// this binary's own file and the shared groups it names, and --help is answered here.
#ifndef DCL_SERVICES_COMMON_COMMAND_LINE_H_
#define DCL_SERVICES_COMMON_COMMAND_LINE_H_

#include <string>
#include <vector>

namespace dcl {

// The exit status of a binary that refuses to start on its configuration.
inline constexpr int kExitConfigurationError = 2;

// Groups of the flags defined in services/common/shared_flags.cc (database, pool, log format)
// and services/common/service_main.cc (server, metrics, HTTP); a binary names those it reads.
enum class SharedFlags {
  kDatabaseUrl,   // --database_url
  kDatabasePool,  // --pool_size and the server-side statement, lock and idle timeouts
  kLogFormat,     // --log_format
  kServer,        // --listen, --tls_*, --reflection, --max_receive_message_bytes, shutdown grace
  kMetrics,       // --metrics_listen
  kHttp,          // --http_listen, --http_upstream, --console_dir, --http_cors_origins, ...
};

struct ProgramInfo {
  std::string name;       // "sweeper"
  std::string synopsis;   // the usage message: what the binary does and how it is called
  std::string main_file;  // __FILE__ of the file that defines the binary's own flags
  std::vector<SharedFlags> shared;
};

// Checks every flag of argv, answers --help (exit 0) or refuses a bad flag (exit 2), then
// parses with abseil. Returns the positional arguments, argv[0] first, as absl::ParseCommandLine
// does. Flags in a --flagfile are not pre-checked (abseil refuses unknown ones there, exit 1).
std::vector<char*> ParseCommandLineOrExit(int argc, char** argv, const ProgramInfo& program);

}  // namespace dcl

#endif  // DCL_SERVICES_COMMON_COMMAND_LINE_H_
