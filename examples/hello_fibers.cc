// Copyright 2026 The Spindle Authors.
//
// The README's first program: two fibers, joined from a third.

#include <cstdio>

#include "fiber/fiber.h"
#include "gflags/gflags.h"
#include "runtime/runtime.h"

int main(int argc, char** argv) {
  // The runtime's layout line on stderr at start (--fiber_log_layout=false hides it).
  gflags::SetCommandLineOptionWithMode("fiber_log_layout", "true", gflags::SET_FLAGS_DEFAULT);
  gflags::ParseCommandLineFlags(&argc, &argv, true);  // --fiber_* flags, --flagfile
  spindle::StartRuntime();
  int sum = spindle::RunAsFiber([] {
    int a = 0, b = 0;
    spindle::Fiber left([&] { a = 20; });   // runs on any worker
    spindle::Fiber right([&] { b = 22; });
    left.join();                            // parks this fiber, not the worker
    right.join();
    return a + b;
  });
  spindle::TerminateRuntime();              // waits for every started fiber
  std::printf("sum = %d\n", sum);
  return sum == 42 ? 0 : 1;
}
