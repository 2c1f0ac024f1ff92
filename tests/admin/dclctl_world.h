// What dclctl's process tests share: an organization with nothing in it yet, served by the
// in-process suite (tests/support/suite.h: OccupancyService and InventoryService as the
// occupancy server serves them, beside the others), and the real dclctl binary run against it
// with a dc-operator's token.
#ifndef DCL_TESTS_ADMIN_DCLCTL_WORLD_H_
#define DCL_TESTS_ADMIN_DCLCTL_WORLD_H_

#include <catch2/catch.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/admin/token_file.h"
#include "tests/support/child_process.h"
#include "tests/support/fixtures.h"
#include "tests/support/grpc_harness.h"
#include "tests/support/suite.h"
#include "tests/support/test_db.h"

namespace dcl::testing {

struct DclctlWorld : SuiteWorld {
  DclctlWorld()
      : SuiteWorld(/*pool_size=*/8),
        server(InProcessSuite::server()),
        operator_token(Token(Role::kDcOperator)) {}

  InProcessServer& server;
  std::string operator_token;
};

struct DclctlResult {
  int exit = -1;
  std::string out;
  std::string err;
};

// dclctl `args` against the world's server, waiting at most `limit` for it to exit.
inline DclctlResult RunDclctl(const DclctlWorld& w, std::vector<std::string> args,
                              std::chrono::seconds limit) {
  args.push_back("--target=" + w.server.address());
  args.push_back("--dcl_token_file=" + DclTokenFile(w.operator_token));
  ChildProcess dclctl(RunfilesBinary("dclctl/dclctl"), args, /*separate_stderr=*/true);
  const std::optional<int> exit = dclctl.WaitForExit(limit);
  REQUIRE(exit.has_value());
  return DclctlResult{*exit, dclctl.Log(), dclctl.Stderr()};
}

}  // namespace dcl::testing

#endif  // DCL_TESTS_ADMIN_DCLCTL_WORLD_H_
