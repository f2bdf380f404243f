"""Test macros: every scheduler-facing test runs under every scheduling strategy, and
under chaos scheduling (runtime/internal/seams/chaos.h) with a seed of its own."""

# For target_compatible_with: a target that needs the test seams
# (runtime/internal/seams/test_seams.h) is built and run only under --config=seams (or the
# asan and tsan configs); other builds skip it.
NEEDS_TEST_SEAMS = select({
    "//bazel:test_seams": [],
    "//conditions:default": ["@platforms//:incompatible"],
})

# For target_compatible_with: a model test (//fiber/internal:model_testing) checks the
# protocol code as it ships, without the test seams, and Relacy's own fibers are not
# for the sanitizers; so the models run in builds without the seams (the default
# lane) and are skipped under --config=seams, asan and tsan.
WITHOUT_TEST_SEAMS = select({
    "//bazel:test_seams": ["@platforms//:incompatible"],
    "//conditions:default": [],
})

# For copts: a model (//fiber/internal:model_testing) explores the same interleavings
# however its code is optimized, and Relacy's scheduler and history, compiled into each
# model's sources, run several times faster at -O2 than at the default lane's -O0. The
# model tests and the *_for_models libraries they compile take these copts.
MODEL_COPTS = ["-O2"]

# The strategies other than v1 (the plain cc_test's), each with its twins' suffix.
_OTHER_STRATEGIES = [("v2", "_v2"), ("relaxed", "_relaxed")]

def _chaos_seed(name, strategy):
    # A stable seed per target and strategy, so a failure names a seed that reproduces
    # its decisions (and two targets do not share one).
    return (hash(name + "/" + strategy) % 1000000007) + 1

def spindle_cc_test(
        name,
        size = None,
        timeout = None,
        tags = [],
        chaos = True,
        target_compatible_with = None,
        **kwargs):
    """A cc_test `name` (strategy v1: runtime_testing.h's TestStrategy() without the
    variable) and sh_tests `name_v2` and `name_relaxed` that run the same binary with
    SPINDLE_TEST_STRATEGY=v2 (the flag's default) and =relaxed, so every strategy is
    tested (tagged `strategy_twin`: CI's tsan lane leaves them to the other lanes and
    runs the chaos twins, which cover every strategy there).

    With `chaos`, also `name_chaos`, `name_chaos_v2` and `name_chaos_relaxed`: the binary
    under chaos scheduling (bazel/run_under_chaos.sh) with each strategy, each with its
    own seed (printed by the test: rerun with SPINDLE_TEST_CHAOS_SEED=<seed>). Chaos
    mode is a test seam, so the chaos twins exist only in builds with the seams
    (NEEDS_TEST_SEAMS). `target_compatible_with` applies to the test and its strategy
    twins."""
    native.cc_test(
        name = name,
        size = size,
        timeout = timeout,
        tags = tags,
        target_compatible_with = target_compatible_with,
        **kwargs
    )
    for strategy, suffix in _OTHER_STRATEGIES:
        native.sh_test(
            name = name + suffix,
            srcs = ["//bazel:run_under_strategy.sh"],
            args = [strategy, "$(rootpath :%s)" % name],
            data = [":" + name],
            size = size,
            timeout = timeout,
            tags = tags + ["strategy_twin"],
            target_compatible_with = target_compatible_with,
        )
    if not chaos:
        return
    for strategy, suffix in [("v1", "")] + _OTHER_STRATEGIES:
        native.sh_test(
            name = name + "_chaos" + suffix,
            srcs = ["//bazel:run_under_chaos.sh"],
            args = [strategy, str(_chaos_seed(name, strategy)), "$(rootpath :%s)" % name],
            data = [":" + name],
            size = size,
            timeout = timeout,
            tags = tags + ["chaos"],
            target_compatible_with = NEEDS_TEST_SEAMS,
        )
