// Copyright 2026 The Spindle Authors.
//
// What a debugger needs to find and read every fiber of a process, live or in a core
// file, without the process's help and without debug information: one C struct at a
// fixed symbol, `spindle_debug_info`, that names the fiber control block's layout (as
// offsets), the saved-context protocol, the names of the states and wait kinds, where
// the stacks are (the stack registry's regions, kept in a plain array beside it) and
// how to turn the cycle clock into seconds. tools/gdb/spindle.py reads it with
// `Inferior.read_memory()` only, so it works on `-c opt` builds without -g, with any
// standard library, on a core whose process could answer nothing; brpc's gdb script,
// which evaluates expressions over its internal templates, broke with each compiler and
// release (issues 2674, 3149). Every field is 8 bytes, in the order below: the script
// unpacks them by name from that list, and `version` changes when the order does.
//
// Cost: nothing on any hot path. The layout is a constant (in .data from the start);
// the regions change when a stack is mapped or unmapped (rare: stacks are recycled
// through caches), under the registry's lock; the clock and the group layout are
// written once, when a runtime starts.

#ifndef SPINDLE_FIBER_INTERNAL_DEBUG_INFO_H_
#define SPINDLE_FIBER_INTERNAL_DEBUG_INFO_H_

#include <cstdint>

#include "fiber/internal/stack_allocator.h"  // SpindleDebugStacks

extern "C" {

struct SpindleDebugInfo {
  char magic[16];  // "spindle-debug" and zeros
  std::uint64_t version;
  std::uint64_t size;  // sizeof(SpindleDebugInfo)

  // The control block (fiber_entity.h): a live fiber's FiberEntity sits at
  // top - control_block_size of its stack, the stack's liveness word at
  // top - stack_header_size (stack_live or stack_pinned: an entity is there).
  std::uint64_t entity_magic;
  std::uint64_t control_block_size;
  std::uint64_t stack_header_size;
  std::uint64_t stack_live;
  std::uint64_t stack_pinned;
  // Offsets in FiberEntity; each field's size is in the comment.
  std::uint64_t magic_offset;        // 8
  std::uint64_t id_offset;           // 8
  std::uint64_t state_offset;        // 1: FiberState, an index into state_names
  std::uint64_t wait_kind_offset;    // 1: WaitKind, an index into wait_kind_names
  std::uint64_t wait_object_offset;  // 8: what it waits on, or 0 (a join: where the
                                     //    joined fiber's 8-byte id is)
  std::uint64_t group_offset;        // 8: its SchedulingGroup*
  std::uint64_t worker_offset;       // 4: its worker in that group (while Running)
  std::uint64_t state_since_offset;  // 8: cycle clock when it parked (while Waiting)
  std::uint64_t stack_base_offset;   // 8
  std::uint64_t stack_size_offset;   // 8
  std::uint64_t saved_sp_offset;     // 8: its saved context while not Running
  const char* const* state_names;
  std::uint64_t state_count;
  const char* const* wait_kind_names;
  std::uint64_t wait_kind_count;

  // The saved context (context_x86_64.S): from the saved stack pointer, the resume
  // address at +saved_pc_offset, the frame pointer at +saved_fp_offset; the stack
  // pointer the switching function has once resumed is saved sp + resumed_sp_offset.
  std::uint64_t saved_pc_offset;
  std::uint64_t saved_fp_offset;
  std::uint64_t resumed_sp_offset;

  const SpindleDebugStacks* stacks;

  // Written when a runtime starts (0 before): the offset of the index in a
  // SchedulingGroup, plus one (0: not known); the cycle clock's rate, and one reading of
  // it with the monotonic and real-time clocks, so that a parked fiber's state_since
  // becomes seconds (live: against the debugger's monotonic clock; a core: against the
  // core file's modification time).
  std::uint64_t group_index_offset_plus_one;
  std::uint64_t clock_picos_per_tick;
  std::uint64_t clock_ticks;
  std::uint64_t clock_monotonic_ns;
  std::uint64_t clock_realtime_ns;

  // Lock owners (sync/mutex.h, sync/shared_mutex.h), written by the sync layer's static
  // initialisation (0 before, or where it is not linked): the offset, plus one, of the
  // holder's fiber id in a Mutex and of the writer's in a SharedMutex.
  std::uint64_t mutex_owner_offset_plus_one;
  std::uint64_t shared_mutex_owner_offset_plus_one;
};

extern SpindleDebugInfo spindle_debug_info;

}  // extern "C"

namespace spindle::internal {

// Records what only a started runtime knows (see the struct): the scheduling group's
// index offset and the clock. Called by every runtime start; thread-safe enough for
// that (a start is not concurrent with another).
void PublishRuntimeDebugInfo(std::uint64_t group_index_offset);

}  // namespace spindle::internal

#endif  // SPINDLE_FIBER_INTERNAL_DEBUG_INFO_H_
