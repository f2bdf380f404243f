#!/usr/bin/env bash
# Installs the Debian packages Spindle's builds and tests need, those that are missing:
# Bazel's (./bazelw runs this first) and CMake's. Idempotent; says in one line that
# nothing was missing (unless SPINDLE_DEPS_QUIET=1, as ./bazelw sets it); needs root or
# sudo and Debian's mirror when something is. Nothing else is downloaded. Usage, from
# anywhere: /path/to/spindle/tools/install_deps.sh [EXTRA_PACKAGE...]; the extra
# packages are tools a lane needs beyond the builds (clang, for the thread-safety
# analysis and the doc-comment check).
set -euo pipefail

packages=(
  bazel-bootstrap     # Bazel 4.2.3
  bazel-platforms     # the @platforms repository, used offline
  cmake               # the CMake build (CMakeLists.txt), 3.25
  ninja-build         # its generator
  pkgconf             # pkg-config: libnuma for CMake, spindle.pc's consumers
  g++
  libnuma-dev
  libabsl-dev
  libgflags-dev
  libgoogle-glog-dev
  libgtest-dev
  libgmock-dev
  libbenchmark-dev
  libhttp-parser-dev  # examples/http_server
  libgrpc++-dev       # integrations/grpc and examples/grpc_fanout (gRPC 1.51)
  libprotobuf-dev
  protobuf-compiler   # protoc, run at build time (bazel/grpc.bzl)
  protobuf-compiler-grpc  # grpc_cpp_plugin
  python3-matplotlib  # tools/scaling_chart.py and its test (and python3, for tools/)
  relacy-dev          # the model tests (//fiber/internal:model_testing)
  gdb                 # tools/gdb's commands and their test (gdb and gcore)
  "$@"
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "install_deps: installing missing Debian packages: ${missing[*]}" >&2
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq >&2
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
  echo "install_deps: installed ${#missing[@]} package(s)" >&2
elif [ "${SPINDLE_DEPS_QUIET:-0}" != 1 ]; then
  echo "install_deps: all ${#packages[@]} packages Spindle needs are installed" >&2
fi
