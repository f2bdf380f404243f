// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_FIBER_INTERNAL_SWITCH_SAFE_TLS_H_
#define SPINDLE_FIBER_INTERNAL_SWITCH_SAFE_TLS_H_

// Defines `Type* accessor()`, returning the address of the thread_local `variable`
// computed afresh on every call. A fiber may resume on another thread, and a compiler
// that keeps a thread_local's address (or the thread pointer) across the suspension
// reads the old thread's copy (brpc #1776, #3380). The function is out of line and the
// empty asm hides where the pointer came from, so no call can be merged with another.
#define SPINDLE_SWITCH_SAFE_TLS_ACCESSOR(Type, variable, accessor) \
  __attribute__((noinline)) Type* accessor() {                    \
    Type* slot = &variable;                                        \
    asm volatile("" : "+r"(slot));                                 \
    return slot;                                                   \
  }

#endif  // SPINDLE_FIBER_INTERNAL_SWITCH_SAFE_TLS_H_
