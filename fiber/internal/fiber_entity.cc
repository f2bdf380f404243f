// Copyright 2026 The Spindle Authors.
//
// Switching between fibers. Per switch from A to B:
//   1. A (running) stores its hook in a Landing record on its own stack, tells the
//      sanitizers it is leaving, marks B current on this thread and jumps.
//   2. B lands: either returning from its own earlier jump in Switch(), or entering
//      FiberProc() for the first time. Either way it calls Land(): finish the sanitizer
//      switch, copy A's hook out of A's Landing record, run it.
// The Landing record stays valid until the hook runs because A cannot be resumed before
// then: whatever makes A resumable (the unlock of its scheduler lock, the re-queueing)
// is exactly what the hook does, and the hook is copied out before it runs.
//
// A fiber that finishes marks itself Dead under its scheduler lock and jumps to its
// thread's master for the last time; the master's landing hook unlocks nothing (the
// entity is about to vanish) but calls `reclaim`, which destroys the entity and
// recycles the stack. ASan learns the fiber is gone through a null fake-stack slot in
// the last switch, TSan through __tsan_destroy_fiber on the master.

#include "fiber/internal/fiber_entity.h"

#include "fiber/internal/cycle_clock.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <memory>
#include <new>
#include <vector>

#include <cxxabi.h>
#if defined(__x86_64__)
#endif

#include "fiber/internal/context.h"
#include "fiber/internal/exception_state.h"
#include "fiber/internal/fiber_switch.h"
#include "fiber/internal/sanitizers.h"
#include "fiber/internal/stack_overflow.h"
#include "fiber/internal/switch_safe_tls.h"
#include "glog/logging.h"

