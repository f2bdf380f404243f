# Copyright 2026 The Spindle Authors.
"""The gdb commands (spindle.py) on a core file and on a live process.

Usage: gdb_test.py SPINDLE_PY PARKED_FIBERS

Starts PARKED_FIBERS, which parks fibers in each kind of wait at known functions, runs
one, and prints what to expect ("expect N STATE :: FUNCTION"). Then, on a core made by
gcore and on the live process (gdb -p), runs gdb in batch mode with the commands and
checks: `spindle fibers` lists every fiber with that state and function; `spindle
stacks` counts each group of identical stacks right; `spindle bt` and `spindle fiber`
show a parked fiber's own frames, and `up`/`frame` work on them; with debug information,
`bt full` shows a local of the fiber's function.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

GDB_TIMEOUT_S = 300


def fail(message, output=""):
    sys.stderr.write("FAIL: %s\n" % message)
    if output:
        sys.stderr.write("--- gdb's output ---\n%s\n--- end ---\n" % output)
    sys.exit(1)


def run_gdb(script, target_args, commands):
    argv = ["gdb", "-nx", "-batch", "-ex", "set pagination off",
            "-ex", "set width 0", "-ex", "source " + script]
    for command in commands:
        argv += ["-ex", "echo \\n=== %s\\n" % command, "-ex", command]
    argv += target_args
    started = time.monotonic()
    result = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, timeout=GDB_TIMEOUT_S,
                            universal_newlines=True)
    print("gdb %s: %.1f s" % (" ".join(target_args), time.monotonic() - started))
    return result.stdout


def sections(output):
    """The output of each command, by command."""
    parts = {}
    for chunk in output.split("\n=== ")[1:]:
        command, _, text = chunk.partition("\n")
        parts[command] = text
    return parts


def function_of(where):
    """The function a `where` column names: "F(int)", "F at file.cc:12" (with debug
    information) and "F" all give "F"."""
    return where.split(" at ", 1)[0].split("(", 1)[0].strip()


def parse_listing(text):
    """`spindle fibers`'s rows: (id, group, state, where)."""
    rows = []
    for line in text.splitlines():
        match = re.match(r"\s*(\d+)\s+(\S+)\s+(.*?)\s+::\s+(.*)$", line)
        if match:
            rows.append((int(match.group(1)), match.group(2), match.group(3),
                         match.group(4)))
    return rows


def check(output, expectations, has_debug_info, where):
    parts = sections(output)
    listing = parts.get("spindle fibers", "")
    rows = parse_listing(listing)
    if not rows:
        fail("%s: `spindle fibers` listed no fiber" % where, output)
    ids_by_function = {}
    for count, state, function in expectations:
        matching = [row for row in rows if function_of(row[3]) == function]
        if len(matching) != count:
            fail("%s: expected %d fibers at %s, `spindle fibers` shows %d"
                 % (where, count, function, len(matching)), listing)
        for row in matching:
            if not row[2].startswith(state):
                fail("%s: the fiber at %s is %r, expected %r" % (where, function, row[2],
                                                                 state), listing)
            if state.startswith("waiting") and row[1] == "-":
                fail("%s: the parked fiber at %s has no group" % (where, function), listing)
        ids_by_function[function] = [row[0] for row in matching]
    mutex_waiter = ids_by_function["GdbParkOnMutex"][0]
    holder = ids_by_function["GdbParkOnMutexHoldingAnother"][0]
    waiter_row = [row for row in rows if row[0] == mutex_waiter][0]
    if "held by fiber %d" % holder not in waiter_row[2]:
        fail("%s: fiber %d waits on a mutex fiber %d holds; the list says %r"
             % (where, mutex_waiter, holder, waiter_row[2]), listing)
    joiner = [row for row in rows if row[0] == ids_by_function["GdbParkInJoin"][0]][0]
    child = ids_by_function["GdbJoinedChild"][0]
    if not joiner[2].startswith("waiting on join of fiber %d " % child):
        fail("%s: fiber %d joins fiber %d; the list says %r" % (where, joiner[0], child,
                                                                joiner[2]), listing)
    if not re.search(r"waiting on timer.* for \d+\.\d s", listing):
        fail("%s: the sleeping fiber shows no time in its wait" % where, listing)

    stacks = parts.get("spindle stacks", "")
    for count, state, function in expectations:
        # The group's header names its count and state; its frames name the function.
        found = False
        for block in stacks.split("\n\n"):
            header = block.strip().splitlines()[0] if block.strip() else ""
            if re.match(r"%d fibers? %s" % (count, re.escape(state)), header) and \
                    re.search(r"\b%s\b" % function, block):
                found = True
        if not found:
            fail("%s: `spindle stacks` has no group of %d %s at %s"
                 % (where, count, state, function), stacks)

    bt = parts.get("spindle bt %d" % mutex_waiter, "")
    if "GdbParkOnMutex" not in bt or "spindle::Mutex" not in bt:
        fail("%s: `spindle bt %d` does not show the mutex wait" % (where, mutex_waiter), bt)

    selected = parts.get("spindle fiber %d" % ids_by_function["GdbParkOnConditionVariable"][0],
                         "")
    # The innermost frame of a parked fiber is the park path's: ParkFiber, or with debug
    # information the switch inlined into it. (gdb leaves out "0x... in" where the pc
    # starts a source line.)
    if not re.search(r"^#\d+ .*\bspindle::internal::(ParkFiber|JumpContextInline|"
                     r"FiberEntity::SwitchToInline)\b", selected, re.M):
        fail("%s: `spindle fiber` did not select the fiber's innermost frame" % where,
             selected)
    bt = parts.get("bt", "")
    if "GdbParkOnConditionVariable" not in bt or "spindle_context_trampoline" not in bt or \
            "__GI___libc_read" in bt:
        fail("%s: `bt` on the selected fiber shows other frames than the fiber's" % where,
             bt)
    # `frame function F` selects F's frame, or with debug information the innermost
    # frame inlined into F (ConditionVariable::wait), whose `up` is F.
    frame = parts.get("frame function GdbParkOnConditionVariable", "") + parts.get("up", "")
    if "GdbParkOnConditionVariable" not in frame:
        fail("%s: `frame function` and `up` did not reach the fiber's function" % where,
             frame)
    if has_debug_info:
        # Every frame's locals: GdbParkOnConditionVariable's `rounds` among them.
        local = parts.get("bt full", "")
        if not re.search(r"\brounds = ", local):
            fail("%s: `bt full` on the fiber lacks GdbParkOnConditionVariable's `rounds`"
                 % where, local)
    up = parts.get("up", "")
    if not re.search(r"^#\d+ ", up, re.M):
        fail("%s: `up` from the fiber's function printed no frame" % where, up)
    running = parts.get("spindle fiber %d" % ids_by_function["GdbSpin"][0], "")
    if "running on thread" not in running or "GdbSpin" not in running:
        fail("%s: `spindle fiber` on the running fiber did not show its thread's frame"
             % where, running)
    off = parts.get("spindle fiber off", "")
    if "back to the threads' own frames" not in off:
        fail("%s: `spindle fiber off`" % where, off)


