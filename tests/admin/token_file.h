// A dcl token in a file of its own, for dclctl's --dcl_token_file (dclctl refuses a token on its
// command line, where ps shows it to every user). Under Bazel's TEST_TMPDIR, which Bazel clears.
#ifndef DCL_TESTS_ADMIN_TOKEN_FILE_H_
#define DCL_TESTS_ADMIN_TOKEN_FILE_H_

#include <unistd.h>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

namespace dcl::testing {

inline std::string DclTokenFile(const std::string& token) {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string path = std::string(base != nullptr ? base : "/tmp") + "/dcl-token.XXXXXX";
  const int fd = mkstemp(path.data());  // mode 0600
  REQUIRE(fd >= 0);
  const std::string line = token + "\n";
  REQUIRE(write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()));
  close(fd);
  return path;
}

}  // namespace dcl::testing

#endif  // DCL_TESTS_ADMIN_TOKEN_FILE_H_
