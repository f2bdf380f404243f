"""spindle_grpc_proto_library: C++ messages and gRPC stubs from one .proto file,
generated at build time by Debian's protoc and grpc_cpp_plugin (protobuf-compiler,
protobuf-compiler-grpc; ./bazelw installs them), offline.

    load("//bazel:grpc.bzl", "spindle_grpc_proto_library")
    spindle_grpc_proto_library(name = "fanout_proto", src = "fanout.proto")

gives the cc_library `fanout_proto` with fanout.pb.h and fanout.grpc.pb.h, included by
their path from the workspace root ("examples/grpc_fanout/fanout.grpc.pb.h"). The .proto
may import only files of Debian's protobuf (google/protobuf/...). tools/bazel_to_cmake.py
mirrors the macro as cmake/SpindleRules.cmake's spindle_grpc_proto_library.
"""

def spindle_grpc_proto_library(name, src, visibility = None, testonly = False, tags = []):
    base = src[:-len(".proto")]
    prefix = native.package_name() + "/" + base if native.package_name() else base
    outs = [base + ext for ext in [".pb.h", ".pb.cc", ".grpc.pb.h", ".grpc.pb.cc"]]
    native.genrule(
        name = name + "_generate",
        srcs = [src],
        outs = outs,
        cmd = ("/usr/bin/protoc -I. --cpp_out=$(GENDIR) --grpc_out=$(GENDIR) " +
               "--plugin=protoc-gen-grpc=/usr/bin/grpc_cpp_plugin $(location %s)") % src,
        testonly = testonly,
        tags = tags,
        visibility = ["//visibility:private"],
    )
    native.cc_library(
        name = name,
        srcs = [base + ".pb.cc", base + ".grpc.pb.cc"],
        hdrs = [base + ".pb.h", base + ".grpc.pb.h"],
        # Generated code: not held to the project's warnings.
        copts = ["-Wno-unused-parameter"],
        testonly = testonly,
        tags = tags,
        visibility = visibility,
        deps = ["//bazel/third_party:grpc"],
    )
