// Catch2 main for every test binary. Bazel passes --test_filter as TESTBRIDGE_TEST_ONLY, which
// Catch2 would otherwise ignore; a filter that matches no test fails instead of passing.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  Catch::Session session;
  std::vector<const char*> args(argv, argv + argc);
  const char* filter = std::getenv("TESTBRIDGE_TEST_ONLY");
  if (filter != nullptr && *filter != '\0') args.push_back(filter);
  if (int rc = session.applyCommandLine(static_cast<int>(args.size()), args.data()); rc != 0) {
    return rc;
  }
  session.configData().warnings = Catch::WarnAbout::NoTests;
  return session.run();
}