def main():
    script, program = sys.argv[1], sys.argv[2]
    for tool in ("gdb", "gcore"):
        if shutil.which(tool) is None:
            fail("%s is not installed (./bazelw and the cmake lane install Debian's gdb)"
                 % tool)
    tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
    # gcore (gdb 13) cannot copy slab stacks guarded by guard markers (Linux 6.13+;
    # spindle.py warns when a core lacks them): the program uses PROT_NONE guard pages,
    # separate mappings that gcore skips cleanly.
    process = subprocess.Popen([program, "--fiber_stack_guard_regions=false"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               universal_newlines=True)
    expectations = []
    pid = None
    try:
        for line in process.stdout:
            line = line.strip()
            match = re.match(r"expect (\d+) (.*?) :: (\w+)$", line)
            if match:
                expectations.append((int(match.group(1)), match.group(2), match.group(3)))
            elif line.startswith("ready "):
                pid = int(line.split()[1])
                break
        if pid is None:
            fail("parked_fibers exited before it was ready (status %s)" % process.wait())
        has_debug_info = b".debug_info" in subprocess.run(
            ["readelf", "-S", "-W", program], stdout=subprocess.PIPE).stdout
        core = os.path.join(tmp, "core")
        result = subprocess.run(["gcore", "-o", core, str(pid)], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, universal_newlines=True,
                                timeout=GDB_TIMEOUT_S)
        core_file = "%s.%d" % (core, pid)
        if result.returncode != 0 or not os.path.exists(core_file):
            fail("gcore could not dump the process (ptrace denied? a container needs "
                 "CAP_SYS_PTRACE or ptrace_scope 0)", result.stdout)
        print("core: %d MB" % (os.path.getsize(core_file) >> 20))

        # The ids are known only from a first listing; run it, then the rest.
        first = run_gdb(script, [program, core_file], ["spindle fibers"])
        rows = parse_listing(sections(first).get("spindle fibers", ""))
        by_function = {}
        for row in rows:
            by_function.setdefault(function_of(row[3]), row[0])
        for function in ("GdbParkOnMutex", "GdbParkOnConditionVariable", "GdbSpin"):
            if function not in by_function:
                fail("core: `spindle fibers` does not list %s" % function, first)
        commands = [
            "spindle fibers",
            "spindle stacks",
            "spindle bt %d" % by_function["GdbParkOnMutex"],
            "spindle fiber %d" % by_function["GdbParkOnConditionVariable"],
            "bt",
            "bt full",
            "frame function GdbParkOnConditionVariable",
            "up",
            "spindle fiber off",
            "spindle fiber %d" % by_function["GdbSpin"],
            "spindle fiber off",
        ]
        from_core = run_gdb(script, [program, core_file], commands)
        print(from_core)
        check(from_core, expectations, has_debug_info, "core")
        os.remove(core_file)
        live = run_gdb(script, [program, "-p", str(pid)], commands)
        print(live)
        check(live, expectations, has_debug_info, "live")
        if process.poll() is not None:
            fail("parked_fibers died while gdb looked at it (status %d)" % process.returncode)
        # The program file alone (no process, no core): a message, not a Python error.
        alone = run_gdb(script, [program], ["spindle fibers"])
        if "no process and no core file" not in alone or "Python Exception" in alone:
            fail("the program file alone: expected the no-process message", alone)
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    print("PASS: %d kinds of fibers found on the core and on the live process"
          % len(expectations))


if __name__ == "__main__":
    main()
