# Copyright 2026 The Spindle Authors.
"""Spindle's gdb commands: every fiber of a live process or a core file.

Load them with one line (or put it in ~/.gdbinit):

    (gdb) source /path/to/spindle/tools/gdb/spindle.py

Commands (docs/debugging.md has a walk-through):

    spindle fibers           every fiber: id, state, what it waits on and for how
                             long, its group, its worker or thread, where it is
    info fibers              the same
    spindle bt ID [ARGS]     fiber ID's stack (ARGS go to gdb's `backtrace`: full, -N)
    spindle stacks           every fiber's stack, identical stacks printed once with
                             their count and fiber ids
    spindle fiber ID         show fiber ID's frames in gdb: `bt`, `frame N`, `up`,
                             `info locals` work on them (it selects the fiber's
                             innermost frame; the thread's own are hidden from `bt`)
    spindle fiber off        back to the thread's own frames

How fibers are found, without running code in the process and without debug
information: the runtime keeps one C struct at the symbol `spindle_debug_info`
(fiber/internal/debug_info.h) that gives the control block's layout as offsets, the
saved-context protocol, the state and wait-kind names, where every stack is, and the
clock. Only memory is read, so this works on a core file, on a process that is
deadlocked or crashed, and on `-c opt` builds.

A parked fiber's frames come from its saved context: an unwinder claims the selected
thread's innermost frame and gives gdb the fiber's registers as that frame's caller, so
gdb unwinds the fiber's stack with the program's own call-frame information (locals and
inline frames work where there is debug information); a frame filter hides the thread's
own frame from `bt`. Nothing is written to the process. A running fiber is shown on its
thread: the thread whose stack pointer lies in the fiber's stack.

x86-64 only (the saved-context layout of other CPUs is not described).
"""

import itertools
import os
import re
import struct
import time

import gdb
import gdb.unwinder

# SpindleDebugInfo's fields after the 16-byte magic, in order; each is 8 bytes.
_FIELDS = (
    "version size entity_magic control_block_size stack_header_size stack_live "
    "stack_pinned magic_offset id_offset state_offset wait_kind_offset "
    "wait_object_offset group_offset worker_offset state_since_offset "
    "stack_base_offset stack_size_offset saved_sp_offset state_names state_count "
    "wait_kind_names wait_kind_count saved_pc_offset saved_fp_offset resumed_sp_offset "
    "stacks group_index_offset_plus_one clock_picos_per_tick clock_ticks "
    "clock_monotonic_ns clock_realtime_ns mutex_owner_offset_plus_one "
    "shared_mutex_owner_offset_plus_one"
).split()
_VERSION = 1
_MAGIC = b"spindle-debug"
# Frames shown per fiber at most.
_MAX_FRAMES = 64
# Function-name prefixes of the runtime's own frames (and the standard library's),
# skipped for a fiber's "where"; spindle::examples:: is not the runtime but programs
# using it, so the list shows their frames.
_RUNTIME_PREFIXES = ("spindle::", "std::", "absl::", "spindle_", "__")
_NOT_RUNTIME_PREFIXES = ("spindle::examples::",)


class SpindleError(gdb.GdbError):
    pass


def _read(address, length):
    return bytes(gdb.selected_inferior().read_memory(address, length))


def _u64(address):
    return struct.unpack("<Q", _read(address, 8))[0]


def _c_string(address, limit=64):
    data = _read(address, limit)
    return data.split(b"\0", 1)[0].decode("ascii", "replace")


class Layout(object):
    """spindle_debug_info, read from the inferior."""

    def __init__(self):
        # A program file alone holds the struct's constant part but none of what the
        # runtime writes when it starts (its pointers are not even relocated).
        if gdb.selected_inferior().pid == 0 and _core_file() is None:
            raise SpindleError(
                "no process and no core file: the commands read a running or dumped "
                "runtime (run the program, attach with gdb -p PID, or load a core with "
                "gdb PROGRAM CORE)")
        try:
            address = int(gdb.parse_and_eval("(unsigned long) &spindle_debug_info"))
        except gdb.error:
            raise SpindleError(
                "no Spindle runtime in this program: the symbol spindle_debug_info is "
                "missing (is it a Spindle program, and is a program or core loaded?)")
        head = _read(address, 16)
        if not head.startswith(_MAGIC):
            raise SpindleError("spindle_debug_info at 0x%x has no magic (%r): the memory "
                               "is not a Spindle runtime's, or it is corrupted"
                               % (address, head))
        values = struct.unpack("<%dQ" % len(_FIELDS), _read(address + 16, 8 * len(_FIELDS)))
        for name, value in zip(_FIELDS, values):
            setattr(self, name, value)
        if self.version != _VERSION:
            raise SpindleError("spindle_debug_info version %d; these commands read version "
                               "%d (load the spindle.py of the program's own source tree)"
                               % (self.version, _VERSION))
        if self.resumed_sp_offset == 0:
            raise SpindleError("the saved-context layout of this CPU is not described: "
                               "the commands support x86-64 only")
        self.state_name_list = [_c_string(_u64(self.state_names + 8 * i))
                                for i in range(self.state_count)]
        self.wait_kind_name_list = [_c_string(_u64(self.wait_kind_names + 8 * i))
                                    for i in range(self.wait_kind_count)]


