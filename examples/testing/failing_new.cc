// Copyright 2026 The Spindle Authors.

#include "examples/testing/failing_new.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace spindle::examples::failing_new {
namespace {

// 0: never; relaxed: a test sets it around the allocations it makes fail.
std::atomic<std::size_t> g_fail_above{0};

}  // namespace

void FailAllocationsAbove(std::size_t bytes) {
  g_fail_above.store(bytes, std::memory_order_relaxed);
}

}  // namespace spindle::examples::failing_new

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
void* operator new(std::size_t size) {
  const std::size_t limit =
      spindle::examples::failing_new::g_fail_above.load(std::memory_order_relaxed);
  if (limit != 0 && size > limit) throw std::bad_alloc();
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#endif
