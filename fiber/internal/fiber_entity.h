// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_FIBER_INTERNAL_FIBER_ENTITY_H_
#define SPINDLE_FIBER_INTERNAL_FIBER_ENTITY_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "fiber/internal/exception_state.h"
#include "fiber/internal/fiber_function.h"
#include "fiber/internal/local_storage.h"
#include "fiber/internal/spinlock.h"
#include "fiber/internal/stack_allocator.h"
#include "fiber/internal/wait_types.h"

namespace spindle::internal {

class SchedulingGroup;  // runtime/internal/group/scheduling_group.h (a layer above)

// A fiber's life cycle. Every change happens under the fiber's scheduler_lock:
//
//   Ready --> Running --> Dead
//     ^         |  ^
//     |         v  |   (Running -> Ready: yield, or re-queued by a Dispatch)
//     +----- Waiting   (Running -> Waiting: parked; Waiting -> Ready: woken)
//
// Any other transition is a bug and a CHECK failure.
enum class FiberState : std::uint8_t { kReady, kRunning, kWaiting, kDead };

const char* FiberStateName(FiberState state);



// Work that the context switched *to* runs for the context switched *from*, right after
// landing and before doing anything else. It closes the race between "a fiber decides to
// wait" and "its registers are saved": the fiber keeps its scheduler lock across the
// switch and the landing hook releases it, so a waker on another thread cannot resume
// the fiber (and run on its stack) before the switch has finished saving it. `fn(arg)`
// must not switch fibers.
struct LandingHook {
  void (*fn)(void* arg) = nullptr;
  void* arg = nullptr;
};

// "SPINDLE!" in little-endian ASCII: the first word of every control block, so a
// debugger (or a core-dump scan) can find fibers in memory.
inline constexpr std::uint64_t kFiberEntityMagic = 0x21454c444e495053;

// A fiber's control block. For a user fiber it is placed at the top (highest
// addresses) of the fiber's own stack and the stack grows down below it; the thread's
// master fiber (the context the thread started on) is a heap object with no stack of
// its own.
//
//   +------------------------+  <- Stack::top()
//   | FiberEntity            |
//   +------------------------+  <- first frame (spindle_make_context)
//   | used stack             |
//   | ...                    |
//   +------------------------+  <- Stack::base
//   | guard or pad page      |  (a pad page's top holds the canary of an unguarded stack)
//   +------------------------+
//
// Thread-safety: `state` only under `scheduler_lock`. The fields set at creation
// (id, stack, start_proc before the first run) belong to the creator until the fiber is
// published to a scheduler. `locals` and the hooks belong to whoever runs the
// fiber. The scheduling fields are the scheduler's (layer 2) and opaque here.
//
// Ownership: a user fiber's entity lives inside its stack. It is created by
// InstantiateFiberEntity() and destroyed by the `reclaim` function after the fiber has
// died and its thread has switched away from it.
class FiberEntity {
 public:
  const std::uint64_t magic = kFiberEntityMagic;
  const std::uint64_t id;

  Spinlock scheduler_lock;

