// Copyright 2026 The Spindle Authors.
//
// FiberEntity's switch, for inlining into the scheduler's switch paths
// (FiberEntity::SwitchToInline; fiber_entity.cc's SwitchTo() is the same, out of line).
// The steps are in fiber_entity.cc's file comment.
//
// The rule for a function that inlines a switch (the one thing that makes it safe to
// read and write the thread-locals below in place): it switches at most once and reads
// no thread-local after its switch. Its code before the switch runs on the thread it
// started on, so the plain thread-local accesses there are that thread's; after the
// switch it may be on another thread, and a compiler may keep a thread-local's address
// (or the thread pointer) from before (brpc #1776, #3380). Code after the switch reads
// thread-locals only through out-of-line accessors (switch_safe_tls.h), or after
// returning to a caller that was not inlined with it.

#ifndef SPINDLE_FIBER_INTERNAL_FIBER_SWITCH_H_
#define SPINDLE_FIBER_INTERNAL_FIBER_SWITCH_H_

#include "fiber/internal/context_inline.h"
#include "fiber/internal/exception_state.h"
#include "fiber/internal/fiber_entity.h"
#include "fiber/internal/sanitizers.h"
#include "glog/logging.h"

namespace spindle::internal {
namespace fiber_switch_internal {

// The fiber running on this thread (GetCurrentFiberEntity() reads it through an
// accessor that is safe across switches). __thread, not thread_local: constant
// initialized, so other files reach it directly, not through a wrapper call.
extern __thread FiberEntity* tls_current_fiber;
// The calling thread's `__cxa_eh_globals` (exception_state.h), looked up once per
// thread: libstdc++'s __cxa_get_globals() reaches its thread-local through
// __tls_get_addr (it is a shared library), a call on every switch.
// Read only by a thread about its own state, before a switch (Switch()) or through
// ThisThreadExceptionState(), never cached across one.
extern __thread ExceptionState* tls_exception_state;
// Sets tls_exception_state on a thread's first switch and returns it.
__attribute__((noinline, cold)) ExceptionState* LookUpExceptionState();

}  // namespace fiber_switch_internal

struct FiberEntity::Landing {
  FiberEntity* from;
  LandingHook hook;
};

// always_inline: SwitchTo() is the hot path, and every extra call/return around the
// jump costs a return-stack misprediction on the far side of the switch.
__attribute__((always_inline)) inline void FiberEntity::Switch(FiberEntity* target,
                                                               LandingHook hook,
                                                               bool leaving_for_good) {
  DCHECK_EQ(this, GetCurrentFiberEntity()) << "only the running fiber may switch away";
  DCHECK_NE(this, target);
  Landing landing{this, hook};
  // The exceptions being handled belong to the fiber, not the thread (see
  // exception_state.h): ours go with us, the target's come back. Done here, before the
  // jump, on the thread that will run the target; a fiber starting for the first time
  // gets the empty state its entity was built with.
  // Before the jump this thread is still ours: a plain thread-local read (as the write
  // of tls_current_fiber below).
  ExceptionState* live = fiber_switch_internal::tls_exception_state;
  if (__builtin_expect(live == nullptr, 0)) live = fiber_switch_internal::LookUpExceptionState();
  exception_state_ = *live;
  *live = target->exception_state_;
  // An unguarded stack (stack_allocator.cc, layout 3) is checked each time its fiber
  // leaves it: a guard page would have stopped the overflow; here we catch it before
  // another fiber runs on memory the overflow may have spilled into.
  if (__builtin_expect(!stack_.guarded && stack_.base != nullptr, 0)) CheckUnguardedStack();
#ifdef SPINDLE_TSAN
  if (target->tsan_fiber_ == nullptr) AcquireTsanFiber(target);  // its first run
#endif
  SanitizerStartSwitch(leaving_for_good ? nullptr : &asan_fake_stack_,
                       target->asan_stack_bottom_, target->asan_stack_size_,
                       target->tsan_fiber_);
  // Before the jump this thread is still ours, so the plain thread-local write is safe;
  // only reads after a switch must go through CurrentFiberSlot().
  fiber_switch_internal::tls_current_fiber = target;
  void* arrived = JumpContextInline(&saved_sp_, target->saved_sp_, &landing);
  Land(static_cast<Landing*>(arrived));
}

__attribute__((always_inline)) inline void FiberEntity::Land(Landing* landing) {
  SanitizerFinishSwitch(asan_fake_stack_);
  const LandingHook hook = landing->hook;  // copy: see fiber_entity.cc's file comment
  if (hook.fn != nullptr) hook.fn(hook.arg);
}

__attribute__((always_inline)) inline void FiberEntity::SwitchToInline(FiberEntity* target,
                                                                       LandingHook hook) {
  Switch(target, hook, /*leaving_for_good=*/false);
}

}  // namespace spindle::internal

#endif  // SPINDLE_FIBER_INTERNAL_FIBER_SWITCH_H_
