// Copyright 2026 The Spindle Authors.

#include "fiber/fiber.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <iterator>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "fiber/execution_context.h"
#include "fiber/internal/batch_pool.h"
#include "fiber/internal/fiber_entity.h"
#include "fiber/internal/stack_allocator.h"
#include "glog/logging.h"
#include "runtime/internal/base/live_fibers.h"
#include "runtime/internal/group/parking.h"
#include "runtime/internal/group/take_back.h"
#include "runtime/internal/runtime_impl.h"
#include "sync/internal/timed_waiter.h"

namespace spindle {
namespace internal {

// What a Fiber handle shares with its fiber: its descriptor (the base: queued in place
// of a pooled one, so a joinable fiber costs one object, and its function is stored once,
// where both the worker and an inline join take it), the claim, and the hand-off of its
// exit to a joiner. See Fiber::join() and FiberDesc::claim.
//
// Why join() cannot miss the exit: `waiter_` goes from kRunning to either kExited
// (Signal() first) or the joiner's TimedWaiter (Wait() first), by one exchange or CAS
// each, so exactly one side sees the other. If the joiner registered first, Signal()
// finds its waiter and notifies it; TimedWaiter keeps a Notify() that arrives before
// WaitUntil(), and the joiner's frame (where the waiter lives) outlasts the Notify()
// (see timed_waiter.h). If Signal() came first, the CAS fails and join() returns.
//
// Three references: the handle (until join() or detach()); the run (the fiber's exit
// hook, or the joiner that ran it inline); the descriptor (released by FreeFiberDesc():
// after a worker instantiated it, or once a joiner that ran it inline and the queue
// holding its dead entry are both done with it). From PooledObjects: the fiber usually
// releases on a worker, the handle on the spawner.
struct JoinState : FiberDesc {
  JoinState() {
    hooks = &kHooks;
    claim = &claimed;
  }

  // Called once, by the fiber's exit hook.
  void Signal() {
    // acq_rel: publishes the fiber's effects to the joiner, and acquires its waiter.
    const std::uintptr_t old = waiter_.exchange(kExited, std::memory_order_acq_rel);
    if (old != kRunning) {
      reinterpret_cast<TimedWaiter*>(old)->Notify();
      // release: our last access to the waiter, for a joiner that gave up meanwhile
      // and found it taken (TryWaitUntil()).
      notified_.store(true, std::memory_order_release);
    }
  }
  // A joiner's wait object (FiberEntity::wait_object) is the joined fiber's id (&id,
  // FiberDesc's): the handle's reference keeps this state, and the id, while it waits.
  //
  // join_until()'s wait: Wait() until `deadline` or the cancellation of `limits`. True
  // if the fiber exited; false if the joiner gave up, its waiter withdrawn (waiter_ is
  // kRunning again: a later wait starts afresh).
  bool TryWaitUntil(MonotonicDeadline deadline, const WaitLimits* limits) {
    // acquire: as in Wait().
    if (waiter_.load(std::memory_order_acquire) == kExited) return true;
    TimedWaiter waiter;
    const auto mine = reinterpret_cast<std::uintptr_t>(&waiter);
    std::uintptr_t expected = kRunning;
    // acq_rel: as in Wait().
    if (!waiter_.compare_exchange_strong(expected, mine, std::memory_order_acq_rel)) {
      return true;  // exited first
    }
    if (waiter.WaitUntil(deadline, WaitKind::kJoin, limits, &id) ==
        TimedWaiter::Result::kNotified) {
      return true;
    }
    // Timed out or cancelled: withdraw the waiter before its frame goes.
    expected = mine;
    // acq_rel: on failure, acquires Signal()'s exchange (the fiber's effects).
    if (waiter_.compare_exchange_strong(expected, kRunning, std::memory_order_acq_rel)) {
      return false;
    }
    // Signal() took the waiter (its Notify() lost to us): the fiber has exited. Wait
    // until Signal() is done with the waiter. acquire: pairs with its release store.
    while (!notified_.load(std::memory_order_acquire)) std::this_thread::yield();
    return true;
  }
  // Called at most once, by join(); returns after Signal().
  void Wait() {
    // acquire: pairs with Signal()'s exchange; spares the waiter once it has exited.
    if (waiter_.load(std::memory_order_acquire) == kExited) return;
    TimedWaiter waiter;
    std::uintptr_t expected = kRunning;
    // acq_rel: publishes the waiter to Signal(); on failure, acquires the exit.
    if (waiter_.compare_exchange_strong(expected, reinterpret_cast<std::uintptr_t>(&waiter),
                                        std::memory_order_acq_rel)) {
      waiter.WaitUntil(MonotonicDeadline::None(), WaitKind::kJoin, nullptr, &id);
    }
  }

