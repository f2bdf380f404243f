"""The library's levels, and who may depend on each internal package
(../shared/ARCHITECTURE.md; docs/internals/layout.md, "Levels").

LEVELS lists every package of the library with its level, lowest first: a package
depends only on packages of lower levels, so the packages form a ladder that a reader
learns bottom-up. tools/package_cycles_check.py checks it over the BUILD files (every
dependency points to a lower level, and no cycle), tools/layering_check.py over the
#includes. Bazel's visibility (the *_USERS lists below) is the coarse fence around it:
an internal folder is visible to its own kind and the layers above it."""

# (package folder, level, what). A folder not listed takes its parent's level (a test
# helper's package sits where its own dependencies put it).
LEVELS = [
    ("fiber/internal", 1, "the execution core: context switch, stacks, FiberEntity"),
    ("runtime/internal/base", 2, "topology, futex, parker, metric cells, the OS-lock check, FiberDesc, live fibers, ready batches, the foreign producers' gate"),
    ("runtime/internal/seams", 2, "the test seams: chaos mode and the scheduler's test points"),
    ("runtime/internal/queues", 3, "the run queues: bounded MPMC, local SPMC, relaxed, the stage, the wake inbox"),
    ("runtime/internal/idle", 4, "the notifiers, the wait slot, the group's poller and timer plug-ins"),
    ("runtime/internal/strategies", 5, "the scheduling strategies (v1, v2, relaxed, globalfifo) and their registry"),
    ("timer/internal", 5, "the TimerWorker of each group"),
    ("runtime/internal/group", 6, "the scheduling group: its idle path, busy poll, parking, take-back, statistics"),
    ("sync/internal", 6, "the wait queue, the timed park, the stop state"),
    ("runtime/internal/observability", 7, "the fiber dump and its signal, terminate reports"),
    ("runtime/internal", 8, "the FiberWorker, the hog monitor, the runtime assembled from the flags"),
    ("io/internal", 9, "the reactor of each group, the descriptors"),
    ("runtime", 9, "the public runtime API (StartRuntime, metrics)"),
    ("sync", 9, "the primitives, futures"),
    ("timer", 9, "the public timer API (SetTimer)"),
    ("fiber", 10, "the public fiber API (Fiber, this_fiber, Async)"),
    ("io", 11, "fiber-blocking sockets, the blocking pool, the server"),
    ("runtime/internal/testing", 11, "the scheduler's test helpers (over the public runtime)"),
    ("integrations", 12, "Spindle inside other frameworks (gRPC), over the public API"),
]

# benchmarks/, examples/, tests/, tools/: users of the public API.
TOP_LEVEL = 13

# Users of the public API (the top layer): examples, benchmarks, cross-component tests.
_TOP = [
    "//benchmarks:__pkg__",
    "//examples:__subpackages__",
    "//integrations:__subpackages__",
    "//tests:__pkg__",
]

# The public fiber, runtime and timer APIs, and io.
_PUBLIC_AND_IO = [
    "//fiber:__pkg__",
    "//runtime:__pkg__",
    "//timer:__pkg__",
    "//io:__subpackages__",
] + _TOP

# The execution core; every level above.
FIBER_INTERNAL_USERS = ["//:__subpackages__"]

# The scheduler's packages (runtime/internal/...: LEVELS orders them among themselves);
# not the execution core.
RUNTIME_INTERNAL_USERS = [
    "//runtime/internal:__subpackages__",
    "//timer/internal:__pkg__",
    "//sync:__subpackages__",
] + _PUBLIC_AND_IO

# The TimerWorker; not the scheduler or the execution core.
TIMER_INTERNAL_USERS = [
    "//timer/internal:__pkg__",
    "//sync:__subpackages__",
] + _PUBLIC_AND_IO

# The wait queue and the timed park; the runtime's pools wait for room on them.
SYNC_INTERNAL_USERS = [
    "//sync:__subpackages__",
    "//runtime/internal:__pkg__",
] + _PUBLIC_AND_IO

# The reactor; only io itself and the top layer.
IO_INTERNAL_USERS = ["//io:__subpackages__"] + _TOP

# integrations/grpc's engine; only the integration itself.
GRPC_INTERNAL_USERS = ["//integrations/grpc:__subpackages__"]
