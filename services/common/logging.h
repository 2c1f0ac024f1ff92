// Process-wide logging setup: spdlog to stderr, as text (default) or as JSON lines.
#ifndef DCL_SERVICES_COMMON_LOGGING_H_
#define DCL_SERVICES_COMMON_LOGGING_H_

#include <string>

namespace dcl {

// format: "text" or "json". Unknown formats fall back to text with a warning.
void InitLogging(const std::string& process_name, const std::string& format);

// `s` as the body of a JSON string (quotes, backslashes and control characters escaped).
std::string JsonEscape(const std::string& s);

}  // namespace dcl

#endif  // DCL_SERVICES_COMMON_LOGGING_H_
