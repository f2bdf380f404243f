"""Test macros: every scheduler-facing test runs under both scheduling strategies, and
under chaos scheduling (runtime/internal/chaos.h) with a seed of its own."""

def _chaos_seed(name, strategy):
    # A stable seed per target and strategy, so a failure names a seed that reproduces
    # its decisions (and two targets do not share one).
    return (hash(name + "/" + strategy) % 1000000007) + 1

def spindle_cc_test(name, size = None, timeout = None, tags = [], chaos = True, **kwargs):
    """A cc_test `name` (strategy v1: runtime_testing.h's TestStrategy() without the
    variable) and an sh_test `name_v2` that runs the same binary with
    SPINDLE_TEST_STRATEGY=v2 (the flag's default), so both strategies are tested.

    With `chaos`, also `name_chaos` and `name_chaos_v2`: the binary under chaos
    scheduling (bazel/run_under_chaos.sh) with strategy v1 and v2, each with its own
    seed (printed by the test: rerun with SPINDLE_TEST_CHAOS_SEED=<seed>)."""
    native.cc_test(name = name, size = size, timeout = timeout, tags = tags, **kwargs)
    native.sh_test(
        name = name + "_v2",
        srcs = ["//bazel:run_under_v2.sh"],
        args = ["$(rootpath :%s)" % name],
        data = [":" + name],
        size = size,
        timeout = timeout,
        tags = tags,
    )
    if not chaos:
        return
    for strategy, suffix in [("v1", "_chaos"), ("v2", "_chaos_v2")]:
        native.sh_test(
            name = name + suffix,
            srcs = ["//bazel:run_under_chaos.sh"],
            args = [strategy, str(_chaos_seed(name, strategy)), "$(rootpath :%s)" % name],
            data = [":" + name],
            size = size,
            timeout = timeout,
            tags = tags + ["chaos"],
        )
