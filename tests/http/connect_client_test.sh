#!/usr/bin/env bash
# The official Connect client for TypeScript calling every RPC against the real servers
# (console/tests/connect_client.test.ts). The console's npm packages and generated types come
# from $DCL_CONSOLE_DIR, which tests/run builds (console/build) and passes in.
set -euo pipefail
. "$(dirname "$0")/suite.sh"
: "${DCL_CONSOLE_DIR:?run through tests/run, which builds console/ and sets DCL_CONSOLE_DIR}"
[ -d "$DCL_CONSOLE_DIR/node_modules" ] && [ -d "$DCL_CONSOLE_DIR/src/gen" ] || {
  echo "connect_client_test: $DCL_CONSOLE_DIR is not built (console/build)" >&2
  exit 1
}
start_suite
cd "$DCL_CONSOLE_DIR"
node scripts/run-test.mjs tests/connect_client.test.ts
