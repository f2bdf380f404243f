// Copyright 2026 The Spindle Authors.

#include "runtime/internal/testing/allocation_counter.h"

#include <malloc.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SPINDLE_COUNTS_ALLOCATIONS 0
#else
#define SPINDLE_COUNTS_ALLOCATIONS 1
#endif

namespace {

// relaxed: the counter is read after the counted work was joined (a Latch's wait, a
// join), which orders it.
std::atomic<bool> g_counting{false};
std::atomic<std::int64_t> g_allocations{0};

[[maybe_unused]] void CountOne() {
  if (g_counting.load(std::memory_order_relaxed)) {
    g_allocations.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace

namespace spindle::testing {

bool CountsAllocations() { return SPINDLE_COUNTS_ALLOCATIONS != 0; }
void StartCountingAllocations() {
  g_allocations.store(0, std::memory_order_relaxed);
  g_counting.store(true, std::memory_order_relaxed);
}
void StopCountingAllocations() { g_counting.store(false, std::memory_order_relaxed); }
std::int64_t CountedAllocations() { return g_allocations.load(std::memory_order_relaxed); }

}  // namespace spindle::testing

#if SPINDLE_COUNTS_ALLOCATIONS
// glibc's own entry points, under the names it exports for interposers like this one.
extern "C" {
void* __libc_malloc(std::size_t size);
void* __libc_calloc(std::size_t count, std::size_t size);
void* __libc_realloc(void* pointer, std::size_t size);
void* __libc_memalign(std::size_t alignment, std::size_t size);
void __libc_free(void* pointer);

void* malloc(std::size_t size) {
  CountOne();
  return __libc_malloc(size);
}
void* calloc(std::size_t count, std::size_t size) {
  CountOne();
  return __libc_calloc(count, size);
}
void* realloc(void* pointer, std::size_t size) {
  CountOne();
  return __libc_realloc(pointer, size);
}
void* memalign(std::size_t alignment, std::size_t size) {
  CountOne();
  return __libc_memalign(alignment, size);
}
void* aligned_alloc(std::size_t alignment, std::size_t size) {
  CountOne();
  return __libc_memalign(alignment, size);
}
int posix_memalign(void** out, std::size_t alignment, std::size_t size) {
  CountOne();
  void* pointer = __libc_memalign(alignment, size);
  if (pointer == nullptr) return ENOMEM;
  *out = pointer;
  return 0;
}
void* valloc(std::size_t size) {
  CountOne();
  return __libc_memalign(static_cast<std::size_t>(sysconf(_SC_PAGESIZE)), size);
}
void free(void* pointer) { __libc_free(pointer); }
}  // extern "C"
#endif  // SPINDLE_COUNTS_ALLOCATIONS
