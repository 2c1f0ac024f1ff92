#!/usr/bin/env python3
"""Where a benchmark phase's CPU goes, per call: perf samples split by what the process was doing.

Runs a benchmark command, passes its output through, and when the benchmark announces a measured
phase ("-- measuring: <phase> for <s> s at <n> clients", tests/bench/echo_floor.h) that was asked
for (at --clients, when given), records every CPU with perf (call graphs by DWARF unwinding) from
one second after the start to one second before the end. When the benchmark has ended, each
recording is split:

  * PostgreSQL's processes by the first of these found in a sample's call chain: autovacuum, the
    WAL writer, the checkpointer and background writer (the writes' aftermath), the commit's WAL
    flush, the rest of the commit, a PL/pgSQL function, running a statement, starting one (bind,
    plan cache, executor start), parsing, reading the next message (socket and wait), writing the
    answer, anything else;
  * the benchmark's process: the server's handler threads by library (gRPC and protobuf, libpq and
    libpqxx, the log line, SHA-256, the service's own code, the C and C++ runtime, the kernel),
    gRPC's own threads, and the load generator's threads apart;

and printed as milliseconds of CPU per call, with the phase's call count the benchmark printed
("-- measured: <phase>: N calls in S s"). The samples are few (a sampling rate that unwinding
stacks can sustain): a line of under ~30 samples is noise, and the sample counts are printed.

With --bound, the first phase is then set against the last (the floor) in the terms of issue 26:
its CPU per call beside the floor's, and the bound it cannot pass while its PL/pgSQL function costs
what it did, if everything else cost what the floor's call costs. That bound fits a call whose
whole work is one statement calling one function (Reserve); a call whose rules also run as plain
statements (the occupancy write path) has a tighter bound of its own, printed by its benchmark.

Usage: profile_phases.py [--clients N] [--bound] --phase "write calls" \
           --phase "echo-insert floor" -- BENCHMARK ARGS...
Each phase is profiled at its first announcement only (its first at N clients with --clients).
Needs perf (Debian's linux-perf, installed when missing and run as root) and the right to sample
every CPU (root, or kernel.perf_event_paranoid <= 0).
"""

import argparse
import collections
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

FREQUENCY = 120  # samples per second per CPU

# A sample goes to the first bucket, in this order, with one of its functions anywhere in the
# sample's call chain; the narrower bucket comes first (the WAL flush is inside the commit, a
# PL/pgSQL function inside running a statement). A flush forced by evicting a dirty page inside a
# statement also counts as the commit's: rare at these table sizes.
POSTGRES_BUCKETS = [
    # Background processes first: their work is the writes' aftermath (dead rows to vacuum, WAL to
    # write out, dirty pages to flush), paid by whichever phase they run in. An autovacuum
    # worker commits too, so its samples must not reach the commit's buckets.
    ("background: autovacuum", ["do_autovacuum", "vacuum_rel", "heap_vacuum_rel",
                                "lazy_scan_heap", "analyze_rel"]),
    ("background: WAL writer", ["WalWriterMain", "XLogBackgroundFlush"]),
    ("background: checkpointer, background writer", ["CheckpointerMain", "CheckPointGuts",
                                                     "BackgroundWriterMain", "BgBufferSync"]),
    ("commit: WAL flush", ["XLogFlush"]),
    ("commit: the rest", ["CommitTransactionCommand", "CommitTransaction"]),
    ("PL/pgSQL function", ["plpgsql_call_handler"]),
    ("statement: run", ["PortalRun", "standard_ExecutorRun"]),
    ("statement: start (bind, plan cache)",
     ["exec_bind_message", "PortalStart", "standard_ExecutorStart", "GetCachedPlan"]),
    ("statement: parse", ["exec_parse_message"]),
    ("read the next message (socket, wait)",
     ["pq_getbyte", "pq_getmessage", "secure_read", "WaitEventSetWait"]),
    ("write the answer (socket)", ["secure_write", "pq_flush", "internal_flush"]),
    ("begin", ["StartTransactionCommand"]),
    ("end of statement", ["finish_xact_command", "PortalDrop"]),
]

