// Copyright 2026 The Spindle Authors.
//
// Fibers: user-level threads with their own stacks, run M:N on Spindle's workers.
//
//   spindle::Fiber child([] { Work(); });
//   ...
//   child.join();                                   // from a fiber or a plain thread
//   spindle::StartFiberDetached([] { Background(); });

#ifndef SPINDLE_FIBER_FIBER_H_
#define SPINDLE_FIBER_FIBER_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "fiber/internal/fiber_function.h"

namespace spindle {

namespace internal {
struct JoinState;

// Whether Fiber's constructor templates take `F`: a callable with no arguments, other
// than the absl::AnyInvocable<void()> its other constructors take.
template <class F, class D = std::decay_t<F>>
inline constexpr bool kIsFiberCallable =
    !std::is_same_v<D, absl::AnyInvocable<void()>> && !std::is_same_v<D, FiberFunction> &&
    std::is_invocable_v<D&>;
}  // namespace internal

// How a new fiber starts.
enum class Launch {
  kPost,      // queue the new fiber; the caller goes on
  kDispatch,  // run the new fiber now on this worker; the caller is queued (from a fiber
              // of the new fiber's scheduling group; anywhere else this is kPost)
};

// Where a fiber started by a fiber (kPost) waits for a worker: seed 002's choice between
// spawn and enqueue. Strategy v2 honors it on the starting worker's own queues; v1 and
// relaxed keep one first-in-first-out order, and a fiber started from a plain thread
// or into another group goes to the group's shared queue, under every value.
enum class StartOrder {
  kDefault,  // as --fiber_v2_spawn says (lifo, the default: kNext; fifo: kBack)
  kNext,     // spawn: runs next on this worker, before the fibers it queued earlier
  kBack,     // enqueue: at the back of this worker's queue, after those already there
};

// A pool of workers declared by --fiber_pools (the default pool always exists): a
// handle, valid while the runtime that declared it runs. Pools are kept apart: a
// fiber runs on its pool's workers only (never stolen or woken into another pool), and
// the fibers it starts stay there unless their Attributes name another pool. A plain
// value; thread-safe.
class FiberPool {
 public:
  // The caller's pool (Attributes::pool's default): the pool of the worker the caller
  // runs on; from a plain thread, the default pool.
  constexpr FiberPool() = default;
  // The default pool: where plain threads' starts go.
  static FiberPool Default() { return FiberPool(0); }
  // The pool named `name`: NotFound naming it and the declared pools if there is none
  // (or FailedPrecondition without a running runtime).
  static absl::StatusOr<FiberPool> Find(std::string_view name);
  // The pool of the worker the caller runs on (the default pool from a plain thread).
  static FiberPool Current();
  // Its name ("default" for the caller's pool from a plain thread). Needs a running
  // runtime (else it stops the process with a message).
  std::string name() const;
  // Whether this is the caller's-pool handle, FiberPool().
  bool is_callers() const { return index_ == kCallers; }
  // Its index among the pools, [0, count); for FiberPool() the caller's pool's.
  std::size_t index() const;
  // The indexes of its scheduling groups (Attributes::scheduling_group values), on
  // every NUMA node it spans, in the order --fiber_pools laid them out; empty for a
  // pool of another runtime. Needs a running runtime (else it stops the process with a
  // message).
  std::vector<std::size_t> scheduling_groups() const;
  friend bool operator==(FiberPool a, FiberPool b) { return a.index_ == b.index_; }
  friend bool operator!=(FiberPool a, FiberPool b) { return a.index_ != b.index_; }

 private:
  static constexpr std::uint32_t kCallers = ~std::uint32_t{0};
  constexpr explicit FiberPool(std::uint32_t index) : index_(index) {}
  std::uint32_t index_ = kCallers;
};

// A handle to a fiber, shaped like std::thread: construct it to start a fiber, then
// join() or detach() it exactly once. Destroying a joinable Fiber is a fatal error.
// The handle itself is not thread-safe; the fiber it names runs independently.
class Fiber {
 public:
  // Attributes::scheduling_group's default: the caller's group on a worker; elsewhere
  // the groups of the calling CPU's NUMA node (or all groups) in turn.
  static constexpr std::size_t kNearestSchedulingGroup =
      std::numeric_limits<std::size_t>::max();