  FiberState state() const { return state_; }
  // Changes the state; CHECKs that `scheduler_lock` is held and that the transition is
  // legal (see FiberState). Stamps state_since() when the fiber parks. Inline, the
  // checks one load, a table test and a branch each: the yield path makes two of these
  // per switch, and out of line each would add a call to it.
  // They stay in opt builds: an illegal transition (a fiber queued twice, run on two
  // workers) would otherwise corrupt its stack silently.
  void SetState(FiberState next) {
    if (__builtin_expect(!scheduler_lock.IsLocked() || !IsLegalTransition(state_, next), 0)) {
      FailSetState(next);
    }
    state_ = next;
    // Only a park is timed: the dump's question is how long a fiber has waited, and a
    // clock read on every transition would slow every spawn and switch. Written only
    // then (the dump reads it only for a Waiting fiber).
    if (next == FiberState::kWaiting) state_since_ = StateClockNow();
  }
  // SetState(kTo) where the caller knows the one state the fiber must be in (the switch
  // paths: a taken entry is Ready, the yielder is Running): the same checks, the
  // transition's a single compare (a corrupted or unexpected state fails it).
  template <FiberState kFrom, FiberState kTo>
  __attribute__((always_inline)) void Transition() {
    static_assert(IsLegalTransition(kFrom, kTo), "not an edge of the state diagram");
    static_assert(kTo != FiberState::kWaiting, "a park is timed: use SetState()");
    if (__builtin_expect(!scheduler_lock.IsLocked() || state_ != kFrom, 0)) {
      FailTransition(kFrom, kTo);
    }
    state_ = kTo;
  }
  // Transition() where the caller took scheduler_lock itself, in the same function,
  // just before: the state is checked, the lock check (which could not fail there) is
  // left out (two per yield).
  template <FiberState kFrom, FiberState kTo>
  __attribute__((always_inline)) void TransitionJustLocked() {
    static_assert(IsLegalTransition(kFrom, kTo), "not an edge of the state diagram");
    static_assert(kTo != FiberState::kWaiting, "a park is timed: use SetState()");
    if (__builtin_expect(state_ != kFrom, 0)) FailTransition(kFrom, kTo);
    state_ = kTo;
  }
  // Whether `from` -> `to` is an edge of the diagram above: bit 4 * from + to.
  static constexpr bool IsLegalTransition(FiberState from, FiberState to) {
    constexpr std::uint32_t kLegal =
        (1u << (4 * 0 + 1)) |                            // Ready -> Running
        (1u << (4 * 1 + 0)) | (1u << (4 * 1 + 2)) | (1u << (4 * 1 + 3)) |  // Running ->
        (1u << (4 * 2 + 0));                             // Waiting -> Ready
    static_assert(static_cast<int>(FiberState::kReady) == 0 &&
                  static_cast<int>(FiberState::kRunning) == 1 &&
                  static_cast<int>(FiberState::kWaiting) == 2 &&
                  static_cast<int>(FiberState::kDead) == 3);
    // A state outside the enum (a corrupted control block) is never legal.
    const unsigned f = static_cast<unsigned>(from);
    const unsigned t = static_cast<unsigned>(to);
    return f < 4 && t < 4 && ((kLegal >> (4 * f + t)) & 1) != 0;
  }
  // When the fiber parked (a CycleClockNow() tick, fiber/internal/cycle_clock.h) while
  // it is Waiting (0 if it never parked); stale in the other states, which are not
  // timed: read it only for a Waiting fiber. Under `scheduler_lock`.
  std::uint64_t state_since() const { return state_since_; }

  // What the fiber waits for while Waiting; written by the park path under
  // `scheduler_lock`, read by the dump under it.
  WaitKind wait_kind = WaitKind::kNone;
  // Set by the running fiber itself (ScopedWaitKind) to name a wait that a higher-level
  // primitive makes through a lower one (a Future waits through an Event); the park
  // path prefers it to its own kind. Owner fiber only, read under `scheduler_lock` by
  // the park path running on that same fiber.
  WaitKind wait_kind_override = WaitKind::kNone;

  // Opaque to this layer (declared only): the scheduling group that owns the fiber, and
  // its flags.
  SchedulingGroup* scheduling_group = nullptr;
  bool scheduling_group_local = false;
  // The worker of that group the fiber runs on, set each time it is made Running (so
  // the yield and park paths need no thread-local look-up).
  std::uint32_t scheduling_worker = 0;
  // What the fiber waits on while Waiting, where its primitive says (the Mutex, Event,
  // channel or socket Descriptor...; for WaitKind::kJoin the joined fiber's 8-byte id,
  // a const std::uint64_t*); null if not known. Written with wait_kind by the
  // park path under `scheduler_lock`; read by the dump, the deadlock report and the gdb
  // commands (tools/gdb/spindle.py). It fills the hole before start_proc.
  const void* wait_object = nullptr;