SERVER_LIBRARIES = [
    ("gRPC, protobuf, abseil", ["libgrpc", "libgpr", "libprotobuf", "libabsl", "libaddress_sorting",
                                "libupb", "libre2", "libcares", "libssl", "libz"]),
    ("libpq, libpqxx", ["libpq.so", "libpqxx"]),
    ("the log line (spdlog, fmt)", ["libspdlog", "libfmt"]),
    ("SHA-256 (token, request digest)", ["libcrypto"]),
    ("C and C++ runtime", ["libc.so", "libstdc++", "libm.so", "ld-linux", "libgcc"]),
    ("kernel", ["[kernel"]),
]


def parse_samples(data_path):
    """Yields (comm, seconds, [(symbol, dso), ...] innermost first) for each sample of a perf.data
    file, `seconds` the sample's timestamp."""
    out = subprocess.run(["perf", "script", "-i", data_path, "-F", "comm,tid,time,ip,sym,dso"],
                         capture_output=True, text=True, check=True).stdout
    comm, when, stack = None, 0.0, []
    header = re.compile(r"^(\S+)\s+\d+\s+(\d+\.\d+):")
    frame = re.compile(r"^\s+[0-9a-f]+\s+(.*?)\s+\((.*)\)$")
    for line in out.splitlines():
        if not line.strip():
            if comm is not None:
                yield comm, when, stack
            comm, stack = None, []
            continue
        if comm is None:
            m = header.match(line)
            comm, when = (m.group(1), float(m.group(2))) if m else (line.split()[0], when)
            continue
        m = frame.match(line)
        if m:
            stack.append((m.group(1).split("+")[0], m.group(2)))
    if comm is not None:
        yield comm, when, stack


def bucket_by_symbol(stack):
    for name, symbols in POSTGRES_BUCKETS:
        if any(sym in symbols for sym, _ in stack):
            return name
    return "other"


def bucket_by_library(stack, binary_name):
    if not stack:
        return "other"
    dso = os.path.basename(stack[0][1]) if not stack[0][1].startswith("[") else stack[0][1]
    for name, prefixes in SERVER_LIBRARIES:
        if any(dso.startswith(p) for p in prefixes):
            return name
    return "the service's own code" if dso == binary_name else "other"


LOAD_GENERATOR = "(apart: the load generator's threads)"


def split(data_path, binary_name):
    """(postgres, server, kernel, seconds): the samples by bucket, and the seconds the samples
    span, first to last: the window they cover. The clock around perf overstates it by perf's
    start-up (tenths of a second on two busy cores), which matters when a phase ends early and
    perf is stopped with it."""
    binary_comm = binary_name[:15]  # the kernel keeps 15 characters of a thread's name
    postgres = collections.Counter()
    server = collections.Counter()
    kernel = collections.Counter()
    first, last = None, None
    for comm, when, stack in parse_samples(data_path):
        first = when if first is None else min(first, when)
        last = when if last is None else max(last, when)
        in_kernel = bool(stack) and stack[0][1].startswith("[kernel")
        if comm == "postgres":
            postgres[bucket_by_symbol(stack)] += 1
            kernel["postgres"] += in_kernel
        elif comm.startswith("grpcpp_sync_ser"):
            server["handler threads: " + bucket_by_library(stack, binary_name)] += 1
            kernel["server"] += in_kernel
        elif comm == binary_comm:
            server[LOAD_GENERATOR] += 1
        elif comm.startswith(("grpc", "default-executo", "resolver-execut")):
            server["gRPC's own threads"] += 1
            kernel["server"] += in_kernel
    seconds = last - first + 1.0 / FREQUENCY if first is not None else 0.0
    return postgres, server, kernel, seconds


def ms_per_call(samples, calls):
    """Milliseconds of CPU per call that `samples` stand for, one sample 1/FREQUENCY s of one CPU."""
    return samples / FREQUENCY * 1000.0 / calls