  // How a fiber is started. The defaults: queued, in the nearest group, free to move,
  // with the default stack, in no execution context, in the StartOrder of the flags.
  // Checked when the fiber starts: a scheduling_group out of range, a stack_size over
  // 1 GiB or a start_order that is not an enumerator stops the process with a message
  // naming the field and its value.
  struct Attributes {
    // Queue the fiber (kPost) or run it at once (kDispatch; see Launch). kDispatch acts
    // as kPost unless the caller is a fiber of the fiber's scheduling group.
    Launch launch_policy = Launch::kPost;
    // Which scheduling group runs the fiber; by default the caller's (on a worker) or
    // the groups in turn (elsewhere). Otherwise a group index < GetSchedulingGroupCount().
    std::size_t scheduling_group = kNearestSchedulingGroup;
    // If true, the fiber never runs outside its scheduling group (never stolen, and
    // never queued in another group that wakes it). Otherwise it may move to another
    // group of its node: stolen by an idle one, or queued where a worker of such a
    // group wakes it (it then belongs to that group).
    bool scheduling_group_local = false;
    // Bytes of stack for the fiber; 0: --fiber_stack_size. Other sizes are rounded up
    // to a power of two of at least 16 KiB (the stack size classes); at most 1 GiB
    // (more is a fatal error naming the value). Stacks of each class are pooled apart.
    // A joinable fiber that asks for more than the default is never run inline by
    // join() on a joiner with less stack than that to spare.
    std::size_t stack_size = 0;
    // If true, the fiber runs in the execution context (fiber/execution_context.h)
    // that the caller runs in now, and keeps it alive until it ends; if false (the
    // default), it starts in none.
    bool inherit_execution_context = false;
    // Where the new fiber waits (kPost from a fiber of the same group; see StartOrder).
    StartOrder start_order = StartOrder::kDefault;
    // The pool that runs it (--fiber_pools): by default the caller's (FiberPool()).
    // `pool_name`, if not null, names it instead (a pool that does not exist stops the
    // process with a message naming it and the declared pools; the TryStart forms
    // return NotFound). A scheduling_group outside the pool is an error the same way.
    FiberPool pool;
    const char* pool_name = nullptr;
  };

  Fiber() = default;

  // Admission (--fiber_pools max_fibers=, --fiber_max_fibers). A start that can be
  // refused: the fiber starts as the constructor would start it, unless
  //   - its pool is at its cap on live fibers: ResourceExhausted naming the pool, its
  //     cap and its live count;
  //   - no stack can be had for it (the address space, vm.max_map_count or a memory
  //     cgroup exhausted): ResourceExhausted naming the cause. The stack is taken here,
  //     so an admitted fiber never waits for one;
  //   - its attributes name a pool that does not exist (NotFound), or are otherwise
  //     invalid (InvalidArgument, naming the field and its value);
  // and then nothing of it remains: `start_proc` is destroyed before the call returns,
  // no fiber is counted. Callable from fibers and plain threads while the runtime runs.
  // An admitted fiber holds its place until its stack is reclaimed, just after it ends
  // (a joiner may return a moment before).
  // A plain start (the constructors, StartFiberDetached) is never refused: past the cap
  // it starts anyway (counted in the pool's started_past_cap), and when no stack can be
  // had the worker that takes it waits for one, logging an error every 10 s, while the
  // pool's other workers go on (docs/operating.md, "Admission").
  template <class F, std::enable_if_t<std::is_invocable_v<std::decay_t<F>&>, int> = 0>
  static absl::StatusOr<Fiber> TryStart(const Attributes& attributes, F&& start_proc) {
    return TryStartFunction(attributes, {}, false,
                            internal::FiberFunction(std::forward<F>(start_proc)));
  }
  // TryStart() that waits for room in the pool until `deadline` (DeadlineExceeded
  // then), or until the caller's execution context (fiber/execution_context.h) is
  // cancelled (Cancelled) or reaches its own deadline (DeadlineExceeded). Waiters are
  // admitted oldest first as fibers of the pool end. A failure to get a stack is not
  // waited out: it is returned at once, as by TryStart().
  template <class F, std::enable_if_t<std::is_invocable_v<std::decay_t<F>&>, int> = 0>
  static absl::StatusOr<Fiber> TryStartUntil(std::chrono::steady_clock::time_point deadline,
                                             const Attributes& attributes, F&& start_proc) {
    return TryStartFunction(attributes, deadline, true,
                            internal::FiberFunction(std::forward<F>(start_proc)));
  }