class Fiber(object):
    """One fiber as read from its control block."""

    __slots__ = ("id", "state", "wait_kind", "wait_object", "group", "worker",
                 "state_since", "stack_base", "stack_top", "saved_sp", "thread",
                 "group_index", "owner_note")

    def contains(self, sp):
        return self.stack_base <= sp < self.stack_top


def _regions(layout):
    count, = struct.unpack("<Q", _read(layout.stacks + 8, 8))
    array = _u64(layout.stacks)
    if count == 0 or array == 0:
        return []
    data = _read(array, 32 * count)
    return [struct.unpack_from("<4Q", data, 32 * i) for i in range(count)]


def _parse_fiber(layout, block, top):
    def u(offset, fmt="<Q"):
        return struct.unpack_from(fmt, block, offset)[0]

    live = u(layout.control_block_size - layout.stack_header_size, "<I")
    if live not in (layout.stack_live, layout.stack_pinned):
        return None
    if u(layout.magic_offset) != layout.entity_magic:
        return None
    fiber = Fiber()
    fiber.id = u(layout.id_offset)
    fiber.state = u(layout.state_offset, "<B")
    fiber.wait_kind = u(layout.wait_kind_offset, "<B")
    fiber.wait_object = u(layout.wait_object_offset)
    fiber.group = u(layout.group_offset)
    fiber.worker = u(layout.worker_offset, "<I")
    fiber.state_since = u(layout.state_since_offset)
    fiber.stack_base = u(layout.stack_base_offset)
    fiber.stack_top = fiber.stack_base + u(layout.stack_size_offset)
    fiber.saved_sp = u(layout.saved_sp_offset)
    fiber.thread = None
    fiber.group_index = None
    fiber.owner_note = ""
    if fiber.stack_top != top:
        return None  # a stale or corrupted block
    return fiber


def _threads_by_stack(fibers):
    """Gives each running fiber the gdb thread whose stack pointer is in its stack."""
    inferior = gdb.selected_inferior()
    selected = gdb.selected_thread()
    try:
        for thread in inferior.threads():
            try:
                thread.switch()
                sp = int(gdb.newest_frame().read_register("rsp"))
            except gdb.error:
                continue
            for fiber in fibers:
                if fiber.contains(sp):
                    fiber.thread = thread
                    break
    finally:
        if selected is not None and selected.is_valid():
            selected.switch()


def _core_file():
    """The core file's path when the target is a core, else None."""
    core = re.search(r"Local core dump file:\s*`([^']+)'",
                     gdb.execute("info target", to_string=True))
    return core.group(1) if core else None


_ZEROED_WARNING = (
    "warning: %d of %d stack regions read as all zeros in this core. If fibers are "
    "missing, that is why: gcore (gdb 13) copies memory 1 MiB at a time and writes zeros where a read "
    "fails: stacks guarded by the kernel's guard markers (Linux 6.13+, "
    "--fiber_stack_guard_regions) fail it. A core the kernel writes (a crash, kill "
    "-ABRT) is complete; for gcore, run with --fiber_stack_guard_regions=false, or "
    "attach gdb to the live process instead (docs/debugging.md).\n")


