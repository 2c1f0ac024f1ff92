#!/usr/bin/env python3
"""profile_phases.py without perf: its reading of `perf script`, its buckets, the window it divides
by, and the bound it prints (issue 26), on made-up samples whose answers are worked out by hand."""

import collections
import contextlib
import io
import os
import subprocess
import sys
import unittest
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import profile_phases as pp  # noqa: E402

# `perf script -F comm,tid,time,ip,sym,dso` as perf prints it: a header, the call chain innermost
# first, a blank line. Three samples of PostgreSQL and one of a handler thread, 2.5 s apart.
PERF_SCRIPT = """\
postgres 4242 100.000000:
\t    55aa01 XLogFlush+0x1a (/usr/lib/postgresql/15/bin/postgres)
\t    55aa02 CommitTransaction+0x20 (/usr/lib/postgresql/15/bin/postgres)
\t    55aa03 plpgsql_call_handler+0x10 (/usr/lib/postgresql/15/bin/postgres)

postgres 4243 101.000000:
\t    55aa04 heap_insert+0x5 (/usr/lib/postgresql/15/bin/postgres)
\t    55aa05 plpgsql_call_handler+0x10 (/usr/lib/postgresql/15/bin/postgres)
\t    55aa06 PortalRun+0x10 (/usr/lib/postgresql/15/bin/postgres)

postgres 4250 102.000000:
\t    55aa07 CommitTransaction+0x20 (/usr/lib/postgresql/15/bin/postgres)
\t    55aa08 vacuum_rel+0x30 (/usr/lib/postgresql/15/bin/postgres)
\t    55aa09 do_autovacuum+0x30 (/usr/lib/postgresql/15/bin/postgres)

grpcpp_sync_ser 4300 102.500000:
\t    7f0001 __send+0x1 ([kernel.kallsyms])
\t    7f0002 grpc_call_start_batch+0x2 (/usr/lib/x86_64-linux-gnu/libgrpc.so.29)
"""


def fake_perf_script(*args, **kwargs):
    return subprocess.CompletedProcess(args, 0, stdout=PERF_SCRIPT, stderr="")


class ReadingPerfScript(unittest.TestCase):
    def test_samples_carry_comm_time_and_chain(self):
        with mock.patch.object(pp.subprocess, "run", fake_perf_script):
            samples = list(pp.parse_samples("unused"))
        self.assertEqual([(comm, when) for comm, when, _ in samples],
                         [("postgres", 100.0), ("postgres", 101.0), ("postgres", 102.0),
                          ("grpcpp_sync_ser", 102.5)])
        self.assertEqual(samples[0][2][0], ("XLogFlush", "/usr/lib/postgresql/15/bin/postgres"))
        self.assertEqual(len(samples[1][2]), 3)

    def test_buckets_and_the_window_is_the_samples_span(self):
        with mock.patch.object(pp.subprocess, "run", fake_perf_script):
            postgres, server, kernel, seconds = pp.split("unused", "reservation_bench")
        # The WAL flush inside a function's commit is the commit's; an autovacuum worker's commit
        # is autovacuum's, not a commit of a call.
        self.assertEqual(postgres, collections.Counter({"commit: WAL flush": 1,
                                                       "PL/pgSQL function": 1,
                                                       "background: autovacuum": 1}))
        self.assertEqual(server, collections.Counter({"handler threads: kernel": 1}))
        self.assertEqual(kernel["server"], 1)
        # First sample to last, plus one sample's period: not the clock around perf.
        self.assertAlmostEqual(seconds, 2.5 + 1.0 / pp.FREQUENCY)


class TheBound(unittest.TestCase):
    def test_the_bound_is_the_floor_plus_the_function_less_the_floors_statement(self):
        # 1,000 calls in the window each; one sample is 1/120 s, so 120 samples are 1 ms per call.
        calls = 1000
        reserve = (collections.Counter({"PL/pgSQL function": 600, "commit: WAL flush": 120,
                                        "statement: run": 60}),
                   collections.Counter({"handler threads: kernel": 240, pp.LOAD_GENERATOR: 120}),
                   collections.Counter())
        floor = (collections.Counter({"commit: WAL flush": 120, "statement: run": 60}),
                 collections.Counter({"handler threads: kernel": 120, pp.LOAD_GENERATOR: 60}),
                 collections.Counter())
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            pp.print_bound("Reserve", "echo-insert floor", reserve, floor, calls, calls)
        text = out.getvalue()
        # Reserve 5.000 + 1.000 + 0.500 + server 2.000 = 8.5 ms; the floor 1.0 + 0.5 + 1.0 = 2.5.
        self.assertIn("8.500 ms against 2.500 ms (3.40x)", text)
        self.assertIn("the PL/pgSQL function alone: 5.000 ms, more than the echo-insert floor's",
                      text)
        # 2.5 + 5.0 - 0.5 = 7.0 ms, 2.80x; calls/s at most (2.5 + 0.5) / (7.0 + 1.0) = 0.375.
        self.assertIn("= 7.000 ms, 2.80x its CPU per call", text)
        self.assertIn("= 0.375 of its calls/s", text)
        # Beyond the floor outside the function: the server's 1.0 ms more, nothing else.
        self.assertIn("outside the function, 1.000 ms", text)
        self.assertRegex(text, r"the server\s+\+1\.000 ms")

    def test_no_function_no_bound(self):
        nothing = (collections.Counter({"statement: run": 60}), collections.Counter(),
                   collections.Counter())
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            pp.print_bound("write calls", "echo-insert floor", nothing, nothing, 100, 100)
        self.assertEqual(out.getvalue(), "")


if __name__ == "__main__":
    unittest.main()