  // Starts a fiber that runs `start_proc`, as `attributes` say (the first overload: the
  // defaults), and returns its handle, joinable. Callable from fibers and plain threads
  // while the runtime runs; without a running runtime, with an empty function or with
  // invalid attributes (see Attributes) it stops the process with a message.
  explicit Fiber(absl::AnyInvocable<void()> start_proc);
  Fiber(const Attributes& attributes, absl::AnyInvocable<void()> start_proc);
  // The same for any callable taking no arguments (a lambda, usually), stored without a
  // type-erasing wrapper of its own: one of up to 32 bytes that is trivially copyable (a
  // lambda capturing references, pointers and numbers) costs the spawn no allocation
  // and no indirect call to move or destroy it.
  template <class F, std::enable_if_t<internal::kIsFiberCallable<F>, int> = 0>
  explicit Fiber(F&& start_proc) {
    Start(Attributes(), internal::FiberFunction(std::forward<F>(start_proc)));
  }
  template <class F, std::enable_if_t<internal::kIsFiberCallable<F>, int> = 0>
  Fiber(const Attributes& attributes, F&& start_proc) {
    Start(attributes, internal::FiberFunction(std::forward<F>(start_proc)));
  }
  ~Fiber();

  // Moves the handle: `other` then names no fiber (get_id() 0, not joinable). Assigning
  // to a handle that is still joinable stops the process with a message, as destroying
  // one does: join() or detach() it first.
  Fiber(Fiber&& other) noexcept;
  Fiber& operator=(Fiber&& other) noexcept;
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;

  // Waits until the fiber has finished. From a fiber it parks only the calling fiber;
  // from a plain thread it blocks the thread. Called from a fiber on a fiber that has
  // not started yet, it runs that fiber's function right here on the caller's stack
  // instead (when at least 32 KiB of it is free; never a fiber of another pool, of a
  // pool with a cap, or one a TryStart form started): fork-join code then needs no stack
  // per child. Inside a function run this way, this_fiber::GetId() is the joiner's id;
  // everything else is as on a stack of its own: the function has its own FiberLocal
  // values (fiber/fiber_local.h), destroyed before join() returns, and runs in the
  // execution context it inherited, if any, not in the joiner's.
  void join();
  // join() with a deadline, interruptible (fiber/execution_context.h): true once the
  // fiber has finished (the handle is then no longer joinable, as after join()); false
  // if `deadline` passed, or the caller's execution context was cancelled or reached
  // its deadline, first (the handle stays joinable: join it again or detach it). It
  // never runs the fiber inline.
  bool join_until(std::chrono::steady_clock::time_point deadline);
  // join_until() with the deadline `timeout` from now.
  template <class Rep, class Period>
  bool join_for(std::chrono::duration<Rep, Period> timeout) {
    return join_until(std::chrono::steady_clock::now() +
                      std::chrono::duration_cast<std::chrono::steady_clock::duration>(timeout));
  }
  // Lets the fiber run on its own; the handle no longer refers to it.
  void detach();
  // Whether the handle names a fiber not yet joined or detached. join(), join_until(),
  // join_for() and detach() on a handle that is not joinable stop the process with a
  // message.
  bool joinable() const { return join_state_ != nullptr; }
  // The fiber's id (0 for a handle that names no fiber).
  std::uint64_t get_id() const { return id_; }