def read_fibers():
    """Every fiber with a stack, ordered by id."""
    layout = Layout()
    fibers = []
    regions = _regions(layout)
    zeroed = 0
    for first, size, stride, count in regions:
        blank = True
        for k in range(count):
            top = first + k * stride + size
            try:
                block = _read(top - layout.control_block_size, layout.control_block_size)
            except gdb.MemoryError:
                continue  # released memory, or left out of the core
            blank = blank and not any(block)
            fiber = _parse_fiber(layout, block, top)
            if fiber is not None:
                fibers.append(fiber)
        zeroed += 1 if blank and count else 0
    # A stack that ever held a fiber keeps its magic after the fiber is gone; a region
    # whose tops are all blank was most likely not copied into the core (or its stacks
    # were never used, or their memory was released).
    if zeroed and _core_file() is not None:
        gdb.write(_ZEROED_WARNING % (zeroed, len(regions)))
    fibers.sort(key=lambda f: f.id)
    offset = layout.group_index_offset_plus_one
    for fiber in fibers:
        if offset and fiber.group and layout.state_name_list[fiber.state] != "ready":
            try:
                fiber.group_index = _u64(fiber.group + offset - 1)
            except gdb.MemoryError:
                pass
        fiber.owner_note = _owner_note(layout, fiber, fibers)
    _threads_by_stack(fibers)
    return layout, fibers


def _owner_note(layout, fiber, fibers):
    """"held by fiber N" for a fiber waiting on a Mutex or SharedMutex whose holder the
    runtime records."""
    kind = layout.wait_kind_name_list[fiber.wait_kind] if fiber.wait_kind < len(
        layout.wait_kind_name_list) else "?"
    offset = {"mutex": layout.mutex_owner_offset_plus_one,
              "shared_mutex": layout.shared_mutex_owner_offset_plus_one}.get(kind, 0)
    if layout.state_name_list[fiber.state] != "waiting" or not offset or not fiber.wait_object:
        return ""
    try:
        owner = _u64(fiber.wait_object + offset - 1)
    except gdb.MemoryError:
        return ""
    if owner == 0:
        return "not held, or held by a plain thread"
    return "held by fiber %d" % owner


def _now_ticks(layout):
    """The cycle clock now (live) or when the core was written; None if not known."""
    if not layout.clock_picos_per_tick:
        return None
    core = _core_file()
    if core:
        try:
            realtime_ns = int(os.stat(core).st_mtime * 1e9)
        except OSError:
            return None
        elapsed_ns = realtime_ns - layout.clock_realtime_ns
    else:
        elapsed_ns = time.clock_gettime_ns(time.CLOCK_MONOTONIC) - layout.clock_monotonic_ns
    return layout.clock_ticks + elapsed_ns * 1000 // layout.clock_picos_per_tick


def _seconds_waiting(layout, fiber, now):
    if now is None or fiber.state_since == 0 or not layout.clock_picos_per_tick:
        return None
    return max(0, now - fiber.state_since) * layout.clock_picos_per_tick / 1e12


def describe_state(layout, fiber, now):
    state = layout.state_name_list[fiber.state] if fiber.state < len(
        layout.state_name_list) else "state %d?" % fiber.state
    if state == "running":
        text = "running on worker %d" % fiber.worker
        if fiber.thread is not None:
            text += " (thread %d)" % fiber.thread.num
        return text
    if state == "waiting":
        kind = layout.wait_kind_name_list[fiber.wait_kind] if fiber.wait_kind < len(
            layout.wait_kind_name_list) else "kind %d?" % fiber.wait_kind
        text = "waiting on " + kind
        if fiber.wait_object and kind == "join":
            # A join's wait object is the joined fiber's id (fiber_entity.h).
            try:
                text += " of fiber %d" % _u64(fiber.wait_object)
            except gdb.MemoryError:
                text += " 0x%x" % fiber.wait_object
        elif fiber.wait_object:
            text += " 0x%x" % fiber.wait_object
        if fiber.owner_note:
            text += " (%s)" % fiber.owner_note
        seconds = _seconds_waiting(layout, fiber, now)
        if seconds is not None:
            text += " for %.1f s" % seconds
        return text
    if state == "ready":
        return "ready"
    return "exiting" if state == "dead" else state


# --- Frames --------------------------------------------------------------------------


class _FrameId(object):
    def __init__(self, sp, pc):
        self.sp = sp
        self.pc = pc


