// The real sweeper binary (//sweeper:sweeper) as a child process.
#ifndef DCL_TESTS_SWEEPER_SWEEPER_PROCESS_H_
#define DCL_TESTS_SWEEPER_SWEEPER_PROCESS_H_

#include <string>
#include <vector>

#include "tests/support/child_process.h"

namespace dcl::testing {

class SweeperProcess : public ChildProcess {
 public:
  explicit SweeperProcess(const std::vector<std::string>& args)
      : ChildProcess(RunfilesBinary("sweeper/sweeper"), args) {}
};

}  // namespace dcl::testing

#endif  // DCL_TESTS_SWEEPER_SWEEPER_PROCESS_H_