def own_samples(counter):
    """A process's samples, the load generator's threads apart."""
    return sum(n for name, n in counter.items() if name != LOAD_GENERATOR)


def print_split(phase, calls_per_second, window, postgres, server, kernel):
    calls = calls_per_second * window
    ms = lambda n: ms_per_call(n, calls)  # noqa: E731
    print(f"\n== where the CPU goes: {phase}, {calls_per_second:.0f} calls/s, "
          f"{window:.1f} s of samples at {FREQUENCY} Hz per CPU ==")
    for title, counter, kernel_key in (("PostgreSQL", postgres, "postgres"),
                                       ("the server", server, "server")):
        total = own_samples(counter)
        print(f"{title}: {ms(total):.3f} ms per call ({total} samples)")
        for name, n in counter.most_common():
            print(f"   {name:44s} {ms(n):7.3f} ms  {n:5d}")
        if kernel[kernel_key]:
            print(f"   {'of which in the kernel':44s} {ms(kernel[kernel_key]):7.3f} ms")
    sys.stdout.flush()


def postgres_and_server_ms(phase_split, calls):
    """(PostgreSQL + server ms per call, the load generator's ms per call, {part: ms}): the parts
    are PostgreSQL's buckets and "the server" (its threads, the load generator's apart)."""
    postgres, server, _ = phase_split
    parts = {name: ms_per_call(n, calls) for name, n in postgres.items()}
    parts["the server"] = ms_per_call(own_samples(server), calls)
    return sum(parts.values()), ms_per_call(server[LOAD_GENERATOR], calls), parts