class FiberUnwinder(gdb.unwinder.Unwinder):
    """While a fiber is selected: the selected thread's innermost frame unwinds to the
    fiber's saved registers."""

    def __init__(self):
        super(FiberUnwinder, self).__init__("spindle-fiber")
        self.thread = None     # the gdb thread (global number) it applies to
        self.thread_sp = None  # that thread's stack pointer
        self.registers = None  # rip, rsp, rbp of the fiber's innermost frame
        self.claimed = None    # the level of the frame it claimed

    def __call__(self, pending_frame):
        # The thread's innermost real frame: its registers are the thread's. (gdb asks
        # no unwinder for inline frames, so that is level 0, or 1 and up below frames
        # inlined into it.) gdb asks this for every frame it unwinds: the cheap tests
        # come first (once a frame is claimed, every other level is declined without
        # reading a register: listing 10,000 fibers took twice as long before).
        if self.registers is None:
            return None
        if self.claimed is not None and pending_frame.level() != self.claimed:
            return None
        thread = gdb.selected_thread()
        if thread is None or thread.global_num != self.thread:
            return None
        if int(pending_frame.read_register("rsp")) != self.thread_sp:
            return None
        self.claimed = pending_frame.level()
        sp_type = pending_frame.read_register("rsp").type
        pc = pending_frame.read_register("rip")
        frame_id = _FrameId(gdb.Value(self.registers["saved_sp"]).cast(sp_type), pc)
        info = pending_frame.create_unwind_info(frame_id)
        for name in ("rip", "rsp", "rbp"):
            value_type = pending_frame.read_register(name).type
            info.add_saved_register(name, gdb.Value(self.registers[name]).cast(value_type))
        return info


class HideThreadFrame(object):
    """Frame filter: while a fiber is selected, `bt` leaves out the thread's frames (#0,
    and the frames inlined into it)."""

    def __init__(self, unwinder):
        self.name = "spindle-fiber"
        self.priority = 100
        self.enabled = True
        self.unwinder = unwinder

    def filter(self, frame_iter):
        thread = gdb.selected_thread()
        if self.unwinder.registers is None or thread is None or \
                thread.global_num != self.unwinder.thread:
            return frame_iter
        return itertools.dropwhile(lambda d: self.unwinder.claimed is None or
                                   d.inferior_frame().level() <= self.unwinder.claimed,
                                   frame_iter)


_UNWINDER = FiberUnwinder()
gdb.unwinder.register_unwinder(None, _UNWINDER, replace=True)
gdb.frame_filters["spindle-fiber"] = HideThreadFrame(_UNWINDER)


def _saved_registers(layout, fiber):
    sp = fiber.saved_sp
    if not fiber.contains(sp):
        raise SpindleError("fiber %d's saved stack pointer 0x%x is outside its stack "
                           "[0x%x, 0x%x)" % (fiber.id, sp, fiber.stack_base, fiber.stack_top))
    return {"saved_sp": sp,
            "rip": _u64(sp + layout.saved_pc_offset),
            "rbp": _u64(sp + layout.saved_fp_offset),
            "rsp": sp + layout.resumed_sp_offset}


def activate(layout, fiber):
    """Makes the selected thread's frames, from #1, fiber's (a parked fiber)."""
    deactivate()
    _UNWINDER.thread_sp = int(gdb.newest_frame().read_register("rsp"))
    _UNWINDER.registers = _saved_registers(layout, fiber)
    _UNWINDER.thread = gdb.selected_thread().global_num
    _UNWINDER.claimed = None
    gdb.invalidate_cached_frames()


def first_fiber_frame():
    """The selected fiber's innermost frame (the unwinder active), or None."""
    frame = gdb.newest_frame()
    while frame is not None and (_UNWINDER.claimed is None or
                                 frame.level() <= _UNWINDER.claimed):
        frame = frame.older()
    return frame


def deactivate():
    if _UNWINDER.registers is not None:
        _UNWINDER.registers = None
        _UNWINDER.thread = None
        _UNWINDER.claimed = None
        gdb.invalidate_cached_frames()


def _frame_line(frame):
    name = frame.name() or "??"
    line = "0x%016x in %s" % (frame.pc(), name)
    try:
        sal = frame.find_sal()
        if sal.symtab is not None and sal.line:
            line += " at %s:%d" % (sal.symtab.filename, sal.line)
    except gdb.error:
        pass
    return line


def _thread_frames_in(fiber):
    """A running fiber's frames: those of its thread whose stack pointer is in its
    stack (the worker's own frames are below it)."""
    frames = []
    frame = gdb.newest_frame()
    while frame is not None and len(frames) < _MAX_FRAMES:
        try:
            sp = int(frame.read_register("rsp"))
        except gdb.error:
            break
        if fiber.contains(sp):
            frames.append(frame)
        elif frames:
            break
        frame = frame.older()
    return frames


