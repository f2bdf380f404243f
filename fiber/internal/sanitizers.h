// Copyright 2026 The Spindle Authors.
//
// Thin wrappers over the AddressSanitizer and ThreadSanitizer fiber APIs. In a build
// without the sanitizer each wrapper compiles to nothing, so callers annotate
// unconditionally.
//
// ASan must be told about every stack switch, or it reports false stack-buffer
// overflows and loses track of fake stacks; TSan must be told which logical thread
// ("fiber") runs, or it mixes the shadow call stacks and happens-before clocks of
// fibers that share a worker. The protocol, per switch from A to B:
//   1. A: SanitizerStartSwitch(&A.asan_fake_stack (or nullptr if A is dying),
//                              B's stack, B's TSan fiber)
//   2. the machine switch (JumpContextInline or spindle_jump_context, not instrumented)
//   3. B: SanitizerFinishSwitch(B.asan_fake_stack)
// and a TSan fiber is destroyed only after the switch away from it (step 3 of the next
// fiber), never while it runs.

#ifndef SPINDLE_FIBER_INTERNAL_SANITIZERS_H_
#define SPINDLE_FIBER_INTERNAL_SANITIZERS_H_

#include <cstddef>

#if defined(__SANITIZE_ADDRESS__)
#define SPINDLE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SPINDLE_ASAN 1
#endif
#endif

#if defined(__SANITIZE_THREAD__)
#define SPINDLE_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SPINDLE_TSAN 1
#endif
#endif

#ifdef SPINDLE_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#ifdef SPINDLE_TSAN
#include <sanitizer/tsan_interface.h>
#endif

// Not instrumented by ThreadSanitizer at all: no memory accesses reported and no shadow
// call stack entry and exit either (GCC's no_sanitize("thread") drops both; clang's
// drops only the accesses, and disable_sanitizer_instrumentation both). Out of line in
// every build. For the few functions on a fiber's stack when it leaves it for the last
// time.
#if defined(SPINDLE_TSAN) && defined(__clang__)
#define SPINDLE_NO_SANITIZE_THREAD __attribute__((disable_sanitizer_instrumentation, noinline))
#elif defined(SPINDLE_TSAN)
#define SPINDLE_NO_SANITIZE_THREAD __attribute__((no_sanitize("thread"), noinline))
#else
#define SPINDLE_NO_SANITIZE_THREAD __attribute__((noinline))
#endif

namespace spindle::internal {

#if defined(SPINDLE_ASAN) || defined(SPINDLE_TSAN)
inline constexpr bool kUnderSanitizer = true;
#else
inline constexpr bool kUnderSanitizer = false;
#endif

// Called on the context being left, right before the machine switch. `fake_stack_save`
// is where ASan keeps the leaving context's fake stack; nullptr when the leaving context
// will never run again (ASan then frees its fake stack). `target_bottom`/`target_size`
// describe the stack being switched to; `target_tsan_fiber` is its TSan fiber.
// always_inline, both: under TSan a function of its own would push a shadow call frame
// on the fiber being left and pop it on the one switched to (the switch happens inside
// it), unbalancing both fibers' shadow stacks; inlined, the frames are the caller's,
// which leaves and resumes on the same fiber.
__attribute__((always_inline)) inline void SanitizerStartSwitch(void** fake_stack_save,
                                                                const void* target_bottom,
                                                                std::size_t target_size,
                                                                void* target_tsan_fiber) {
#ifdef SPINDLE_ASAN
  __sanitizer_start_switch_fiber(fake_stack_save, target_bottom, target_size);
#else
  (void)fake_stack_save;
  (void)target_bottom;
  (void)target_size;
#endif
#ifdef SPINDLE_TSAN
  __tsan_switch_to_fiber(target_tsan_fiber, 0);
#else
  (void)target_tsan_fiber;
#endif
}

// Called on the context just landed on, first thing after the machine switch.
// `fake_stack` is the value its own SanitizerStartSwitch saved (nullptr on a context's
// first run).
__attribute__((always_inline)) inline void SanitizerFinishSwitch(void* fake_stack) {
#ifdef SPINDLE_ASAN
  __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
#else
  (void)fake_stack;
#endif
}

// TSan fiber lifetime. Create for each new context, destroy once it has been switched
// away from for the last time. The thread's own context is CurrentTsanFiber().
inline void* CreateTsanFiber() {
#ifdef SPINDLE_TSAN
  return __tsan_create_fiber(0);
#else
  return nullptr;
#endif
}

inline void DestroyTsanFiber(void* fiber) {
#ifdef SPINDLE_TSAN
  if (fiber != nullptr) __tsan_destroy_fiber(fiber);
#else
  (void)fiber;
#endif
}

inline void* CurrentTsanFiber() {
#ifdef SPINDLE_TSAN
  return __tsan_get_current_fiber();
#else
  return nullptr;
#endif
}

// Stack memory recycled through a pool may still be poisoned by the frames of the fiber
// that used it last; unpoison before reuse, poison while it sits in the pool.
inline void PoisonStack(void* base, std::size_t size) {
#ifdef SPINDLE_ASAN
  ASAN_POISON_MEMORY_REGION(base, size);
#else
  (void)base;
  (void)size;
#endif
}

inline void UnpoisonStack(void* base, std::size_t size) {
#ifdef SPINDLE_ASAN
  ASAN_UNPOISON_MEMORY_REGION(base, size);
#else
  (void)base;
  (void)size;
#endif
}

}  // namespace spindle::internal

#endif  // SPINDLE_FIBER_INTERNAL_SANITIZERS_H_