def print_bound(phase, floor, phase_split, floor_split, phase_calls, floor_calls):
    """What `phase` would cost if everything but its PL/pgSQL function cost what the floor's call
    costs: the function's own execution stays (the decision's rules), the floor's statement it
    stands in for goes. The calls/s bound assumes, as on these two cores, that calls/s follow the
    CPU per call, the load generator's included."""
    total, load, parts = postgres_and_server_ms(phase_split, phase_calls)
    floor_total, floor_load, floor_parts = postgres_and_server_ms(floor_split, floor_calls)
    function = parts.get("PL/pgSQL function", 0.0)
    if floor_total <= 0 or function <= 0:
        return
    replaced = floor_parts.get("statement: run", 0.0)
    bound = floor_total + function - replaced
    print(f"\n== {phase} against the {floor}, by these samples ==")
    print(f"CPU per call, server + PostgreSQL: {total:.3f} ms against {floor_total:.3f} ms "
          f"({total / floor_total:.2f}x); the load generator {load:.3f} against {floor_load:.3f}")
    print(f"the PL/pgSQL function alone: {function:.3f} ms, more than the {floor}'s whole call"
          if function > floor_total else f"the PL/pgSQL function alone: {function:.3f} ms")
    print(f"if everything but the function cost what the {floor}'s call costs: {floor_total:.3f} + "
          f"{function:.3f} - the {floor}'s statement {replaced:.3f} = {bound:.3f} ms, "
          f"{bound / floor_total:.2f}x its CPU per call, and at most "
          f"({floor_total:.3f} + {floor_load:.3f}) / ({bound:.3f} + {load:.3f}) = "
          f"{(floor_total + floor_load) / (bound + load):.3f} of its calls/s")
    # What the bound takes as the floor's: each part's cost beyond the floor's same part.
    beyond = {name: parts.get(name, 0.0) - floor_parts.get(name, 0.0)
              for name in set(parts) | set(floor_parts) if name != "PL/pgSQL function"}
    print(f"what it costs beyond the {floor}'s call outside the function, "
          f"{total - function - floor_total:.3f} ms:")
    for name, extra in sorted(beyond.items(), key=lambda item: -abs(item[1])):
        print(f"   {name:44s} {extra:+7.3f} ms")
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--phase", action="append", required=True,
                    help="a phase the benchmark announces (repeat for several)")
    ap.add_argument("--clients", type=int,
                    help="profile each phase at its first announcement at this many clients")
    ap.add_argument("--bound", action="store_true",
                    help="set the first phase against the last: the bound its function leaves")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        ap.error("the benchmark command is missing (after --)")
    if shutil.which("perf") is None:
        if os.geteuid() != 0:
            sys.exit("profile_phases: perf is missing; as root: apt-get install linux-perf")
        subprocess.run(["apt-get", "install", "-y", "-q", "linux-perf"], check=True,
                       stdout=subprocess.DEVNULL)
    binary_name = os.path.basename(command[0])

    work = tempfile.mkdtemp(prefix="dcl-profile.")
    wanted = set(args.phase)
    recordings = {}  # phase -> its perf.data
    threads = []
    measured = {}  # phase -> calls/s, first announcement

    running = {}  # phase -> perf process, while it records
    windows = {}  # phase -> seconds it recorded
    stopped_at = {}  # phase -> when the benchmark said it ended, if perf was still recording

    def record(phase, path, longest):
        # From one second into the phase to one second before its announced end, or to its real
        # end when it ends earlier (a phase that runs out of machines before its time).
        time.sleep(1.0)
        if phase in measured:
            windows[phase] = 0.0  # over before a second had passed: nothing to sample
            return
        started = time.monotonic()
        perf = subprocess.Popen(["perf", "record", "-a", "--call-graph", "dwarf,8192",
                                 "-F", str(FREQUENCY), "-o", path, "--", "sleep", f"{longest:.2f}"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        running[phase] = perf
        perf.wait()
        windows[phase] = min(longest, stopped_at.get(phase, time.monotonic()) - started)

    # stdbuf: the benchmark's own lines are flushed, but its table rows may sit in a pipe's buffer.
    bench = subprocess.Popen(["stdbuf", "-oL"] + command, stdout=subprocess.PIPE, text=True)
    starts = re.compile(r"^-- measuring: (.*) for ([\d.]+) s at (\d+) clients?$")
    ends = re.compile(r"^-- measured: (.*): (\d+) calls in ([\d.]+) s$")
    for line in bench.stdout:
        sys.stdout.write(line)
        sys.stdout.flush()
        m = starts.match(line.rstrip("\n"))
        if (m and m.group(1) in wanted and m.group(1) not in recordings
                and args.clients in (None, int(m.group(3)))):
            window = float(m.group(2)) - 2.0
            if window < 2.0:
                sys.exit("profile_phases: phases under 4 s leave too little to sample; --seconds")
            path = os.path.join(work, f"phase{len(recordings)}.data")
            recordings[m.group(1)] = path
            t = threading.Thread(target=record, args=(m.group(1), path, window))
            t.start()
            threads.append(t)
        m = ends.match(line.rstrip("\n"))
        if m and m.group(1) in recordings and m.group(1) not in measured:
            measured[m.group(1)] = int(m.group(2)) / float(m.group(3))
            if m.group(1) in running and running[m.group(1)].poll() is None:
                stopped_at[m.group(1)] = time.monotonic()
                running[m.group(1)].send_signal(signal.SIGINT)  # perf writes what it has
    status = bench.wait()
    for t in threads:
        t.join()
    missing = [p for p in args.phase if p not in measured]
    if missing:
        at = f" at {args.clients} clients" if args.clients else ""
        sys.exit(f"profile_phases: the benchmark never announced {missing}{at}")
    splits = {}
    for phase in args.phase:
        if windows[phase] < 1.0:
            print(f"\n== {phase}: over too soon to sample (under a second of recording) ==")
            continue
        postgres, server, kernel, seconds = split(recordings[phase], binary_name)
        windows[phase] = seconds
        splits[phase] = (postgres, server, kernel)
        print_split(phase, measured[phase], seconds, postgres, server, kernel)
    first, floor = args.phase[0], args.phase[-1]
    if args.bound and first != floor and first in splits and floor in splits:
        print_bound(first, floor, splits[first], splits[floor],
                    measured[first] * windows[first], measured[floor] * windows[floor])
    shutil.rmtree(work)
    sys.exit(status)


if __name__ == "__main__":
    main()