def fiber_frames(layout, fiber, until=None):
    """The fiber's frames as (pc, text) pairs, innermost first; with `until` (a
    predicate on a frame's text), only as far as the first frame it accepts."""
    if fiber.thread is not None:
        selected = gdb.selected_thread()
        try:
            fiber.thread.switch()
            return [(f.pc(), _frame_line(f)) for f in _thread_frames_in(fiber)]
        finally:
            selected.switch()
    if layout.state_name_list[fiber.state] == "running":
        return []  # running, but on no thread we can see (being switched)
    activate(layout, fiber)
    frames = []
    try:
        frame = first_fiber_frame()
        while frame is not None and len(frames) < _MAX_FRAMES:
            frames.append((frame.pc(), _frame_line(frame)))
            if until is not None and until(frames[-1][1]):
                break
            try:
                frame = frame.older()
            except gdb.error:
                break
    except gdb.error as error:
        frames.append((0, "(unwinding failed: %s)" % error))
    finally:
        deactivate()
    return frames


def _qualified_name(name):
    """A demangled function's qualified name, without its return type, template
    arguments and parameters: "bool ns::F<long, x<1> >(int)" -> "ns::F"."""
    depth = 0
    bare = []
    for char in name.split(" at ", 1)[0]:
        if char == "<":
            depth += 1
        elif char == ">":
            depth = max(0, depth - 1)
        elif depth == 0:
            if char == "(":
                break
            bare.append(char)
    words = "".join(bare).split()
    return words[-1] if words else name


def _outside_runtime(text):
    """Whether a frame's text (_frame_line) is a frame of the program's own code."""
    name = text.split(" in ", 1)[-1]
    if name.startswith("??"):
        return False
    qualified = _qualified_name(name)
    return qualified.startswith(_NOT_RUNTIME_PREFIXES) or \
        not qualified.startswith(_RUNTIME_PREFIXES)


def where(frames):
    """The innermost frame outside the runtime, for the list."""
    for _, text in frames:
        if _outside_runtime(text):
            return text.split(" in ", 1)[-1]
    return frames[0][1].split(" in ", 1)[-1] if frames else "-"


def _find(fibers, argument):
    try:
        wanted = int(gdb.parse_and_eval(argument))
    except gdb.error:
        raise SpindleError("expected a fiber id, got %r" % argument)
    for fiber in fibers:
        if fiber.id == wanted:
            return fiber
    raise SpindleError("no fiber %d (`spindle fibers` lists them)" % wanted)


# --- Commands ------------------------------------------------------------------------


class SpindlePrefix(gdb.Command):
    """Spindle's commands: spindle fibers, spindle bt ID, spindle stacks, spindle fiber
ID|off."""

    def __init__(self):
        super(SpindlePrefix, self).__init__("spindle", gdb.COMMAND_STACK, prefix=True)


def _list_fibers():
    layout, fibers = read_fibers()
    now = _now_ticks(layout)
    gdb.write("%d fibers with a stack (fibers still queued to start have none)\n"
              % len(fibers))
    gdb.write("%8s  %-5s  %s  ::  %s\n" % ("id", "group", "state", "where"))
    for fiber in fibers:
        group = "-" if fiber.group_index is None else str(fiber.group_index)
        gdb.write("%8d  %-5s  %s  ::  %s\n" % (
            fiber.id, group, describe_state(layout, fiber, now),
            where(fiber_frames(layout, fiber, until=_outside_runtime))))


class SpindleFibers(gdb.Command):
    """Lists every fiber: id, scheduling group, state (what it waits on, for how long;
or the worker and gdb thread it runs on), and the innermost frame outside the runtime."""

    def __init__(self):
        super(SpindleFibers, self).__init__("spindle fibers", gdb.COMMAND_STACK)

    def invoke(self, argument, from_tty):
        _list_fibers()


class InfoFibers(gdb.Command):
    """Lists every Spindle fiber (as `spindle fibers`)."""

    def __init__(self):
        super(InfoFibers, self).__init__("info fibers", gdb.COMMAND_STATUS)

    def invoke(self, argument, from_tty):
        _list_fibers()


