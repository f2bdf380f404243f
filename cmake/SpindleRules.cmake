# The CMake twins of Bazel's rules, for cmake/BazelTargets.cmake (which
# tools/bazel_to_cmake.py writes from the BUILD files). Each Bazel target //pkg:name is
# the CMake target pkg.name (//:name is top.name); every path is relative to the
# repository.
#
# A library L (cc_library) is three targets:
#   L.usage  INTERFACE: what compiling against L needs (the include root, L's defines,
#            its dependencies' usage, its third-party libraries and link options);
#   L.objs   OBJECT: L's sources compiled once (position-independent, so the same
#            objects make libspindle.a and libspindle.so too);
#   L        what a statically linked target links: a STATIC library of L.objs (an
#            INTERFACE one if L has no sources; with ALWAYSLINK, an INTERFACE one that
#            links the archive L.archive whole, as Bazel's alwayslink does).
# Tests link the way Bazel links them: a cc_test every object of its dependencies
# (Bazel links tests against each library's shared object, so every object is in), a
# LINKSTATIC test and a cc_binary the archives (only the objects that define a symbol
# used, which the model tests rely on).
#
# A target whose Bazel twin is incompatible with this configuration (NEEDS_TEST_SEAMS
# without SPINDLE_TEST_SEAMS, WITHOUT_TEST_SEAMS with it) is not defined, and neither is
# any target that depends on one; tests, test-only libraries and binaries are defined
# only with SPINDLE_BUILD_TESTS. Targets are declared in dependency order, so "depends on
# a target that is not defined" means "skipped", as Bazel skips incompatible targets.

set(SPINDLE_WARNING_FLAGS -Wall -Wextra)
if(SPINDLE_WERROR)
  list(APPEND SPINDLE_WARNING_FLAGS -Werror)
endif()
# Frame pointers keep perf and the fiber dump readable (as .bazelrc). __FILE__ is the
# path from the repository root, as in Bazel (flags name their defining file so:
# configs/default_flags_test tells the library's flags by it).
set(SPINDLE_COMMON_FLAGS -fno-omit-frame-pointer
  "-fmacro-prefix-map=${SPINDLE_SOURCE_DIR}/=")

# SPINDLE_LTO_TESTS (CMakeLists.txt): the library's objects also carry GCC's LTO form
# (-flto -ffat-lto-objects: the ordinary code stays, so every other link is unchanged),
# and each test tagged "lto" gets a twin NAME_lto (and its strategy twins) compiled and
# linked with -flto, where the switch code, the runtime's thread-local accessors and the
# test are optimised as one program: the bug class of a compiler caching a thread-local's
# address across a fiber switch (tests/fiber_migration_test.cc).
set(SPINDLE_LTO_FLAGS -flto=auto -ffat-lto-objects)

# Bazel's test sizes as ctest labels; the rest of a test's tags become labels too.
set(SPINDLE_TEST_TMP_ROOT "${CMAKE_BINARY_DIR}/Testing/tmp")

function(_spindle_compatible out)
  cmake_parse_arguments(C "REQUIRES_SEAMS;WITHOUT_SEAMS;TESTONLY;TEST" "" "DEPS" ${ARGN})
  set(ok TRUE)
  if(C_REQUIRES_SEAMS AND NOT SPINDLE_TEST_SEAMS)
    set(ok FALSE)
  endif()
  if(C_WITHOUT_SEAMS AND SPINDLE_TEST_SEAMS)
    set(ok FALSE)
  endif()
  if((C_TESTONLY OR C_TEST) AND NOT SPINDLE_BUILD_TESTS)
    set(ok FALSE)
  endif()
  foreach(dep IN LISTS C_DEPS)
    if(NOT TARGET ${dep})
      set(ok FALSE)
    endif()
  endforeach()
  set(${out} ${ok} PARENT_SCOPE)
endfunction()

# `out` = those of the flags named after it that the caller's parsed arguments set
# (A_<flag>), to hand on to _spindle_compatible.
macro(_spindle_set_flags out)
  set(${out})
  foreach(_spindle_flag ${ARGN})
    if(A_${_spindle_flag})
      list(APPEND ${out} ${_spindle_flag})
    endif()
  endforeach()
endmacro()

