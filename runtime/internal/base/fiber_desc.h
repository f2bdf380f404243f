// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_FIBER_DESC_H_
#define SPINDLE_RUNTIME_INTERNAL_FIBER_DESC_H_

#include <atomic>
#include <cstdint>

#include "fiber/internal/fiber_entity.h"

namespace spindle::internal {

// A fiber that has been started but has not run yet: what it will run and how, but no
// stack. Queued in place of a FiberEntity so that starting a fiber costs no stack, and
// the stack is taken on the worker that first runs it (so stacks are taken and returned
// on the same worker thread, which keeps its stack cache warm). Owned by whoever holds
// it: the starter, then the run queue, then the worker that instantiates it.
struct FiberDesc;

// What a descriptor embedded in another object (a joinable Fiber's shared state,
// fiber.cc) is told. Both functions get the descriptor's address.
struct FiberDescHooks {
  // Becomes the fiber's exit_barrier_hook: runs on the fiber after it returns.
  void (*on_exit)(void* desc);
  // FreeFiberDesc() of an embedded descriptor: its owner's reference is released
  // instead of the descriptor going back to the pool.
  void (*on_free)(FiberDesc* desc);
};

struct FiberDesc {
  FiberFunction start_proc;
  // Null for a pooled descriptor (detached fibers); set for one embedded in its owner.
  const FiberDescHooks* hooks = nullptr;
  std::uint64_t id = 0;  // the fiber's id, chosen at start so Fiber::get_id() has it
  // The cycle clock when it was queued, or 0 when not sampled (see FiberEntity).
  std::uint64_t ready_stamp = 0;
  // For a joinable fiber: set to true by whoever runs it first, the worker that pops
  // this descriptor or a joiner that runs the fiber inline (Fiber::join()). A worker
  // that finds it already set drops the descriptor. Null for detached fibers.
  std::atomic<bool>* claim = nullptr;
  // Meaningful only once a joiner has won `claim`: the descriptor then has two owners,
  // the queue entry (whoever takes it drops it, ClaimEntry/DropIfRunInline) and the
  // joiner (which may take the entry back itself, TakeBackRunInline, take_back.h).
  // The joiner's reference keeps the address from being reused while it compares queue
  // entries with it. The last of the two frees the descriptor (ReleaseRunInlineDesc).
  std::atomic<int> run_inline_refs{2};
  // Beside the int above, so that the descriptor stays small: every byte counts for a
  // workload that keeps a million descriptors queued at once.
  bool scheduling_group_local = false;
  // The stack size class to instantiate it with (stack_allocator.h; 0: the default).
  std::uint8_t stack_class = 0;
  // How it is queued when started (its ReadyReason: kStarted, kStartedNext or
  // kStartedBack; Fiber::Attributes::start_order).
  std::uint8_t start_reason = 0;
  // (After the bytes above: it takes their padding.) A stack taken for it when it was started (PackStack(); 0: none, the worker that
  // first runs it takes one). Only the TryStart forms take one, so that an admitted
  // fiber never waits for a stack. Whoever runs it takes it (and resets this to 0).
  std::uintptr_t reserved_stack = 0;
};
static_assert(sizeof(FiberDesc) <= 96, "a million queued fibers pay for every byte");

// A descriptor from the calling thread's cache (or new); all fields at their defaults.
FiberDesc* AllocateFiberDesc();
// Returns a descriptor whose fields have been moved from (any thread).
void FreeFiberDesc(FiberDesc* desc);
// A new descriptor for a fiber that runs `start_proc`, with a new id, counted as live
// (live_fibers.h). Any thread.
FiberDesc* NewFiberDesc(FiberFunction start_proc);

// Makes sure no joiner runs `desc`'s fiber inline (Fiber::join()): a worker runs it, on
// a stack of its own. For a fiber that holds a reserved stack or a place under its pool's
// cap, which only a run on a worker gives back. Before the descriptor is queued, by its
// starter: the handle's join() then finds it claimed and waits, and the worker that
// takes it finds no claim to check. The owner restores `claim` when it recycles it.
inline void ForbidInlineRun(FiberDesc* desc) {
  if (desc->claim == nullptr) return;  // detached: never run inline
  // relaxed: the starter's own write, published with the descriptor's queueing; the only
  // joiner is the handle the starter returns afterwards.
  desc->claim->store(true, std::memory_order_relaxed);
  desc->claim = nullptr;
}

// Drops one owner of a descriptor whose fiber a joiner ran inline (see
// FiberDesc::run_inline_refs); the last owner frees it.
inline void ReleaseRunInlineDesc(FiberDesc* desc) {
  // acq_rel: the last owner sees the other's accesses before freeing.
  if (desc->run_inline_refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    FreeFiberDesc(desc);
  }
}

// Run-queue entries are tagged pointers: a FiberEntity (64-byte aligned) or, with the
// low bit set, a FiberDesc.
inline std::uintptr_t EncodeEntry(FiberEntity* fiber) {
  return reinterpret_cast<std::uintptr_t>(fiber);
}
inline std::uintptr_t EncodeEntry(FiberDesc* desc) {
  return reinterpret_cast<std::uintptr_t>(desc) | 1;
}
inline bool IsDescEntry(std::uintptr_t entry) { return (entry & 1) != 0; }
inline FiberDesc* DecodeDesc(std::uintptr_t entry) {
  return reinterpret_cast<FiberDesc*>(entry & ~std::uintptr_t{1});
}
inline FiberEntity* DecodeFiber(std::uintptr_t entry) {
  return reinterpret_cast<FiberEntity*>(entry);
}

// For whoever just took `entry` from a queue: whether it is still to be run. A joinable
// fiber's descriptor may have been run inline by its joiner meanwhile (FiberDesc::claim);
// then the queue's reference is dropped here and false returned, and the taker takes another.
// Exactly one of the taker and the joiner wins.
inline bool ClaimEntry(std::uintptr_t entry) {
  if (!IsDescEntry(entry)) return true;
  FiberDesc* desc = DecodeDesc(entry);
  // acq_rel: exactly one of us and a joiner running the fiber inline wins; the winner
  // sees everything the starter published.
  if (desc->claim == nullptr || !desc->claim->exchange(true, std::memory_order_acq_rel)) {
    return true;
  }
  ReleaseRunInlineDesc(desc);  // the joiner may still hold it
  return false;
}

// For the holder of a queued `entry`: if it is a descriptor whose joiner already ran the
// fiber inline, drops the queue's reference and returns true (the entry is gone). Otherwise leaves it
// unclaimed and returns false. Lets a queue drop such dead entries early instead of
// spending capacity on them. (The descriptor's exit hook keeps `claim` alive.)
inline bool DropIfRunInline(std::uintptr_t entry) {
  if (!IsDescEntry(entry)) return false;
  FiberDesc* desc = DecodeDesc(entry);
  // acquire: pairs with the joiner's acq_rel exchange; true is final.
  if (desc->claim == nullptr || !desc->claim->load(std::memory_order_acquire)) return false;
  ReleaseRunInlineDesc(desc);
  return true;
}

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_FIBER_DESC_H_
