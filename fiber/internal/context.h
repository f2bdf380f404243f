// Copyright 2026 The Spindle Authors.
//
// The lowest layer of Spindle: saving the running machine context and switching to
// another one on a different stack. One small assembly file per CPU architecture
// (context_x86_64.S, context_aarch64.S) implements the two functions below; Bazel picks
// the file with a select() on the target CPU.
//
// These functions know nothing about fibers, threads or sanitizers; FiberEntity
// (fiber_entity.h) builds on them and adds the sanitizer annotations and the
// "on landing" hook. On x86-64 FiberEntity switches with JumpContextInline()
// (context_inline.h), an inline form of spindle_jump_context() that follows the same
// protocol (context_x86_64.S: the resume address on top of every saved context), so
// contexts made or saved here and there resume each other.

#ifndef SPINDLE_FIBER_INTERNAL_CONTEXT_H_
#define SPINDLE_FIBER_INTERNAL_CONTEXT_H_

#include <cstddef>

extern "C" {

// Builds the first frame of a new context on the stack whose highest address is
// `stack_top` (the stack grows down from there; `stack_top` need not be aligned; the
// `stack_size` bytes below it must be writable). Returns the context's saved stack
// pointer, to be passed to spindle_jump_context(). When the context is first jumped to,
// `entry(arg)` runs, where `arg` is the value given to that jump. `entry` must never
// return (it switches away for the last time instead); if it does, the process traps.
// The new context inherits the caller's floating-point control state (MXCSR and the x87
// control word on x86-64, FPCR on aarch64).
void* spindle_make_context(void* stack_top, std::size_t stack_size,
                           void (*entry)(void* arg));

// Saves the callee-saved registers and the floating-point control state of the calling
// context on its own stack, stores the resulting stack pointer in `*save_sp`, and
// switches to the context whose saved stack pointer is `target_sp`. Returns, in the
// saving context, when another context jumps back to the value stored in `*save_sp`; the
// return value is the `arg` of that jump. A context is resumed at most once per save.
//
// Not instrumented by any sanitizer: callers annotate around it.
void* spindle_jump_context(void** save_sp, void* target_sp, void* arg);

}  // extern "C"

#endif  // SPINDLE_FIBER_INTERNAL_CONTEXT_H_
