#!/usr/bin/env bash
# The alerting rules as Prometheus reads them: syntax (check rules), the example configuration
# that loads them (check config), and the unit tests that make every alert fire and stay silent
# (test rules).
set -euo pipefail
dir="$TEST_SRCDIR/$TEST_WORKSPACE/deploy/prometheus"
command -v promtool >/dev/null || { echo "promtool is missing: run deploy/install-deps" >&2; exit 1; }
cd "$dir"
promtool check rules dcl-alerts.yml
promtool check config prometheus.yml
promtool test rules dcl-alerts.test.yml