 private:
  void Start(const Attributes& attributes, internal::FiberFunction start_proc);
  // TryStart()'s and TryStartUntil()'s common path: `wait` says whether to wait for
  // room until `deadline`.
  static absl::StatusOr<Fiber> TryStartFunction(const Attributes& attributes,
                                                std::chrono::steady_clock::time_point deadline,
                                                bool wait, internal::FiberFunction start_proc);

  // Shared with the fiber (reference-counted inside); null when not joinable.
  internal::JoinState* join_state_ = nullptr;
  std::uint64_t id_ = 0;
};

namespace internal {
// StartFiberDetached's common path, for its templates below.
void StartFiberDetachedFunction(const Fiber::Attributes& attributes, FiberFunction start_proc);
}  // namespace internal

// Starts a fiber nobody joins. Callable from any thread, fibers and plain threads alike.
// An empty function (a null function pointer, an empty std::function or
// absl::AnyInvocable) is a fatal error naming it, here and in Fiber's constructors.
void StartFiberDetached(absl::AnyInvocable<void()> start_proc);
void StartFiberDetached(const Fiber::Attributes& attributes,
                        absl::AnyInvocable<void()> start_proc);
// The same for any callable taking no arguments, stored as Fiber's constructor
// templates store it (no wrapper of its own, no allocation for a small lambda).
template <class F, std::enable_if_t<internal::kIsFiberCallable<F>, int> = 0>
void StartFiberDetached(F&& start_proc) {
  internal::StartFiberDetachedFunction(Fiber::Attributes(),
                                       internal::FiberFunction(std::forward<F>(start_proc)));
}
template <class F, std::enable_if_t<internal::kIsFiberCallable<F>, int> = 0>
void StartFiberDetached(const Fiber::Attributes& attributes, F&& start_proc) {
  internal::StartFiberDetachedFunction(attributes,
                                       internal::FiberFunction(std::forward<F>(start_proc)));
}

namespace internal {
// TryStartFiberDetached's common path (see Fiber::TryStart()).
absl::Status TryStartFiberDetachedFunction(const Fiber::Attributes& attributes,
                                           std::chrono::steady_clock::time_point deadline,
                                           bool wait, FiberFunction start_proc);
}  // namespace internal

// Fiber::TryStart() and Fiber::TryStartUntil() for a fiber nobody joins: OK once it is
// started, else the same errors, with nothing of it left.
template <class F, std::enable_if_t<std::is_invocable_v<std::decay_t<F>&>, int> = 0>
absl::Status TryStartFiberDetached(const Fiber::Attributes& attributes, F&& start_proc) {
  return internal::TryStartFiberDetachedFunction(
      attributes, {}, false, internal::FiberFunction(std::forward<F>(start_proc)));
}
// TryStartFiberDetached() that waits for room until `deadline`, as Fiber::TryStartUntil().
template <class F, std::enable_if_t<std::is_invocable_v<std::decay_t<F>&>, int> = 0>
absl::Status TryStartFiberDetachedUntil(std::chrono::steady_clock::time_point deadline,
                                        const Fiber::Attributes& attributes, F&& start_proc) {
  return internal::TryStartFiberDetachedFunction(
      attributes, deadline, true, internal::FiberFunction(std::forward<F>(start_proc)));
}

// Starts many detached fibers at once (one queue operation and at most one wake-up per
// worker). Callable from any thread.
void BatchStartFiberDetached(std::vector<absl::AnyInvocable<void()>> start_procs);

}  // namespace spindle

#endif  // SPINDLE_FIBER_FIBER_H_