  // What the fiber runs. Destroyed on the fiber right after it returns.
  FiberFunction start_proc;
  // Runs on the fiber after start_proc returns, before it is marked Dead, as
  // exit_barrier_hook(exit_barrier_arg) (a Fiber handle's join() waits on what it
  // signals); null: none. A plain function and its argument, not a type-erased callable:
  // every joinable fiber has one, and moving one costs an indirect call.
  void (*exit_barrier_hook)(void* arg) = nullptr;
  void* exit_barrier_arg = nullptr;
  // Runs on the thread's master fiber after a dead fiber has switched away for the last
  // time; it must destroy the entity (DestroyFiberEntity) and recycle the stack. The
  // default returns the stack to the calling thread's StackCache.
  void (*reclaim)(FiberEntity* dead);

  bool is_master() const { return is_master_; }
  const Stack& stack() const { return stack_; }
  // Where the fiber's registers were saved when it last switched away (context.h
  // layout, context_x86_64.S / context_aarch64.S); meaningful only while it is not
  // Running, read under `scheduler_lock`.
  const void* saved_stack_pointer() const { return saved_sp_; }

  // Switches the calling thread from this fiber, which must be the one running on it,
  // to `target`, which must not be running anywhere. `hook` runs on `target` right after
  // landing. Returns when some thread switches back to this fiber (maybe another thread
  // than the one that left it).
  void SwitchTo(FiberEntity* target, LandingHook hook = {});
  // SwitchTo(), inlined into the caller (fiber_switch.h, which says what a caller must
  // keep to: one switch per function, no thread-local read after it). For the
  // scheduler's yield and park paths.
  void SwitchToInline(FiberEntity* target, LandingHook hook);

  // Only the functions below construct, run and destroy entities.
  FiberEntity(std::uint64_t id, const Stack& stack, bool is_master);
  ~FiberEntity();
  FiberEntity(const FiberEntity&) = delete;
  FiberEntity& operator=(const FiberEntity&) = delete;

 private:
  struct Landing;
  friend void FiberProc(void* arg);
  friend FiberEntity* InstantiateFiberEntity(const Stack&, FiberFunction, std::uint64_t);
  friend Stack DestroyFiberEntity(FiberEntity*);
  friend FiberEntity* GetMasterFiberEntity();
  friend struct FiberEntityLayout;  // debug_info.cc: the layout a debugger reads
#ifdef SPINDLE_TSAN
  friend void AcquireTsanFiber(FiberEntity*);
#endif

  void Switch(FiberEntity* target, LandingHook hook, bool leaving_for_good);
  // SetState()'s failure: aborts naming the fiber, the transition, and whether the lock
  // was held.
  [[noreturn]] __attribute__((noinline, cold)) void FailSetState(FiberState next) const;
  // Transition()'s failure: the same, naming the state the caller expected.
  [[noreturn]] __attribute__((noinline, cold)) void FailTransition(FiberState expected,
                                                                    FiberState next) const;
  // CycleClockNow() (fiber/internal/cycle_clock.h), out of line for SetState().
  static std::uint64_t StateClockNow();
  // Aborts with "fiber stack overflow" if this fiber's unguarded stack overflowed.
  __attribute__((noinline, cold)) void CheckUnguardedStack() const;
  void Land(Landing* landing);
  // A fiber's life on its own stack, from its first landing to being marked Dead (the
  // exit barrier hook, the exception check, the Dead state); returns; then
  // LeaveForGood() switches to the thread's master for the last time. Split so that
  // the last switch runs in a function ThreadSanitizer does not instrument: the TSan
  // fiber then leaves with an empty shadow call stack and can be reused
  // (fiber_entity.cc, "TSan fibers").
  static FiberEntity* RunToDeath(void* landing);
  void MarkDead();
  [[noreturn]] void LeaveForGood();

  FiberState state_;
  std::uint64_t state_since_;
  const bool is_master_;
#ifdef SPINDLE_TSAN
  // How many fibers ran on tsan_fiber_ before this one (fiber_entity.cc, "TSan
  // fibers"). In the padding after is_master_: the layout of the other fields is the
  // same in every build.
  std::uint32_t tsan_fiber_uses_ = 0;
#endif
  const Stack stack_;
  void* saved_sp_ = nullptr;

