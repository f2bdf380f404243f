// Copyright 2026 The Spindle Authors.
//
// Spindle's version: the one place that holds it. CMake's project() reads it from here
// (CMakeLists.txt), and so do spindle.pc, the CMake package's version file and the
// shared library's soname; CHANGELOG.md's newest heading names the same version
// (tools/bazel_to_cmake.py --check fails when they differ). Semantic versioning: while
// the major version is 0, a minor version may change the API and the ABI (the soname is
// libspindle.so.0.<minor>).
//
//   #include "spindle/version.h"   // installed (CMake, pkg-config)
//   #include "version.h"           // in Bazel, from @spindle//:spindle
//   static_assert(SPINDLE_VERSION >= SPINDLE_VERSION_OF(0, 1, 0));

#ifndef SPINDLE_VERSION_H_
#define SPINDLE_VERSION_H_

#define SPINDLE_VERSION_MAJOR 0
#define SPINDLE_VERSION_MINOR 1
#define SPINDLE_VERSION_PATCH 0

// A version as one comparable number: 1.2.3 is 10203.
#define SPINDLE_VERSION_OF(major, minor, patch) \
  ((major) * 10000 + (minor) * 100 + (patch))
#define SPINDLE_VERSION \
  SPINDLE_VERSION_OF(SPINDLE_VERSION_MAJOR, SPINDLE_VERSION_MINOR, SPINDLE_VERSION_PATCH)

#define SPINDLE_VERSION_STRINGIFY_(x) #x
#define SPINDLE_VERSION_STRINGIFY(x) SPINDLE_VERSION_STRINGIFY_(x)
// "0.1.0".
#define SPINDLE_VERSION_STRING                         \
  SPINDLE_VERSION_STRINGIFY(SPINDLE_VERSION_MAJOR) "." \
  SPINDLE_VERSION_STRINGIFY(SPINDLE_VERSION_MINOR) "." \
  SPINDLE_VERSION_STRINGIFY(SPINDLE_VERSION_PATCH)

#endif  // SPINDLE_VERSION_H_
