#!/usr/bin/env bash
# The fault history as a test: the program itself, its arguments passed on.
exec "$TEST_SRCDIR/$TEST_WORKSPACE/tests/faults/fault_history" "$@"
