#!/usr/bin/env bash
# The console in Debian's headless Chromium against the real servers
# (console/tests/browser.test.ts): the two technicians' U9 race (DCL_RACE_ROUNDS, 20), a move
# followed live, the tokens, axe-core, and the screenshots of docs/console.md, written to
# $DCL_SCREENSHOT_DIR (default: docs/img of the checkout the console belongs to).
set -euo pipefail
. "$(dirname "$0")/suite.sh"
: "${DCL_CONSOLE_DIR:?run through tests/run, which builds console/ and sets DCL_CONSOLE_DIR}"
[ -f "$DCL_CONSOLE_DIR/dist/index.html" ] || {
  echo "console_browser_test: $DCL_CONSOLE_DIR/dist is not built (console/build)" >&2
  exit 1
}
[ -x /usr/bin/chromium ] || { echo "console_browser_test: /usr/bin/chromium missing (deploy/install-deps)" >&2; exit 1; }
export DCL_SCREENSHOT_DIR=${DCL_SCREENSHOT_DIR:-$DCL_CONSOLE_DIR/../docs/img}
export HOME=${TEST_TMPDIR:-$(mktemp -d)}
start_suite "$DCL_CONSOLE_DIR/dist"
cd "$DCL_CONSOLE_DIR"
node scripts/run-test.mjs tests/browser.test.ts
