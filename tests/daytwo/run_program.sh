#!/usr/bin/env bash
# A day-two program as a test: the program (a workspace path), its arguments passed on.
program=$1
shift
exec "$TEST_SRCDIR/$TEST_WORKSPACE/$program" "$@"