class SpindleBt(gdb.Command):
    """spindle bt ID [ARGS]: fiber ID's stack. ARGS go to gdb's backtrace (full, -N...);
a running fiber's stack is that of its thread, from the frames on the fiber's stack."""

    def __init__(self):
        super(SpindleBt, self).__init__("spindle bt", gdb.COMMAND_STACK)

    def invoke(self, argument, from_tty):
        args = gdb.string_to_argv(argument)
        if not args:
            raise SpindleError("usage: spindle bt ID [backtrace arguments]")
        layout, fibers = read_fibers()
        fiber = _find(fibers, args[0])
        gdb.write("fiber %d, %s\n" % (fiber.id, describe_state(layout, fiber,
                                                                _now_ticks(layout))))
        if fiber.thread is not None:
            selected = gdb.selected_thread()
            fiber.thread.switch()
            try:
                for level, frame in enumerate(_thread_frames_in(fiber)):
                    gdb.write("#%-3d %s\n" % (level, _frame_line(frame)))
            finally:
                selected.switch()
            return
        activate(layout, fiber)
        try:
            gdb.execute("backtrace " + " ".join(args[1:]))
        finally:
            deactivate()


class SpindleStacks(gdb.Command):
    """Every fiber's stack; fibers with identical stacks are printed once, with their
count and ids, the biggest group first."""

    def __init__(self):
        super(SpindleStacks, self).__init__("spindle stacks", gdb.COMMAND_STACK)

    def invoke(self, argument, from_tty):
        layout, fibers = read_fibers()
        now = _now_ticks(layout)
        groups = {}
        for fiber in fibers:
            frames = fiber_frames(layout, fiber)
            state = describe_state(layout, fiber, now)
            kind = re.sub(r" 0x[0-9a-f]+| for [0-9.]+ s|\(.*\)", "", state).strip()
            key = (kind, tuple(pc for pc, _ in frames))
            entry = groups.setdefault(key, {"ids": [], "frames": frames})
            entry["ids"].append(fiber.id)
        ordered = sorted(groups.items(), key=lambda item: (-len(item[1]["ids"]), item[0]))
        gdb.write("%d fibers, %d distinct stacks\n" % (len(fibers), len(ordered)))
        for (kind, _), entry in ordered:
            ids = entry["ids"]
            shown = ", ".join(str(i) for i in ids[:20]) + (", ..." if len(ids) > 20 else "")
            gdb.write("\n%d fiber%s %s: %s\n" % (len(ids), "" if len(ids) == 1 else "s",
                                                kind, shown))
            for level, (_, text) in enumerate(entry["frames"]):
                gdb.write("  #%-3d %s\n" % (level, text))


class SpindleFiber(gdb.Command):
    """spindle fiber ID: show fiber ID's frames in gdb, so that bt, frame N, up, down and
info locals work on them. It selects the fiber's innermost frame, numbered after the
thread's own innermost frames (hidden from bt). A running fiber: switches to its thread and frame.
spindle fiber off: back to the threads' own frames."""

    def __init__(self):
        super(SpindleFiber, self).__init__("spindle fiber", gdb.COMMAND_STACK)

    def invoke(self, argument, from_tty):
        argument = argument.strip()
        if argument in ("off", ""):
            deactivate()
            if argument == "":
                raise SpindleError("usage: spindle fiber ID | spindle fiber off")
            gdb.write("back to the threads' own frames\n")
            return
        layout, fibers = read_fibers()
        fiber = _find(fibers, argument)
        deactivate()
        if fiber.thread is not None:
            fiber.thread.switch()
            frames = _thread_frames_in(fiber)
            gdb.write("fiber %d is running on thread %d (now selected); its frames there:\n"
                      % (fiber.id, fiber.thread.num))
            for frame in frames:
                gdb.write("#%-3d %s\n" % (frame.level(), _frame_line(frame)))
            if frames:
                frames[0].select()
            return
        if layout.state_name_list[fiber.state] == "running":
            raise SpindleError("fiber %d is running but on no thread's stack (it is being "
                               "switched)" % fiber.id)
        activate(layout, fiber)
        gdb.write("fiber %d, %s; `spindle fiber off` to leave\n"
                  % (fiber.id, describe_state(layout, fiber, _now_ticks(layout))))
        frame = first_fiber_frame()
        if frame is None:
            raise SpindleError("could not unwind to fiber %d's frames" % fiber.id)
        gdb.execute("frame %d" % frame.level())


# A new objfile or a continued process makes a selection stale.
def _forget(_event):
    deactivate()


gdb.events.cont.connect(_forget)
gdb.events.new_objfile.connect(_forget)

SpindlePrefix()
SpindleFibers()
InfoFibers()
SpindleBt()
SpindleStacks()
SpindleFiber()
