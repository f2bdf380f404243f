"""What a Bazel workspace that depends on Spindle needs, declared offline.

In your WORKSPACE, after the repository that holds Spindle:

    local_repository(name = "spindle", path = "/path/to/spindle")
    load("@spindle//bazel:deps.bzl", "spindle_dependencies")
    spindle_dependencies()

Bazel 4's built-in WORKSPACE suffix asks for rules_cc, rules_java and
remote_coverage_tools, and toolchain resolution for platforms; each would be downloaded.
This declares them first, from the stand-ins under Spindle's bazel/ and Debian's
bazel-platforms package, so nothing is fetched. Repositories your WORKSPACE already
declared are left alone. The C++ libraries come from Debian's -dev packages (see
//bazel/third_party and ./bazelw for the list).
"""

def _spindle_stand_in_impl(ctx):
    # The stand-in's files live in Spindle's bazel/<name>/: link them into this
    # repository. Located through a file of Spindle's //bazel package, so this works
    # whatever the user named Spindle's repository.
    bazel_dir = ctx.path(ctx.attr._bazel_package_file).dirname
    source = bazel_dir.get_child(ctx.attr.stand_in)
    if not source.exists:
        fail("spindle_dependencies: %s is missing from Spindle's checkout" % source)
    for child in source.readdir():
        ctx.symlink(child, child.basename)

_spindle_stand_in = repository_rule(
    implementation = _spindle_stand_in_impl,
    attrs = {
        "stand_in": attr.string(mandatory = True),
        "_bazel_package_file": attr.label(default = Label("//bazel:BUILD.bazel")),
    },
    local = True,
)

def spindle_dependencies():
    """Declares the repositories Spindle needs, unless already declared."""
    existing = native.existing_rules()
    for name in ["rules_cc", "rules_java", "remote_coverage_tools"]:
        if name not in existing:
            _spindle_stand_in(name = name, stand_in = name)
    if "platforms" not in existing:
        # Debian's bazel-platforms package (./bazelw installs it).
        native.local_repository(
            name = "platforms",
            path = "/usr/share/bazel/tools/platforms",
        )