# The usage target of a dependency: L.usage for a workspace library, the target itself
# for a third-party one.
function(_spindle_usage out)
  set(result)
  foreach(dep IN LISTS ARGN)
    if(TARGET ${dep}.usage)
      list(APPEND result ${dep}.usage)
    else()
      list(APPEND result ${dep})
    endif()
  endforeach()
  set(${out} ${result} PARENT_SCOPE)
endfunction()

# Every workspace library `names` reach (themselves included), from the dependency
# lists spindle_cc_library records.
function(_spindle_closure out)
  set(seen)
  set(stack ${ARGN})
  while(stack)
    list(POP_BACK stack name)
    if(name IN_LIST seen OR NOT TARGET ${name}.usage)
      continue()
    endif()
    list(APPEND seen ${name})
    get_property(deps GLOBAL PROPERTY SPINDLE_DEPS_${name})
    list(APPEND stack ${deps})
  endwhile()
  list(SORT seen)
  set(${out} ${seen} PARENT_SCOPE)
endfunction()

# Paths relative to the repository -> absolute (generator expressions and
# ${SPINDLE_GEN_DIR} outputs pass through).
function(_spindle_paths out)
  set(result)
  foreach(path IN LISTS ARGN)
    if(path MATCHES "^(\\$<|/)")
      list(APPEND result "${path}")
    else()
      list(APPEND result "${SPINDLE_SOURCE_DIR}/${path}")
    endif()
  endforeach()
  set(${out} ${result} PARENT_SCOPE)
endfunction()

function(spindle_cc_library name)
  cmake_parse_arguments(A "ALWAYSLINK;TESTONLY;REQUIRES_SEAMS;WITHOUT_SEAMS" ""
    "SRCS;HDRS;DEPS;DEFINES;COPTS;LINKOPTS" ${ARGN})
  _spindle_set_flags(compat_flags TESTONLY REQUIRES_SEAMS WITHOUT_SEAMS)
  _spindle_compatible(ok ${compat_flags} DEPS ${A_DEPS})
  if(NOT ok)
    return()
  endif()
  set_property(GLOBAL PROPERTY SPINDLE_DEPS_${name} ${A_DEPS})

  add_library(${name}.usage INTERFACE)
  target_include_directories(${name}.usage INTERFACE ${SPINDLE_SOURCE_DIR})
  target_compile_definitions(${name}.usage INTERFACE ${A_DEFINES})
  _spindle_usage(dep_usage ${A_DEPS})
  target_link_libraries(${name}.usage INTERFACE ${dep_usage} ${A_LINKOPTS})

  _spindle_paths(srcs ${A_SRCS})
  _spindle_paths(hdrs ${A_HDRS})
  set(compiled ${srcs})
  list(FILTER compiled INCLUDE REGEX "\\.(cc|cpp|c|S)>?$")
  if(NOT compiled)
    add_library(${name} INTERFACE)
    target_link_libraries(${name} INTERFACE ${name}.usage ${A_DEPS})
    return()
  endif()

  add_library(${name}.objs OBJECT ${srcs} ${hdrs})
  target_compile_options(${name}.objs PRIVATE ${SPINDLE_COMMON_FLAGS}
    ${SPINDLE_WARNING_FLAGS} ${A_COPTS})
  if(SPINDLE_LTO_TESTS)
    target_compile_options(${name}.objs PRIVATE ${SPINDLE_LTO_FLAGS})
  endif()
  target_link_libraries(${name}.objs PUBLIC ${name}.usage)
  set_property(GLOBAL PROPERTY SPINDLE_OBJS_${name} ${name}.objs)

  if(A_ALWAYSLINK)
    add_library(${name}.archive STATIC $<TARGET_OBJECTS:${name}.objs>)
    target_link_libraries(${name}.archive PUBLIC ${name}.usage ${A_DEPS})
    add_library(${name} INTERFACE)
    target_link_libraries(${name} INTERFACE
      "$<LINK_LIBRARY:WHOLE_ARCHIVE,${name}.archive>" ${name}.usage)
  else()
    add_library(${name} STATIC $<TARGET_OBJECTS:${name}.objs>)
    target_link_libraries(${name} PUBLIC ${name}.usage ${A_DEPS})
  endif()
endfunction()

