"""Test macros: every scheduler-facing test runs under both scheduling strategies."""

def spindle_cc_test(name, size = None, timeout = None, tags = [], **kwargs):
    """A cc_test `name` (strategy v1: runtime_testing.h's TestStrategy() without the
    variable) and an sh_test `name_v2` that runs the same binary with
    SPINDLE_TEST_STRATEGY=v2 (the flag's default), so both strategies are tested."""
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