  static JoinState* New() { return PooledObjects<JoinState>::New(); }
  // Drops `n` of the references above.
  void Release(int n = 1) {
    // acq_rel: the last owner sees the others' accesses before it recycles the state.
    if (refs_.fetch_sub(n, std::memory_order_acq_rel) == n) Recycle(this);
  }

  std::atomic<bool> claimed{false};
  // Where the fiber was started: what join() takes its entry back from after running it
  // inline.
  SchedulingGroup* group = nullptr;

 private:
  static void Recycle(JoinState* state);
  static const FiberDescHooks kHooks;

  static constexpr std::uintptr_t kRunning = 0;
  static constexpr std::uintptr_t kExited = 1;
  std::atomic<std::uintptr_t> waiter_{kRunning};  // or the joiner's TimedWaiter*
  std::atomic<bool> notified_{false};  // Signal() is done with a waiter it found
  std::atomic<int> refs_{3};
};

const FiberDescHooks JoinState::kHooks = {
    /*on_exit=*/[](void* desc) {
      auto* state = static_cast<JoinState*>(static_cast<FiberDesc*>(desc));
      state->Signal();
      state->Release();  // the run's reference
    },
    /*on_free=*/[](FiberDesc* desc) { static_cast<JoinState*>(desc)->Release(); }};

void JoinState::Recycle(JoinState* state) {
  // Every owner is done with it: plain resets (relaxed for the atomics) before it is
  // handed out again, which publishes them (a later New() on this thread, or a batch
  // passed through the pool's lock). `hooks` stays; `claim` is restored (a start may
  // have cleared it: ForbidInlineRun).
  if (state->start_proc) state->start_proc = nullptr;  // usually run and reset already
  state->id = 0;
  state->ready_stamp = 0;
  state->run_inline_refs.store(2, std::memory_order_relaxed);
  state->scheduling_group_local = false;
  state->stack_class = 0;
  state->start_reason = 0;
  state->claimed.store(false, std::memory_order_relaxed);
  state->claim = &state->claimed;
  state->group = nullptr;
  state->waiter_.store(kRunning, std::memory_order_relaxed);
  state->notified_.store(false, std::memory_order_relaxed);
  state->refs_.store(3, std::memory_order_relaxed);
  PooledObjects<JoinState>::Delete(state);
}

}  // namespace internal

namespace {

// Stack a joiner must have left to run a not-yet-started child inline.
constexpr std::size_t kInlineJoinStackReserve = 32 * 1024;

// Whether a joiner of group `joiner` may run inline a child started in group `child`:
// only within one pool (a joiner that no group runs, switched to by hand, may).
__attribute__((noinline)) bool SamePool(const internal::SchedulingGroup* joiner,
                                        const internal::SchedulingGroup* child) {
  return joiner == nullptr || joiner->pool() == child->pool();
}

bool HasStackToSpare(const internal::FiberEntity* self, std::size_t reserve) {
  const char* here = static_cast<const char*>(__builtin_frame_address(0));
  return here - self->stack().base > static_cast<std::ptrdiff_t>(reserve);
}

// The group a start with `attributes` goes to, or the error naming the attribute.
absl::Status PlaceFiber(const Fiber::Attributes& attributes,
                        internal::SchedulingGroup** group) {
  internal::Runtime::StartPlace place;
  if (!attributes.pool.is_callers()) place.pool = attributes.pool.index();
  place.pool_name = attributes.pool_name;
  if (attributes.scheduling_group != Fiber::kNearestSchedulingGroup) {
    place.scheduling_group = attributes.scheduling_group;
  }
  return internal::Runtime::Get().PlaceStart(place, group);
}

// Out of line: inlined, its Status and StartPlace would widen every start's frame.
__attribute__((noinline)) internal::SchedulingGroup* ChooseGroup(
    const Fiber::Attributes& attributes) {
  internal::SchedulingGroup* group = nullptr;
  const absl::Status placed = PlaceFiber(attributes, &group);
  if (!placed.ok()) LOG(FATAL) << placed.message();
  return group;
}

// The stack size class for the attributes (0: the default); a size out of range is a
// fatal error naming it.
__attribute__((noinline)) std::uint8_t StackClassOfSize(const Fiber::Attributes& attributes);
inline std::uint8_t StackClassOf(const Fiber::Attributes& attributes) {
  return attributes.stack_size == 0 ? 0 : StackClassOfSize(attributes);
}
std::uint8_t StackClassOfSize(const Fiber::Attributes& attributes) {
  const std::string error = internal::ValidateRequestedStackSize(attributes.stack_size);
  if (!error.empty()) LOG(FATAL) << error;
  return internal::StackClassFor(attributes.stack_size);
}

// Wraps `*start_proc` to run in the caller's execution context if the attributes ask
// for it and there is one. In place: the common case costs a test, not two moves of the
// function on every start.
__attribute__((noinline)) void InheritContext(internal::FiberFunction* start_proc) {
  if (ExecutionContext::Current() == nullptr) return;
  *start_proc = CaptureExecutionContext(absl::AnyInvocable<void()>(std::move(*start_proc)));
}
inline void InheritContextIfAsked(const Fiber::Attributes& attributes,
                                  internal::FiberFunction* start_proc) {
  if (__builtin_expect(attributes.inherit_execution_context, 0)) InheritContext(start_proc);
}

// A start with an empty function: a fiber that would crash when it runs, far from the
// mistake. Fatal here, naming the call.
[[noreturn]] __attribute__((noinline, cold)) void RejectEmptyFunction(const std::string& where) {
  LOG(FATAL) << where
             << " was given an empty function (a null function pointer, or an empty "
                "std::function or absl::AnyInvocable): expected a callable to run";
  std::abort();
}

// Queues or dispatches `desc` as the attributes say (its stack class already set, see
// StackClassOf()); returns its group. `admitted`: the group a TryStart form chose and
// admitted it to (null: a plain start, placed here; the group counts it against its
// pool's cap, SchedulingGroup::CountAdmission).
template <bool kAdmitted>
internal::SchedulingGroup* LaunchFiberImpl(const Fiber::Attributes& attributes,
                                           internal::FiberDesc* desc,
                                           internal::SchedulingGroup* admitted) {
  desc->scheduling_group_local = attributes.scheduling_group_local;
  // How the strategy queues it, by StartOrder (kDefault, kNext, kBack).
  static constexpr internal::ReadyReason kStartReasons[] = {
      internal::ReadyReason::kStarted, internal::ReadyReason::kStartedNext,
      internal::ReadyReason::kStartedBack};
  const auto order = static_cast<std::size_t>(attributes.start_order);
  CHECK_LT(order, std::size(kStartReasons))
      << "Fiber::Attributes::start_order=" << order
      << " is invalid: expected kDefault, kNext or kBack";
  desc->start_reason = static_cast<std::uint8_t>(kStartReasons[order]);
  internal::FiberEntity* self = internal::GetCurrentFiberEntity();
  const bool in_fiber = self != nullptr && !self->is_master();
  // The common case, a fiber on a worker starting a child in its own group: the
  // worker's group is the nearest, and the fiber knows its worker (no thread-local
  // look-ups of the runtime's worker and of the thread's binding).
  // (A fiber that no group runs, switched to by hand, has no group: the general path.)
  if constexpr (!kAdmitted) {
    if (in_fiber && attributes.scheduling_group == Fiber::kNearestSchedulingGroup &&
        attributes.launch_policy != spindle::Launch::kDispatch &&
        attributes.pool.is_callers() && attributes.pool_name == nullptr &&
        self->scheduling_group != nullptr &&
        self->scheduling_worker < self->scheduling_group->size()) {
      internal::SchedulingGroup* group = self->scheduling_group;
      group->StartFiberOnWorker(desc, self->scheduling_worker);
      return group;
    }
  }
  internal::SchedulingGroup* group = kAdmitted ? admitted : ChooseGroup(attributes);
  if (attributes.launch_policy == spindle::Launch::kDispatch && in_fiber &&
      self->scheduling_group == group) {
    internal::DispatchFiber(self, desc);
    return group;
  }
  group->StartFiber(desc);
  return group;
}

// A plain start's launch: placed here, counted by the group.
internal::SchedulingGroup* LaunchFiber(const Fiber::Attributes& attributes,
                                       internal::FiberDesc* desc) {
  return LaunchFiberImpl<false>(attributes, desc, nullptr);
}
// A TryStart form's launch into the group that admitted it.
internal::SchedulingGroup* LaunchAdmittedFiber(const Fiber::Attributes& attributes,
                                               internal::FiberDesc* desc,
                                               internal::SchedulingGroup* admitted) {
  return LaunchFiberImpl<true>(attributes, desc, admitted);
}

}  // namespace

Fiber::Fiber(absl::AnyInvocable<void()> start_proc) {
  Start(Attributes(), internal::FiberFunction(std::move(start_proc)));
}

Fiber::Fiber(const Attributes& attributes, absl::AnyInvocable<void()> start_proc) {
  Start(attributes, internal::FiberFunction(std::move(start_proc)));
}

void Fiber::Start(const Attributes& attributes, internal::FiberFunction start_proc) {
  if (__builtin_expect(!start_proc, 0)) RejectEmptyFunction("spindle::Fiber");
  internal::JoinState* state = internal::JoinState::New();
  join_state_ = state;
  InheritContextIfAsked(attributes, &start_proc);
  // Run once, by whoever wins the claim: the worker that takes the descriptor (it checks
  // before taking a stack), or the joiner, inline.
  state->start_proc = std::move(start_proc);
  state->id = internal::NewFiberId();
  internal::CountFiberStarted(1);
  id_ = state->id;
  state->stack_class = StackClassOf(attributes);
  // The descriptor may be run before LaunchFiber returns; the handle's reference keeps
  // it (and the group field, read only by join()) alive.
  state->group = LaunchFiber(attributes, state);
}

Fiber::~Fiber() {
  if (joinable()) {
    LOG(FATAL) << "spindle::Fiber for fiber " << id_
               << " destroyed while joinable: call join() or detach() first";
  }
}

Fiber::Fiber(Fiber&& other) noexcept : join_state_(other.join_state_), id_(other.id_) {
  other.join_state_ = nullptr;
  other.id_ = 0;
}

Fiber& Fiber::operator=(Fiber&& other) noexcept {
  if (joinable()) {
    LOG(FATAL) << "spindle::Fiber for fiber " << id_
               << " assigned to while joinable: call join() or detach() first";
  }
  join_state_ = other.join_state_;
  id_ = other.id_;
  other.join_state_ = nullptr;
  other.id_ = 0;
  return *this;
}

void Fiber::join() {
  CHECK(joinable()) << "join() on a Fiber that is not joinable";
  internal::JoinState* state = join_state_;
  internal::FiberEntity* self = internal::GetCurrentFiberEntity();
  // relaxed pre-check: a hint that spares the locked exchange once the fiber started.
  // Never across pools: the child would run on a worker of the joiner's pool (the
  // common case, a child of the joiner's own group, is one comparison).
  if (self != nullptr && !self->is_master() &&
      !state->claimed.load(std::memory_order_relaxed) &&
      (self->scheduling_group == state->group || SamePool(self->scheduling_group, state->group)) &&
      HasStackToSpare(self, state->stack_class == 0
                                ? kInlineJoinStackReserve
                                : std::max(kInlineJoinStackReserve,
                                           internal::StackClassSize(state->stack_class))) &&
      // acq_rel: pairs with the worker's claim (ClaimEntry()); the winner runs it.
      !state->claimed.exchange(true, std::memory_order_acq_rel)) {
    // Run in place: whoever finds the descriptor queued from now on sees the claim
    // taken and touches nothing but its references. (Never a fiber with a reserved
    // stack or a place under a cap: ForbidInlineRun.)
    // The child gets fiber-locals of its own: the joiner's step aside meanwhile (only
    // when it has some: the common case pays a test).
    std::optional<internal::FiberLocalStorage> joiner_locals;
    if (__builtin_expect(!self->locals.empty(), 0)) {
      self->locals.MoveTo(&joiner_locals.emplace());
    }
    try {
      state->start_proc();
    } catch (const std::exception& e) {
      LOG(FATAL) << "exception escaped fiber " << id_ << " (run inline by join()): "
                 << e.what();
    } catch (...) {
      LOG(FATAL) << "exception of unknown type escaped fiber " << id_
                 << " (run inline by join())";
    }
    // Destroyed before join() returns, as a fiber's function is destroyed on the fiber
    // before its exit is signalled.
    state->start_proc = nullptr;
    // `self` is still this fiber's entity, though maybe on another worker now.
    self->locals.DestroyValues(id_);
    if (joiner_locals.has_value()) joiner_locals->MoveTo(&self->locals);
    internal::CountFiberFinished();
    // The descriptor is still queued somewhere; take it back (this hands over our
    // reference to it). `self` may be on another worker by now: the group reads
    // where it runs.
    internal::TakeBackRunInline(state->group, self, state);
    state->Release(2);  // the run's reference, and the handle's
  } else {
    state->Wait();
    state->Release();  // the handle's
  }
  join_state_ = nullptr;
  id_ = 0;
}

bool Fiber::join_until(std::chrono::steady_clock::time_point deadline) {
  CHECK(joinable()) << "join_until() on a Fiber that is not joinable";
  if (!join_state_->TryWaitUntil(internal::MonotonicDeadline::At(deadline),
                                 internal::CurrentWaitLimits())) {
    return false;
  }
  join_state_->Release();  // the handle's
  join_state_ = nullptr;
  id_ = 0;
  return true;
}

void Fiber::detach() {
  CHECK(joinable()) << "detach() on a Fiber that is not joinable";
  join_state_->Release();
  join_state_ = nullptr;
  id_ = 0;
}

void StartFiberDetached(absl::AnyInvocable<void()> start_proc) {
  StartFiberDetached(Fiber::Attributes(), std::move(start_proc));
}

void StartFiberDetached(const Fiber::Attributes& attributes,
                        absl::AnyInvocable<void()> start_proc) {
  internal::StartFiberDetachedFunction(attributes, internal::FiberFunction(std::move(start_proc)));
}

namespace internal {

void StartFiberDetachedFunction(const Fiber::Attributes& attributes, FiberFunction start_proc) {
  if (__builtin_expect(!start_proc, 0)) RejectEmptyFunction("spindle::StartFiberDetached");
  InheritContextIfAsked(attributes, &start_proc);
  FiberDesc* desc = NewFiberDesc(std::move(start_proc));
  desc->stack_class = StackClassOf(attributes);
  LaunchFiber(attributes, desc);
}

}  // namespace internal

void BatchStartFiberDetached(std::vector<absl::AnyInvocable<void()>> start_procs) {
  if (start_procs.empty()) return;
  for (std::size_t i = 0; i < start_procs.size(); ++i) {
    if (!start_procs[i]) {
      RejectEmptyFunction("spindle::BatchStartFiberDetached (function " + std::to_string(i) +
                          " of " + std::to_string(start_procs.size()) + ")");
    }
  }
  std::vector<internal::FiberDesc*> descs;
  descs.reserve(start_procs.size());
  for (auto& proc : start_procs) descs.push_back(internal::NewFiberDesc(std::move(proc)));
  internal::Runtime::Get().NearestGroup()->StartFibers(descs.data(), descs.size());
}

// ---- Pools and admission.

absl::StatusOr<FiberPool> FiberPool::Find(std::string_view name) {
  if (!internal::Runtime::IsRunning()) {
    return absl::FailedPreconditionError("FiberPool::Find(\"" + std::string(name) +
                                         "\"): the Spindle runtime is not running");
  }
  internal::Runtime& runtime = internal::Runtime::Get();
  internal::FiberPoolState* pool = runtime.FindPool(name);
  if (pool == nullptr) {
    return absl::NotFoundError("no fiber pool is named \"" + std::string(name) +
                               "\": declared are " + runtime.PoolNames() + " (--fiber_pools)");
  }
  return FiberPool(static_cast<std::uint32_t>(pool->index()));
}

FiberPool FiberPool::Current() {
  internal::FiberEntity* self = internal::GetCurrentFiberEntity();
  if (self != nullptr && self->scheduling_group != nullptr) {
    return FiberPool(static_cast<std::uint32_t>(self->scheduling_group->pool()));
  }
  return Default();
}

std::size_t FiberPool::index() const {
  return is_callers() ? Current().index() : index_;
}

std::vector<std::size_t> FiberPool::scheduling_groups() const {
  internal::Runtime& runtime = internal::Runtime::Get();
  const std::size_t i = index();
  std::vector<std::size_t> groups;
  if (i >= runtime.pool_count()) return groups;
  for (const internal::SchedulingGroup* group : runtime.pool(i)->groups()) {
    groups.push_back(group->index());
  }
  return groups;
}

std::string FiberPool::name() const {
  internal::Runtime& runtime = internal::Runtime::Get();
  const std::size_t i = index();
  if (i >= runtime.pool_count()) return "(pool " + std::to_string(i) + " of another runtime)";
  return runtime.pool(i)->name();
}

namespace {

// What a TryStart form does before the fiber exists: validates the attributes, places
// the fiber, admits it to its pool (waiting for room until `deadline` if `wait`) and
// takes its stack. On success `*group` and `*stack` (PackStack()) are set, the fiber
// counted in its pool's admission; on failure nothing is counted or held.
absl::Status Admit(const Fiber::Attributes& attributes,
                   std::chrono::steady_clock::time_point deadline, bool wait,
                   internal::SchedulingGroup** group, std::uintptr_t* stack) {
  if (!internal::Runtime::IsRunning()) {
    return absl::FailedPreconditionError(
        "the Spindle runtime is not running: call spindle::StartRuntime() first");
  }
  std::string error = internal::ValidateRequestedStackSize(attributes.stack_size);
  if (!error.empty()) return absl::InvalidArgumentError(error);
  const auto order = static_cast<std::size_t>(attributes.start_order);
  if (order > static_cast<std::size_t>(StartOrder::kBack)) {
    return absl::InvalidArgumentError("Fiber::Attributes::start_order=" +
                                      std::to_string(order) +
                                      " is invalid: expected kDefault, kNext or kBack");
  }
  absl::Status placed = PlaceFiber(attributes, group);
  if (!placed.ok()) return placed;
  return internal::Runtime::Get().pool_of(*group)->AdmitStart(
      internal::MonotonicDeadline::At(deadline), wait, wait ? internal::CurrentWaitLimits() : nullptr,
      StackClassOf(attributes), stack);  // validated above
}

}  // namespace

absl::StatusOr<Fiber> Fiber::TryStartFunction(const Attributes& attributes,
                                              std::chrono::steady_clock::time_point deadline,
                                              bool wait, internal::FiberFunction start_proc) {
  if (!start_proc) {
    return absl::InvalidArgumentError(
        "spindle::Fiber::TryStart was given an empty function: expected a callable to run");
  }
  internal::SchedulingGroup* group = nullptr;
  std::uintptr_t stack = 0;
  absl::Status admitted = Admit(attributes, deadline, wait, &group, &stack);
  if (!admitted.ok()) return admitted;  // start_proc is destroyed with this frame
  Fiber fiber;
  internal::JoinState* state = internal::JoinState::New();
  fiber.join_state_ = state;
  InheritContextIfAsked(attributes, &start_proc);
  state->start_proc = std::move(start_proc);
  state->id = internal::NewFiberId();
  internal::CountFiberStarted(1);
  fiber.id_ = state->id;
  state->stack_class = StackClassOf(attributes);
  state->reserved_stack = stack;
  internal::ForbidInlineRun(state);  // its reserved stack is used by a worker
  state->group = LaunchAdmittedFiber(attributes, state, group);
  return fiber;
}

namespace internal {

absl::Status TryStartFiberDetachedFunction(const Fiber::Attributes& attributes,
                                           std::chrono::steady_clock::time_point deadline,
                                           bool wait, FiberFunction start_proc) {
  if (!start_proc) {
    return absl::InvalidArgumentError(
        "spindle::TryStartFiberDetached was given an empty function: expected a callable "
        "to run");
  }
  SchedulingGroup* group = nullptr;
  std::uintptr_t stack = 0;
  absl::Status admitted = Admit(attributes, deadline, wait, &group, &stack);
  if (!admitted.ok()) return admitted;
  InheritContextIfAsked(attributes, &start_proc);
  FiberDesc* desc = NewFiberDesc(std::move(start_proc));
  desc->stack_class = StackClassOf(attributes);
  desc->reserved_stack = stack;
  LaunchAdmittedFiber(attributes, desc, group);
  return absl::OkStatus();
}

}  // namespace internal

}  // namespace spindle