namespace spindle::internal {

namespace fiber_switch_internal {

__thread FiberEntity* tls_current_fiber = nullptr;
__thread ExceptionState* tls_exception_state = nullptr;

ExceptionState* LookUpExceptionState() {
  // Called through a volatile pointer: opaque to the optimizer, so no call is merged
  // with another across a fiber switch (the function is declared const).
  static abi::__cxa_eh_globals* (*volatile get_globals)() = &abi::__cxa_get_globals;
  tls_exception_state = reinterpret_cast<ExceptionState*>(get_globals());
  return tls_exception_state;
}

}  // namespace fiber_switch_internal

namespace {

using fiber_switch_internal::LookUpExceptionState;
using fiber_switch_internal::tls_current_fiber;
using fiber_switch_internal::tls_exception_state;

SPINDLE_SWITCH_SAFE_TLS_ACCESSOR(FiberEntity*, tls_current_fiber, CurrentFiberSlot)
SPINDLE_SWITCH_SAFE_TLS_ACCESSOR(ExceptionState*, tls_exception_state, ExceptionStateSlot)

bool QueryRunningGuardedStack(GuardedStackInfo* info) {
  const FiberEntity* fiber = *CurrentFiberSlot();
  if (fiber == nullptr || fiber->is_master() || !fiber->stack().guarded) return false;
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  info->guard_begin = fiber->stack().base - page;
  info->guard_end = fiber->stack().base;
  info->fiber_id = fiber->id;
  info->stack_size = fiber->stack().size;
  return true;
}

void ReclaimToThreadCache(FiberEntity* dead) {
  const Stack stack = DestroyFiberEntity(dead);
  StackCache::ForStack(stack).Put(stack);
}

void ReclaimDeadFiber(void* arg) {
  FiberEntity* dead = static_cast<FiberEntity*>(arg);
  dead->reclaim(dead);
}

constexpr std::uint64_t kIdBlock = 1024;
std::atomic<std::uint64_t> g_next_id_block{1};

}  // namespace

const char* FiberStateName(FiberState state) {
  switch (state) {
    case FiberState::kReady:
      return "Ready";
    case FiberState::kRunning:
      return "Running";
    case FiberState::kWaiting:
      return "Waiting";
    case FiberState::kDead:
      return "Dead";
  }
  return "?";
}

const char* WaitKindName(WaitKind kind) {
  switch (kind) {
    case WaitKind::kNone:
      return "nothing";
    case WaitKind::kMutex:
      return "mutex";
    case WaitKind::kConditionVariable:
      return "condition_variable";
    case WaitKind::kEvent:
      return "event";
    case WaitKind::kLatch:
      return "latch";
    case WaitKind::kFuture:
      return "future";
    case WaitKind::kSleep:
      return "timer";
    case WaitKind::kSocket:
      return "socket";
    case WaitKind::kSharedMutex:
      return "shared_mutex";
    case WaitKind::kSemaphore:
      return "semaphore";
    case WaitKind::kBarrier:
      return "barrier";
    case WaitKind::kJoin:
      return "join";
    case WaitKind::kRunBlocking:
      return "run_blocking";
    case WaitKind::kChannel:
      return "channel";
    case WaitKind::kOther:
      return "other";
  }
  return "?";
}

FiberEntity::FiberEntity(std::uint64_t id, const Stack& stack, bool is_master)
    : id(id),
      reclaim(&ReclaimToThreadCache),
      state_(is_master ? FiberState::kRunning : FiberState::kReady),
      state_since_(0),
      is_master_(is_master),
      stack_(stack) {}

FiberEntity::~FiberEntity() = default;

void FiberEntity::FailSetState(FiberState next) const {
  CHECK(scheduler_lock.IsLocked())
      << "fiber " << id << ": state changed to " << FiberStateName(next)
      << " without holding its scheduler lock";
  LOG(FATAL) << "fiber " << id << ": illegal state transition " << FiberStateName(state_)
             << " -> " << FiberStateName(next);
  std::abort();
}

void FiberEntity::FailTransition(FiberState expected, FiberState next) const {
  CHECK(scheduler_lock.IsLocked())
      << "fiber " << id << ": state changed to " << FiberStateName(next)
      << " without holding its scheduler lock";
  LOG(FATAL) << "fiber " << id << ": state " << FiberStateName(state_) << " where "
             << FiberStateName(expected) << " was expected, changing to "
             << FiberStateName(next);
  std::abort();
}

std::uint64_t FiberEntity::StateClockNow() { return CycleClockNow(); }

// Every transition of the diagram, and no other.
static_assert(FiberEntity::IsLegalTransition(FiberState::kReady, FiberState::kRunning));
static_assert(!FiberEntity::IsLegalTransition(FiberState::kReady, FiberState::kWaiting));
static_assert(FiberEntity::IsLegalTransition(FiberState::kRunning, FiberState::kDead));
static_assert(!FiberEntity::IsLegalTransition(FiberState::kRunning, FiberState::kRunning));
static_assert(FiberEntity::IsLegalTransition(FiberState::kWaiting, FiberState::kReady));
static_assert(!FiberEntity::IsLegalTransition(FiberState::kWaiting, FiberState::kRunning));
static_assert(!FiberEntity::IsLegalTransition(FiberState::kDead, FiberState::kReady));
static_assert(!FiberEntity::IsLegalTransition(static_cast<FiberState>(8), FiberState::kRunning));

// CheckUnguardedStack's report calls syscall() on a stack that may be all but used up.
// Bound here, when the program loads: with lazy binding (the linker's default without
// -z now, which Bazel's toolchain passes and a CMake or Makefile build may not), its
// first call would run the dynamic linker's resolver, which needs kilobytes of stack,
// there, and the overflow would end in a SIGSEGV without its report. A write of no
// bytes does nothing else.
[[maybe_unused]] static const long bind_syscall_at_load =
    syscall(SYS_write, STDERR_FILENO, "", 0);

void FiberEntity::CheckUnguardedStack() const {
  const char* sp = static_cast<const char*>(__builtin_frame_address(0));
  const bool below = sp < stack_.base;
  if (!below && StackCanaryIntact(stack_)) return;
  char message[256];
  const std::size_t length = FormatCanaryOverflowMessage(
      id, stack_.size, below ? "the stack pointer is below the stack"
                             : "the canary below the stack was overwritten",
      message, sizeof(message));
  // The raw system call: this may run below the stack, on the pad page, where a
  // sanitizer's write() interceptor would need more stack than is left.
  long ignored = syscall(SYS_write, STDERR_FILENO, message, length);
  (void)ignored;
  std::abort();
}

ExceptionState* ThisThreadExceptionState() {
  ExceptionState* live = *ExceptionStateSlot();
  return live != nullptr ? live : LookUpExceptionState();
}

void FiberEntity::SwitchTo(FiberEntity* target, LandingHook hook) {
  Switch(target, hook, /*leaving_for_good=*/false);
}

// The entry of every fiber (spindle_make_context's target). Not instrumented by
// ThreadSanitizer, nor is what it inlines (LeaveForGood's switch): each instrumented
// function pushes a frame on the TSan fiber's shadow call stack when entered and pops
// it when it returns, and the frames live at the last switch would never be popped. So
// everything with memory effects runs in RunToDeath(), which returns first; the TSan
// fiber then goes back to the pool with an empty shadow stack.
SPINDLE_NO_SANITIZE_THREAD void FiberProc(void* arg) {
  FiberEntity::RunToDeath(arg)->LeaveForGood();
}

__attribute__((noinline)) FiberEntity* FiberEntity::RunToDeath(void* landing) {
  FiberEntity* self = GetCurrentFiberEntity();
  self->Land(static_cast<FiberEntity::Landing*>(landing));
  try {
    self->start_proc();
  } catch (const std::exception& e) {
    LOG(FATAL) << "exception escaped fiber " << self->id << ": " << e.what();
  } catch (...) {
    LOG(FATAL) << "exception of unknown type escaped fiber " << self->id;
  }
  self->start_proc = nullptr;
  // On the fiber, before the exit hook: a joiner sees what the destructors did.
  self->locals.DestroyValues(self->id);
  self->MarkDead();
  return self;
}

void FiberEntity::MarkDead() {
  if (exit_barrier_hook != nullptr) {
    void (*const hook)(void*) = exit_barrier_hook;
    exit_barrier_hook = nullptr;
    hook(exit_barrier_arg);
  }
  // A fiber ends by returning from start_proc, so it has left every catch block and no
  // exception is in flight; anything else means the state was corrupted (or an ABI hack
  // left a handler open), and carrying it to the next fiber would release exceptions
  // still in use.
  const ExceptionState& live = *ThisThreadExceptionState();
  CHECK(live.caught_exceptions == nullptr && live.uncaught_exceptions == 0)
      << "fiber " << id << " finished while an exception was still being handled in it ("
      << (live.caught_exceptions != nullptr ? "a caught exception, " : "")
      << live.uncaught_exceptions << " uncaught)";
  scheduler_lock.lock();
  SetState(FiberState::kDead);
  scheduler_lock.unlock();
}

// Uninstrumented under TSan (see FiberProc): the inlined Switch() only copies the
// exception state and the landing record and writes this thread's current-fiber slot,
// all before the jump; every call it makes returns before the jump. Out of line in every
// build, and that is needed apart from TSan: it is entered after start_proc() ran, on
// whatever thread the fiber migrated to, so the plain thread-local accesses of its
// Switch() are that thread's (fiber_switch.h's rule), never an address kept from
// before.
SPINDLE_NO_SANITIZE_THREAD void FiberEntity::LeaveForGood() {
  // The fiber may have migrated while it ran: look the master up now, on this thread.
  Switch(GetMasterFiberEntity(), LandingHook{&ReclaimDeadFiber, this},
         /*leaving_for_good=*/true);
  LOG(FATAL) << "dead fiber " << id << " was resumed";
  std::abort();
}

// Every spawn writes the whole control block: a sixth cache line slows spawn-heavy
// work measurably. Grow it only with a measurement.
static_assert(sizeof(FiberEntity) + kStackHeaderSize <= 5 * 64,
              "the fiber control block must fit five cache lines");

std::size_t FiberControlBlockSize() {
  // The entity at a 64-byte boundary (run-queue entries are tagged pointers), the
  // stack header right above it, both in whole cache lines.
  constexpr std::size_t kAlign = 64;
  static_assert(kStackHeaderSize % alignof(std::atomic<std::uint32_t>) == 0);
  return (sizeof(FiberEntity) + kStackHeaderSize + kAlign - 1) / kAlign * kAlign;
}

#ifdef SPINDLE_TSAN
// TSan fibers. __tsan_create_fiber() costs milliseconds with GCC 12's libtsan (it
// clears a large thread state and maps a new thread context with its trace), far more
// than a fiber's whole life, and a test run under TSan spends most of its time creating
// them. So a dead fiber's TSan fiber is kept for the next fiber that
// first runs on the same thread: a pool per thread, taken at a fiber's first switch-in
// (not at its creation: a thread that only spawns, as a test's main thread does, would
// never get any back) and given back when the dead fiber is destroyed, on the worker
// whose master it left for.
//
// Reuse adds no happens-before edge TSan would not already see: the pooled fiber's
// clock is that of a fiber that died on this thread, which this thread's master
// acquired at the last switch (every switch synchronizes), and the new fiber's first
// switch-in acquires this thread's clock anyway. No lock is involved (a per-thread
// pool). Its shadow call stack is empty: a fiber's last switch runs in functions TSan
// does not instrument (FiberProc, LeaveForGood). Should a frame ever leak there, the
// stack still cannot overflow: a TSan fiber serves at most kTsanFiberMaxUses fibers.
// A race report's thread ("fiber T<n>") names the TSan fiber, so its creation stack is
// that of the first fiber it served.
namespace {

constexpr std::size_t kTsanFiberPoolMax = 32;          // per thread, 0.8 MiB each
constexpr std::uint32_t kTsanFiberMaxUses = 1024;
std::atomic<std::uint64_t> g_tsan_fibers_created{0};

struct PooledTsanFiber {
  void* fiber;
  std::uint32_t uses;
};

struct TsanFiberPool {
  std::vector<PooledTsanFiber> idle;
  ~TsanFiberPool();
};

// Set once this thread's pool was destroyed (thread exit): later fibers get and return
// TSan fibers directly. Trivially destructible, so readable during thread exit.
__thread bool tls_tsan_pool_gone = false;

TsanFiberPool& ThisThreadTsanPool() {
  thread_local TsanFiberPool pool;
  return pool;
}

TsanFiberPool::~TsanFiberPool() {
  tls_tsan_pool_gone = true;
  for (const PooledTsanFiber& pooled : idle) DestroyTsanFiber(pooled.fiber);
}

void RecycleTsanFiber(void* fiber, std::uint32_t uses) {
  if (fiber == nullptr) return;  // the fiber never ran
  if (!tls_tsan_pool_gone && uses + 1 < kTsanFiberMaxUses) {
    TsanFiberPool& pool = ThisThreadTsanPool();
    if (pool.idle.size() < kTsanFiberPoolMax) {
      pool.idle.push_back({fiber, uses + 1});
      return;
    }
  }
  DestroyTsanFiber(fiber);
}

}  // namespace

void AcquireTsanFiber(FiberEntity* fiber) {
  if (!tls_tsan_pool_gone) {
    TsanFiberPool& pool = ThisThreadTsanPool();
    if (!pool.idle.empty()) {
      fiber->tsan_fiber_ = pool.idle.back().fiber;  // the warmest
      fiber->tsan_fiber_uses_ = pool.idle.back().uses;
      pool.idle.pop_back();
      return;
    }
  }
  g_tsan_fibers_created.fetch_add(1, std::memory_order_relaxed);  // relaxed: statistic
  fiber->tsan_fiber_ = CreateTsanFiber();
  fiber->tsan_fiber_uses_ = 0;
}

std::uint64_t TsanFibersCreated() {
  return g_tsan_fibers_created.load(std::memory_order_relaxed);  // relaxed: statistic
}
#endif  // SPINDLE_TSAN

FiberEntity* InstantiateFiberEntity(const Stack& stack, FiberFunction start_proc,
                                    std::uint64_t id) {
  CHECK_GT(stack.size, FiberControlBlockSize() + 4096) << "fiber stack too small";
  if (stack.guarded) InstallStackOverflowHandler(&QueryRunningGuardedStack);
  char* control_block = stack.top() - FiberControlBlockSize();
  auto* fiber = new (control_block)
      FiberEntity(id != 0 ? id : NewFiberId(), stack, /*is_master=*/false);
  fiber->start_proc = std::move(start_proc);
  const std::size_t usable = static_cast<std::size_t>(control_block - stack.base);
  fiber->saved_sp_ = spindle_make_context(control_block, usable, &FiberProc);
  fiber->asan_stack_bottom_ = stack.base;
  fiber->asan_stack_size_ = usable;
  // The TSan fiber comes at the first switch-in (AcquireTsanFiber()).
  MarkStackEntityLive(stack);  // last: a dump may read the entity from now on
  return fiber;
}

Stack DestroyFiberEntity(FiberEntity* fiber) {
  CHECK(!fiber->is_master()) << "the master fiber is not destroyed this way";
  CHECK(fiber->state() == FiberState::kReady || fiber->state() == FiberState::kDead)
      << "fiber " << fiber->id << " destroyed while " << FiberStateName(fiber->state());
  MarkStackEntityGone(fiber->stack());  // first: waits until no dump reads the entity
#ifdef SPINDLE_TSAN
  RecycleTsanFiber(fiber->tsan_fiber_, fiber->tsan_fiber_uses_);
#endif
  const Stack stack = fiber->stack();
  fiber->~FiberEntity();
  return stack;
}

FiberEntity* GetMasterFiberEntity() {
  struct MasterHolder {
    std::unique_ptr<FiberEntity> master;
    ~MasterHolder() {
      if (master == nullptr) return;
      master->locals.DestroyValues(master->id);
      if (*CurrentFiberSlot() == master.get()) *CurrentFiberSlot() = nullptr;
    }
  };
  thread_local MasterHolder holder;
  if (holder.master == nullptr) {
    holder.master = std::make_unique<FiberEntity>(NewFiberId(), Stack{}, true);
    FiberEntity* master = holder.master.get();
    master->tsan_fiber_ = CurrentTsanFiber();
    pthread_attr_t attributes;
    if (pthread_getattr_np(pthread_self(), &attributes) == 0) {
      void* bottom = nullptr;
      std::size_t size = 0;
      pthread_attr_getstack(&attributes, &bottom, &size);
      master->asan_stack_bottom_ = bottom;
      master->asan_stack_size_ = size;
      pthread_attr_destroy(&attributes);
    }
    EnsureAlternateSignalStack();
    if (*CurrentFiberSlot() == nullptr) *CurrentFiberSlot() = master;
  }
  return holder.master.get();
}

// Out of line (never inlined into a caller that may switch) and reading the slot
// directly: one call, not two, on every Yield() and park.
__attribute__((noinline)) FiberEntity* GetCurrentFiberEntity() {
  FiberEntity** slot = &tls_current_fiber;
  asm volatile("" : "+r"(slot));  // as SPINDLE_SWITCH_SAFE_TLS_ACCESSOR's
  return *slot;
}

__attribute__((noinline)) std::uint64_t CurrentLockOwnerId() {
  FiberEntity** slot = &tls_current_fiber;
  asm volatile("" : "+r"(slot));  // as GetCurrentFiberEntity()'s
  const FiberEntity* self = *slot;
  return self != nullptr && !self->is_master() ? self->id : kLockOwnerThread;
}

FiberLocalStorage& CurrentFiberLocalStorage() {
  FiberEntity* self = *CurrentFiberSlot();
  if (__builtin_expect(self == nullptr, 0)) self = GetMasterFiberEntity();
  return self->locals;
}

// Out of line (callers in other units): the thread-local is read directly, as nothing
// here can switch (see fiber_switch.h).
const WaitLimits* CurrentWaitLimits() {
  FiberEntity* self = tls_current_fiber;
  return self != nullptr ? self->locals.wait_limits() : nullptr;
}

namespace {
FiberEntity* CurrentUserFiberOrNull() {
  FiberEntity* self = GetCurrentFiberEntity();
  return self != nullptr && !self->is_master() ? self : nullptr;
}
}  // namespace

ScopedWaitKind::ScopedWaitKind(WaitKind kind)
    : fiber_(CurrentUserFiberOrNull()),
      previous_(fiber_ != nullptr ? fiber_->wait_kind_override : WaitKind::kNone) {
  if (fiber_ != nullptr) fiber_->wait_kind_override = kind;
}

// The fiber may have migrated meanwhile, but fiber_ is the entity, not a thread slot.
ScopedWaitKind::~ScopedWaitKind() {
  if (fiber_ != nullptr) fiber_->wait_kind_override = previous_;
}

std::uint64_t NewFiberId() {
  thread_local std::uint64_t next = 0;
  thread_local std::uint64_t end = 0;
  if (next == end) {
    // relaxed: only uniqueness matters, which the atomic read-modify-write gives.
    next = g_next_id_block.fetch_add(kIdBlock, std::memory_order_relaxed);
    end = next + kIdBlock;
  }
  return next++;
}

}  // namespace spindle::internal
