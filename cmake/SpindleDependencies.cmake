# The Debian libraries Spindle builds against, one target each: third_party.<name>, the
# twin of Bazel's //bazel/third_party:<name> (cmake/BazelTargets.cmake names them so).
# For each library that libspindle itself uses, also:
#   SPINDLE_LINK_<name>  the imported targets an installed libspindle links
#   SPINDLE_PC_<name>    the pkg-config modules spindle.pc requires
# Libraries only the tests, models, benchmarks and examples use are looked for only
# when SPINDLE_BUILD_TESTS is on.

include(CMakeFindDependencyMacro)
find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)

# abseil (libabsl-dev), the parts Spindle uses.
find_package(absl CONFIG REQUIRED)
set(SPINDLE_LINK_absl
  absl::statusor absl::status absl::cord absl::synchronization absl::stacktrace
  absl::symbolize absl::time absl::str_format absl::strings absl::int128 absl::base
  absl::raw_logging_internal absl::log_severity)
set(SPINDLE_PC_absl
  absl_statusor absl_status absl_cord absl_synchronization absl_stacktrace
  absl_symbolize absl_time absl_str_format absl_strings absl_int128 absl_base)

# gflags (libgflags-dev): Debian's config names the target plain `gflags`.
find_package(gflags CONFIG REQUIRED)
set(SPINDLE_LINK_gflags gflags)
set(SPINDLE_PC_gflags gflags)

# glog (libgoogle-glog-dev, built against gflags).
find_package(glog CONFIG REQUIRED)
set(SPINDLE_LINK_glog glog::glog)
set(SPINDLE_PC_glog libglog)

# libnuma (libnuma-dev): no CMake config; its pkg-config file.
pkg_check_modules(NUMA REQUIRED IMPORTED_TARGET GLOBAL numa)
set(SPINDLE_LINK_numa PkgConfig::NUMA)
set(SPINDLE_PC_numa numa)

foreach(name absl gflags glog numa)
  add_library(third_party.${name} INTERFACE)
  target_link_libraries(third_party.${name} INTERFACE ${SPINDLE_LINK_${name}})
endforeach()
target_link_libraries(third_party.glog INTERFACE third_party.gflags)

if(SPINDLE_BUILD_TESTS)
  # GoogleTest and GoogleMock (libgtest-dev, libgmock-dev).
  find_package(GTest CONFIG REQUIRED)
  add_library(third_party.gtest INTERFACE)
  target_link_libraries(third_party.gtest INTERFACE GTest::gmock GTest::gtest Threads::Threads)
  add_library(third_party.gtest_main INTERFACE)
  target_link_libraries(third_party.gtest_main INTERFACE GTest::gtest_main third_party.gtest)

  # Google Benchmark (libbenchmark-dev).
  find_package(benchmark CONFIG REQUIRED)
  add_library(third_party.benchmark INTERFACE)
  target_link_libraries(third_party.benchmark INTERFACE benchmark::benchmark Threads::Threads)
  add_library(third_party.benchmark_main INTERFACE)
  target_link_libraries(third_party.benchmark_main INTERFACE benchmark::benchmark_main
    third_party.benchmark)

  # http-parser (libhttp-parser-dev): examples/http_server's parser; no config, no .pc.
  find_path(SPINDLE_HTTP_PARSER_INCLUDE http_parser.h)
  find_library(SPINDLE_HTTP_PARSER_LIBRARY http_parser)
  if(NOT SPINDLE_HTTP_PARSER_INCLUDE OR NOT SPINDLE_HTTP_PARSER_LIBRARY)
    message(FATAL_ERROR "http_parser.h or libhttp_parser not found: install Debian's "
      "libhttp-parser-dev (tools/install_deps.sh does), or configure with "
      "-DSPINDLE_BUILD_TESTS=OFF to build the library alone")
  endif()
  add_library(third_party.http_parser INTERFACE)
  target_include_directories(third_party.http_parser INTERFACE ${SPINDLE_HTTP_PARSER_INCLUDE})
  target_link_libraries(third_party.http_parser INTERFACE ${SPINDLE_HTTP_PARSER_LIBRARY})

  # Relacy (relacy-dev, header-only): the model checker of the model tests.
  find_path(SPINDLE_RELACY_INCLUDE relacy/relacy.hpp)
  if(NOT SPINDLE_RELACY_INCLUDE)
    message(FATAL_ERROR "relacy/relacy.hpp not found: install Debian's relacy-dev "
      "(tools/install_deps.sh does), or configure with -DSPINDLE_BUILD_TESTS=OFF")
  endif()
  add_library(third_party.relacy INTERFACE)
endif()

# gRPC and protobuf (libgrpc++-dev, libprotobuf-dev, protobuf-compiler,
# protobuf-compiler-grpc): integrations/grpc and examples/grpc_fanout. Optional: without
# them (or with -DSPINDLE_GRPC=OFF) those targets are not defined and the rest builds.
# On by default in Spindle's own build, off when Spindle is a subproject (set it ON there
# to build the integration).
option(SPINDLE_GRPC "Build the gRPC integration (integrations/grpc) when gRPC is found"
  ${PROJECT_IS_TOP_LEVEL})
set(SPINDLE_GRPC_FOUND FALSE)
if(SPINDLE_GRPC)
  pkg_check_modules(GRPC IMPORTED_TARGET GLOBAL grpc++ protobuf)
  find_program(SPINDLE_PROTOC protoc)
  find_program(SPINDLE_GRPC_CPP_PLUGIN grpc_cpp_plugin)
  if(GRPC_FOUND AND SPINDLE_PROTOC AND SPINDLE_GRPC_CPP_PLUGIN)
    set(SPINDLE_GRPC_FOUND TRUE)
    add_library(third_party.grpc INTERFACE)
    target_link_libraries(third_party.grpc INTERFACE PkgConfig::GRPC third_party.absl)
  else()
    message(STATUS "gRPC, protoc or grpc_cpp_plugin not found: integrations/grpc and "
      "examples/grpc_fanout are skipped (install libgrpc++-dev, protobuf-compiler and "
      "protobuf-compiler-grpc: tools/install_deps.sh does)")
  endif()
endif()