  // Sanitizer bookkeeping (unused in other builds).
  void* asan_fake_stack_ = nullptr;
  const void* asan_stack_bottom_ = nullptr;
  std::size_t asan_stack_size_ = 0;
  // The fiber's TSan fiber; nullptr until its first switch-in, which takes one from the
  // switching thread's pool (AcquireTsanFiber()).
  void* tsan_fiber_ = nullptr;
  // The C++ exception-handling state while the fiber is switched out (see
  // exception_state.h); the thread's own while it runs. Touched only by Switch().
  ExceptionState exception_state_;

 public:
  // The ready-to-run latency sample (runtime/internal/base/metrics.h): the
  // cycle clock when the fiber was last made Ready, if that readiness was sampled, else
  // 0. Written by whoever makes the fiber Ready (only when sampled), before it is
  // queued; read and cleared by the worker that takes it (ordered by the queue). Last,
  // after the fields every switch touches, so as not to move them to other cache lines
  // (among the scheduling fields it slows the spawn path).
  std::uint64_t ready_stamp = 0;

  // The fiber's FiberLocal values and execution context (fiber/fiber_local.h,
  // fiber/execution_context.h). Owner fiber only; destroyed on the fiber when its
  // start_proc returns, before exit_barrier_hook (so a joiner sees their destructors'
  // effects), or at thread exit for a master fiber.
  FiberLocalStorage locals;
};

// Bytes reserved at the top of each stack for the control block: the FiberEntity and,
// above it, the stack's liveness word (StackLiveness(), stack_allocator.h).
std::size_t FiberControlBlockSize();

// Names the kind of wait of the calling fiber's parks in its scope (see
// FiberEntity::wait_kind_override); no effect on a plain thread. Nests.
class ScopedWaitKind {
 public:
  explicit ScopedWaitKind(WaitKind kind);
  ~ScopedWaitKind();
  ScopedWaitKind(const ScopedWaitKind&) = delete;
  ScopedWaitKind& operator=(const ScopedWaitKind&) = delete;

 private:
  FiberEntity* const fiber_;
  const WaitKind previous_;
};

// Builds a Ready fiber on `stack` that will run `start_proc`. The fiber starts running
// the first time some fiber SwitchTo()s it. `id` 0 means: take a new one.
FiberEntity* InstantiateFiberEntity(const Stack& stack, FiberFunction start_proc,
                                    std::uint64_t id = 0);

#ifdef SPINDLE_TSAN
// ThreadSanitizer's fiber for `fiber`, switched to for the first time by the calling
// thread: one from the thread's pool of TSan fibers whose fibers died here, or a new one
// (fiber_entity.cc, "TSan fibers").
__attribute__((noinline)) void AcquireTsanFiber(FiberEntity* fiber);
// The number of __tsan_create_fiber() calls so far, process-wide (the test's view of
// the pool).
std::uint64_t TsanFibersCreated();
#endif

// Destroys a fiber that is not running (never started, or dead and switched away from)
// and returns its stack, which the caller recycles.
Stack DestroyFiberEntity(FiberEntity* fiber);

// The calling thread's master fiber, created on first use (which also makes it the
// current fiber if the thread runs none). Freed when the thread exits.
FiberEntity* GetMasterFiberEntity();

// The fiber running on the calling thread; nullptr on a thread that has never touched
// fibers. Never cached across a switch: it is out of line and reads the thread-local
// slot through an opaque pointer, because a fiber may resume on another thread and a
// compiler that keeps a thread_local's address across the suspension would read the old
// thread's slot (brpc #1776, #3380).
FiberEntity* GetCurrentFiberEntity();

// A process-wide unique fiber id, never 0. Cheap: ids are handed to threads in blocks.
std::uint64_t NewFiberId();

}  // namespace spindle::internal

#endif  // SPINDLE_FIBER_INTERNAL_FIBER_ENTITY_H_
