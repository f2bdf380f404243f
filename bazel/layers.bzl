"""Who may depend on each layer's internal packages (../shared/ARCHITECTURE.md;
docs/internals/layout.md, "Layers"): the layer itself and the layers above it, never a
layer below.
Bazel enforces it through each internal package's default_visibility; the includes
themselves are checked by tools/layering_check.py."""

# Users of the public API (the top layer): examples, benchmarks, cross-component tests.
_TOP = [
    "//benchmarks:__pkg__",
    "//examples:__subpackages__",
    "//integrations:__subpackages__",
    "//tests:__pkg__",
]

# Layer 6 (public fiber, runtime and timer APIs) and layer 7 (io).
_PUBLIC_AND_IO = [
    "//fiber:__pkg__",
    "//runtime:__pkg__",
    "//timer:__pkg__",
    "//io:__subpackages__",
] + _TOP

# Layer 1: the execution core; every layer above.
FIBER_INTERNAL_USERS = ["//:__subpackages__"]

# Layer 2: scheduling; not the execution core.
RUNTIME_INTERNAL_USERS = [
    "//runtime/internal:__subpackages__",
    "//timer/internal:__pkg__",
    "//sync:__subpackages__",
] + _PUBLIC_AND_IO

# Layer 3: the TimerWorker; not scheduling or the execution core.
TIMER_INTERNAL_USERS = [
    "//timer/internal:__pkg__",
    "//sync:__subpackages__",
] + _PUBLIC_AND_IO

# Layer 4: the wait queue and the timed park.
SYNC_INTERNAL_USERS = ["//sync:__subpackages__"] + _PUBLIC_AND_IO

# Layer 7: the reactor; only io itself and the top layer.
IO_INTERNAL_USERS = ["//io:__subpackages__"] + _TOP

# Layer 8: integrations/grpc's engine; only the integration itself.
GRPC_INTERNAL_USERS = ["//integrations/grpc:__subpackages__"]