# Links an executable to `deps` as a Bazel test (every object of the closure) or, with
# static_link, as a static binary (the archives).
function(_spindle_link_executable target static_link)
  set(deps ${ARGN})
  if(static_link)
    target_link_libraries(${target} PRIVATE ${deps})
    return()
  endif()
  _spindle_closure(closure ${deps})
  set(objs)
  foreach(lib IN LISTS closure)
    get_property(obj GLOBAL PROPERTY SPINDLE_OBJS_${lib})
    if(obj)
      list(APPEND objs ${obj})
    endif()
  endforeach()
  _spindle_usage(usage ${deps})
  target_link_libraries(${target} PRIVATE ${objs} ${usage})
endfunction()

function(_spindle_executable name output_name)
  cmake_parse_arguments(E "LINKSTATIC" "" "SRCS;DEPS;COPTS;LINKOPTS" ${ARGN})
  _spindle_paths(srcs ${E_SRCS})
  add_executable(${name} ${srcs})
  string(REGEX REPLACE "\\.[^.]+$" "" package "${name}")
  string(REPLACE "." "/" package "${package}")
  set_target_properties(${name} PROPERTIES OUTPUT_NAME ${output_name}
    RUNTIME_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/bin/${package}")
  target_compile_options(${name} PRIVATE ${SPINDLE_COMMON_FLAGS} ${SPINDLE_WARNING_FLAGS}
    ${E_COPTS})
  target_include_directories(${name} PRIVATE ${SPINDLE_SOURCE_DIR})
  # Bound at load, as Bazel's toolchain links (-z now): see CMakeLists.txt's spindle.
  target_link_options(${name} PRIVATE -Wl,-z,relro,-z,now ${E_LINKOPTS})
  if(E_LINKSTATIC)
    _spindle_link_executable(${name} TRUE ${E_DEPS})
  else()
    _spindle_link_executable(${name} FALSE ${E_DEPS})
  endif()
endfunction()

# One ctest entry (or one per shard, GoogleTest's sharding variables set as Bazel sets
# them), run from the repository root as Bazel runs tests from the runfiles root, with
# a fresh TEST_TMPDIR of its own (cmake/run_test.sh) and Bazel's TEST_TIMEOUT.
function(_spindle_add_test test_name)
  cmake_parse_arguments(T "" "SIZE;TIMEOUT;SHARDS" "TAGS;ENV;COMMAND" ${ARGN})
  if("manual" IN_LIST T_TAGS)
    return()
  endif()
  if(NOT T_SHARDS)
    set(T_SHARDS 1)
  endif()
  math(EXPR last "${T_SHARDS} - 1")
  foreach(shard RANGE ${last})
    set(entry "${test_name}")
    set(env ${T_ENV})
    if(T_SHARDS GREATER 1)
      math(EXPR number "${shard} + 1")
      set(entry "${test_name}/shard_${number}_of_${T_SHARDS}")
      list(APPEND env GTEST_TOTAL_SHARDS=${T_SHARDS} GTEST_SHARD_INDEX=${shard})
    endif()
    # The entry's name made a folder name, with a hash of the name so that two entries
    # whose names differ only in the characters replaced never share one.
    string(REGEX REPLACE "[^A-Za-z0-9_.-]" "_" tmp "${entry}")
    string(MD5 hash "${entry}")
    string(SUBSTRING "${hash}" 0 8 hash)
    set(tmp "${SPINDLE_TEST_TMP_ROOT}/${tmp}.${hash}")
    # COMMAND_EXPAND_LISTS: an argument a select() leaves empty is no argument at all.
    # run_test.sh empties TEST_TMPDIR first, as Bazel gives each run a fresh one.
    add_test(NAME "${entry}" COMMAND bash ${SPINDLE_SOURCE_DIR}/cmake/run_test.sh
      ${T_COMMAND} WORKING_DIRECTORY ${SPINDLE_SOURCE_DIR} COMMAND_EXPAND_LISTS)
    set(labels ${T_SIZE} ${T_TAGS})
    list(REMOVE_ITEM labels exclusive)
    set_tests_properties("${entry}" PROPERTIES TIMEOUT ${T_TIMEOUT} LABELS "${labels}"
      ENVIRONMENT "TEST_TMPDIR=${tmp};TEST_TIMEOUT=${T_TIMEOUT};${env}")
    if("exclusive" IN_LIST T_TAGS)
      set_tests_properties("${entry}" PROPERTIES RUN_SERIAL TRUE)
    endif()
  endforeach()
endfunction()

# cc_test, and spindle_cc_test (bazel/testing.bzl) with STRATEGY_TWINS and CHAOS_SEEDS:
# the entries LABEL, LABEL_v2 and LABEL_relaxed (bazel/run_under_strategy.sh), and with
# the test seams LABEL_chaos, LABEL_chaos_v2, LABEL_chaos_relaxed
# (bazel/run_under_chaos.sh with Bazel's seeds).
function(spindle_cc_test name)
  cmake_parse_arguments(A "LINKSTATIC;STRATEGY_TWINS;REQUIRES_SEAMS;WITHOUT_SEAMS"
    "LABEL;SIZE;TIMEOUT;SHARDS" "SRCS;DEPS;COPTS;LINKOPTS;ARGS;TAGS;CHAOS_SEEDS" ${ARGN})
  _spindle_set_flags(compat_flags REQUIRES_SEAMS WITHOUT_SEAMS)
  _spindle_compatible(ok TEST ${compat_flags} DEPS ${A_DEPS})
  if(NOT ok)
    return()
  endif()
  string(REGEX REPLACE "^.*:" "" output_name "${A_LABEL}")
  set(link)
  if(A_LINKSTATIC)
    set(link LINKSTATIC)
  endif()
  _spindle_executable(${name} ${output_name} ${link} SRCS ${A_SRCS} DEPS ${A_DEPS}
    COPTS ${A_COPTS} LINKOPTS ${A_LINKOPTS})
  set(variants "")  # suffixes of the binaries: "" the plain one, "_lto" its LTO build
  if(SPINDLE_LTO_TESTS AND "lto" IN_LIST A_TAGS)
    _spindle_executable(${name}_lto ${output_name}_lto ${link} SRCS ${A_SRCS}
      DEPS ${A_DEPS} COPTS ${A_COPTS} ${SPINDLE_LTO_FLAGS}
      LINKOPTS ${A_LINKOPTS} ${SPINDLE_LTO_FLAGS})
    list(APPEND variants _lto)
  endif()
  set(common SIZE ${A_SIZE} TIMEOUT ${A_TIMEOUT} TAGS ${A_TAGS})
  foreach(variant IN ITEMS "" ${variants})
    set(binary $<TARGET_FILE:${name}${variant}>)
    # The shards are the plain test's: Bazel's twins are sh_tests without shard_count.
    set(shards 1)
    if(variant STREQUAL "")
      set(shards ${A_SHARDS})
    endif()
    _spindle_add_test(${A_LABEL}${variant} ${common} SHARDS ${shards}
      COMMAND ${binary} ${A_ARGS})
    if(A_STRATEGY_TWINS)
      foreach(strategy v2 relaxed)
        _spindle_add_test(${A_LABEL}${variant}_${strategy} ${common} COMMAND bash
          ${SPINDLE_SOURCE_DIR}/bazel/run_under_strategy.sh ${strategy} ${binary})
      endforeach()
    endif()
  endforeach()
  if(A_CHAOS_SEEDS AND SPINDLE_TEST_SEAMS)
    while(A_CHAOS_SEEDS)
      list(POP_FRONT A_CHAOS_SEEDS strategy seed)
      set(suffix _chaos_${strategy})
      if(strategy STREQUAL "v1")
        set(suffix _chaos)
      endif()
      _spindle_add_test(${A_LABEL}${suffix} SIZE ${A_SIZE} TIMEOUT ${A_TIMEOUT}
        TAGS ${A_TAGS} chaos COMMAND bash
        ${SPINDLE_SOURCE_DIR}/bazel/run_under_chaos.sh ${strategy} ${seed}
        $<TARGET_FILE:${name}>)
    endwhile()
  endif()
endfunction()

function(spindle_cc_binary name)
  cmake_parse_arguments(A "TESTONLY" "OUTPUT_NAME" "SRCS;DEPS;COPTS;LINKOPTS" ${ARGN})
  # The examples and benchmarks are built with the tests (several tests run them).
  _spindle_compatible(ok TEST DEPS ${A_DEPS})
  if(NOT ok)
    return()
  endif()
  _spindle_executable(${name} ${A_OUTPUT_NAME} LINKSTATIC SRCS ${A_SRCS} DEPS ${A_DEPS}
    COPTS ${A_COPTS} LINKOPTS ${A_LINKOPTS})
endfunction()

function(spindle_sh_test name)
  cmake_parse_arguments(A "REQUIRES_SEAMS;WITHOUT_SEAMS" "LABEL;SCRIPT;SIZE;TIMEOUT;SHARDS"
    "ARGS;DEPENDS;TAGS" ${ARGN})
  _spindle_set_flags(compat_flags REQUIRES_SEAMS WITHOUT_SEAMS)
  _spindle_compatible(ok TEST ${compat_flags} DEPS ${A_DEPENDS})
  if(NOT ok)
    return()
  endif()
  _spindle_add_test(${A_LABEL} SIZE ${A_SIZE} TIMEOUT ${A_TIMEOUT} SHARDS ${A_SHARDS}
    TAGS ${A_TAGS} COMMAND bash ${SPINDLE_SOURCE_DIR}/${A_SCRIPT} ${A_ARGS})
endfunction()

function(spindle_genrule name)
  cmake_parse_arguments(A "" "OUTPUT;COMMAND" "INPUTS" ${ARGN})
  get_filename_component(dir "${A_OUTPUT}" DIRECTORY)
  file(MAKE_DIRECTORY "${dir}")
  add_custom_command(OUTPUT "${A_OUTPUT}" COMMAND bash -c "${A_COMMAND}"
    DEPENDS ${A_INPUTS} COMMENT "Generating ${A_OUTPUT}" VERBATIM)
endfunction()

# bazel/grpc.bzl's spindle_grpc_proto_library: SRC's messages and gRPC stubs, generated
# at build time by protoc and grpc_cpp_plugin into ${SPINDLE_GEN_DIR} (included by their
# path from the repository root), as a library. Not defined without gRPC (then neither is
# any target that depends on it).
function(spindle_grpc_proto_library name)
  cmake_parse_arguments(A "TESTONLY" "SRC" "" ${ARGN})
  if(NOT TARGET third_party.grpc OR (A_TESTONLY AND NOT SPINDLE_BUILD_TESTS))
    return()
  endif()
  get_filename_component(dir "${A_SRC}" DIRECTORY)
  get_filename_component(base "${A_SRC}" NAME_WE)
  set(out "${SPINDLE_GEN_DIR}/${dir}/${base}")
  set(generated ${out}.pb.h ${out}.pb.cc ${out}.grpc.pb.h ${out}.grpc.pb.cc)
  file(MAKE_DIRECTORY "${SPINDLE_GEN_DIR}/${dir}")
  add_custom_command(OUTPUT ${generated}
    COMMAND ${SPINDLE_PROTOC} -I${SPINDLE_SOURCE_DIR} --cpp_out=${SPINDLE_GEN_DIR}
      --grpc_out=${SPINDLE_GEN_DIR} --plugin=protoc-gen-grpc=${SPINDLE_GRPC_CPP_PLUGIN}
      ${SPINDLE_SOURCE_DIR}/${A_SRC}
    DEPENDS ${SPINDLE_SOURCE_DIR}/${A_SRC} COMMENT "Generating ${dir}/${base}.{pb,grpc.pb}.{h,cc}"
    VERBATIM)
  set(flags)
  if(A_TESTONLY)
    list(APPEND flags TESTONLY)
  endif()
  spindle_cc_library(${name} ${flags} SRCS ${out}.pb.cc ${out}.grpc.pb.cc
    HDRS ${out}.pb.h ${out}.grpc.pb.h DEPS third_party.grpc COPTS -Wno-unused-parameter)
  target_include_directories(${name}.usage INTERFACE ${SPINDLE_GEN_DIR})
  # Whatever compiles against the headers waits for them: an INTERFACE library's
  # dependencies are its dependents' too (CMake >= 3.19).
  add_custom_target(${name}.generate DEPENDS ${generated})
  add_dependencies(${name}.usage ${name}.generate)
endfunction()
