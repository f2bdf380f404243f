// Copyright 2026 The Spindle Authors.
//
// Scheduling strategy v1: one bounded MPMC run queue per group, at most two spinning
// workers, lowest-numbered workers first. The design is flare's (and tRPC-Cpp's v1);
// see ../shared/reference/anchors_design.md §3.2. This is our own implementation.
//
// The problem. A producer (any thread) pushes a ready fiber; an idle worker must run it
// soon. Polling forever burns CPU; a futex wake on every push costs ~25-30 us on this
// VM and a system call for the producer. So a few idle workers poll ("spin") for a
// short time, and only when none does is a sleeping worker woken.
//
// Shared state: `spinning_workers_` and `sleeping_workers_`, 64-bit masks (bit i =
// worker i), `pending_spinner_wakeup_`, and one counted WaitSlot per worker.
//
// Producer, after pushing a fiber (Push + WakeUpOneWorker):
//   P1. seq_cst fence (pairs with W3's fence; see "no lost wake-up").
//   P2. Claim the lowest spinning worker: clear its bit with fetch_and. Whoever clears a
//       spinner's bit owns that spinner's next poll: the spinner will take a fiber. No
//       system call. Done.
//   P3. Otherwise claim the lowest sleeping worker the same way and Wake() its slot.
//   P4. If nobody spins or sleeps, every worker is busy and will pop the fiber when it
//       finishes its current one.
//
// Worker, when the queue looked empty:
//   S1. If fewer than two bits are set in `spinning_workers_`, set ours (CAS) and poll
//       the queue until `spin_time` passes or a producer clears our bit (P2).
//   S2. A spinner that sees `pending_spinner_wakeup_` takes it and wakes one sleeper
//       (the spinner pays that system call, not the producer).
//   S3. Leaving: clear our bit with fetch_and and keep its old value. If the bit was
//       already clear, a producer claimed us (P2, or a batch): we owe it a poll. Without
//       a fiber we poll the queue once more. With one (maybe popped before the claim
//       landed) we cannot take a second: if the queue still holds fibers, we pass the
//       claim on with P1-P4 (WakeUpOneWorker; "more work" below).
//       If we got a fiber and fewer than two workers remain spinning, set
//       `pending_spinner_wakeup_`: under load a new spinner should be recruited before
//       the next push arrives.
//   W1. Set our bit in `sleeping_workers_` (seq_cst RMW).
//   W2. seq_cst fence.
//   W3. Re-check the queue. If it has a fiber: clear our sleeping bit, and if the queue
//       still holds fibers, wake another worker ("more work" below): a producer that
//       already cleared our bit (P3) spent its Wake() on us, and its fiber may be among
//       them (the banked count makes our next Wait() return early: harmless).
//       Otherwise, if the group is stopping or our worker has a victim with fibers to
//       steal (T2 below), clear our bit and return without sleeping.
//   W4. Otherwise Wait() on our slot; then poll, and if we got a fiber and the queue
//       still holds fibers, wake another worker ("more work").
//
// No lost wake-up. The pair (push; P1; read masks) against (W1; W2; read queue) is
// the store-buffering (Dekker) pattern with a seq_cst fence on each side: at least one
// side sees the other's store. Either the producer sees our sleeping bit and wakes us,
// or we see its fiber and do not sleep. The WaitSlot counts wake-ups, so a Wake() that
// lands between W3 and W4 makes W4 return at once. A spinner claimed by a producer
// (P2) either polls again before it stops (S1, S3), and the fiber was pushed before the
// claim, so it takes that fiber or another worker already did; or it holds a fiber
// already and passes the claim on (S3) while fibers are still queued, which is P1-P4
// again for the same fiber.
//
// The wake-up that was lost before S3 passed claims on (seen on 16 cores, in
// timed_waiter_test; reproduced on 2 cores by scheduling_group_test's
// ClaimOfASpinnerHoldingAFiberIsPassedOn). Two workers A and B, a producer on a thread:
//   1. A and B spin (S1).
//   2. The producer pushes fiber N and claims A (P2: A's bit cleared).
//   3. B polls first and pops N. B's spinning bit is still set.
//   4. A polls (the poll its claim is owed), finds the queue empty, leaves, and sleeps
//      (W1-W4): correct, N is taken.
//   5. The producer pushes fiber W and claims B (P2: B's bit cleared), the only spinner.
//      It does not look at the sleeping mask: a claimed spinner is supposed to poll.
//   6. B leaves the spin loop with N; its fetch_and found its bit clear, but the old
//      code ignored that and polled again only when it held no fiber. B runs N.
//   7. W waits in the queue while A sleeps, until B finishes N. If N waits for W (the
//      test's notifier spins until the waiter publishes itself), that is forever.
// Step 6 now passes the claim on: B sees W queued and runs P1-P3 for it, which finds
// A's sleeping bit (A set it in 4 before the claim in 5 was made, or A's W3 re-check
// sees W) and wakes A. Whoever clears a bit owns a poll, and every owned poll happens
// or is handed on while its fiber may still be queued.
//
// More work (Go's rule: a woken M that finds work and sees more wakes another). A poll
// can come back empty while fibers are queued: a producer preempted between claiming
// its queue position and publishing it hides every later position (see the progress
// caveat in run_queue.h), so the poll a claim or a Wake() paid for finds nothing, and
// the worker goes back to sleep. The interleaving (workers X and Y asleep, X lower):
//   1. Producer A claims position 5 and is preempted before publishing it.
//   2. Producer B pushes F6 at position 6 and wakes X (P3).
//   3. X polls: position 5 is unpublished, so the queue looks empty. X spins, finds
//      nothing, and sleeps again (W1-W4; W3's poll is empty for the same reason).
//   4. A publishes F5 and wakes X, the lowest sleeper, again.
//   5. X runs F5. F6 waits while Y sleeps, until X is done with F5: forever if F5
//      waits for F6 (runtime/internal/scheduling_group_test.cc, StalledPush...).
// So a worker that takes a fiber on a wake-up path (S3 when claimed, W3, after W4) and
// still sees fibers queued wakes one more worker (P1-P4). In step 5 X wakes Y, which
// runs F6. The cost is two relaxed loads on those paths, and a wake-up only while a
// backlog exists, which the woken worker then serves. Every claim or Wake() is thus
// either a poll that takes a fiber, a poll that finds the queue truly empty (whoever
// emptied it ran the fibers), or a hidden entry whose producer's own P1-P3, once it
// publishes, starts a chain that drains what the stall hid.
//
// Batch start: all spinners are claimed at once (exchange 0), then up to n - spinners
// sleepers, the lowest first, with one CAS over the sleeping mask (64-bit shifts; the
// anchors' 1 << i and ffsll off-by-one are not repeated: LowestSetBits()).
//
// Rejected alternatives. A mutex + condition variable around the queue serialises every
// producer and consumer. Waking a worker on every push costs a system call per fiber.
// Spinning without a cap burns a core per idle worker. A per-worker queue (strategy v2)
// needs stealing to balance; it comes as a separate strategy.
//
// Overflow. The queue is bounded (see the seed's rationale); a fiber is never dropped
// when it is full. A producer on a plain thread backs off and retries (back-pressure on
// whoever floods the runtime from outside). A producer on a runtime thread must not: a
// worker is also a consumer, and when every worker is a fiber spawning children into a
// full queue (skynet does this), backing off would stop them all for good; a timer
// thread would hold up every later timer. Such a producer spills to the group's
// overflow list instead, which consumers drain first. Both paths
// log a rate-limited warning naming --fiber_run_queue_size. The overflow size is part of
// what W3 re-checks, and a spilling producer runs P1-P3 like any other, so the no-lost-
// wake-up argument covers it unchanged.
//
// Stealing (between groups; the policy of when to try lives in fiber_worker.cc). A thief
// (a worker of another group) calls RunQueue::Steal() on the victim's ring: it takes the
// oldest entry unless that entry was pushed by a scheduling_group_local fiber (PIN bit),
// so such fibers never leave their group. The stolen fiber's `scheduling_group` becomes
// the thief's group before it runs (MakeRunning), so every later Resume()/Yield() queues
// it there: it belongs to the thief from then on. Stealing only ever removes entries
// from a victim, and every entry is still run exactly once (the ring hands each position
// to one taker), so the no-lost-wake-up argument above is unchanged: a claimed spinner
// or a woken sleeper whose fiber was stolen finds the queue empty and goes idle, which
// is right, since a thief is running that fiber. The overflow list is never stolen from.
//   T1. Sleeping thieves. A whole group may sleep while another is overloaded. P4 above
//       ("every worker is busy") is where that shows: then, if the queue is still not
//       empty, the producer wakes one sleeping worker of a group that may steal from us
//       (`thieves_`, tried in turn until one has a sleeper), which then polls its
//       victims and steals (see fiber_worker.cc); one that finds nothing sleeps again.
//       The woken thief is running from the v1 point of view of its own group, and it
//       polls its own queue on every round. Cost: nothing while the runtime is idle or
//       our workers keep up (P2/P3 succeed first); a futex wake only while all our
//       workers are busy and a thief sleeps (an awake thief is not woken again).
//   T2. No lost steal. A thief about to sleep runs W1 and W2, then, in W3, after its
//       own queue, asks its worker whether a victim's queue holds fibers; if so it
//       does not sleep and polls its victims instead (or, when its recent attempts all
//       failed, sleeps for at most 1 ms and looks again). Against the producer's push, P1
//       and its read of the thief's sleeping mask in T1, that is the same Dekker pair as
//       above: either the producer sees the thief's bit and wakes it, or the thief sees
//       the fiber. So a stealable fiber queued behind busy workers is always seen by
//       some awake thief (unless a non-stealable entry is ahead of it: Steal() looks at
//       the oldest entry only). Missing a thief never strands a fiber: our own workers
//       still run everything queued here. A fiber re-queued by Yield() or Dispatch()
//       (UnlockAndRequeue) is pushed with P1-P4 like any other, so T1 covers it too.
//
// Parking. A fiber parks (Halt) while holding its own scheduler lock; the context it
// switches to releases the lock in its landing hook (FiberEntity::SwitchTo). Resume()
// takes that lock first, so it cannot queue the fiber before its registers are saved.
// Yield and Dispatch queue the fiber they leave from a landing hook for the same reason,
// and that push is a producer's like any other (P1-P4). It used to wake nobody, on the
// argument that the yielding worker is busy and comes back to the queue: true only once
// the fiber it switched to stops running. A partner fiber yields, its worker takes the
// waiter fiber and re-queues the partner, the waiter spins until the partner has run,
// and the other worker sleeps: stranded (tests/scheduler_stress_test.cc,
// PartnerThatYieldsAlwaysGetsAWorkerBack, failed in 2 runs of 2 that way). A runnable
// fiber must never wait while a worker of its group is idle; the price is P1's fence
// per yield.

#include "runtime/internal/scheduling_group.h"

#include <algorithm>
#include <bitset>
#include <thread>
#include <vector>

#include "runtime/internal/futex.h"
#include "fiber/internal/spinlock.h"
#include "fiber/internal/stack_allocator.h"
#include "fiber/internal/switch_safe_tls.h"
#include "glog/logging.h"

namespace spindle::internal {
namespace {

// relaxed: a test installs the hook before it starts the workload it should affect.
std::atomic<SchedulerTestHook> g_test_hook{nullptr};

void TestPoint(SchedulerTestPoint point, std::size_t worker) {
  // relaxed: see g_test_hook.
  if (SchedulerTestHook hook = g_test_hook.load(std::memory_order_relaxed)) {
    hook(point, worker);
  }
}

thread_local bool tls_is_runtime_thread = false;
thread_local std::vector<FiberEntity*>* tls_ready_batch = nullptr;

// The fibers_run counter of the worker this thread is (nullptr on other threads). Read
// through the switch-safe accessor: MakeRunning() may be inlined next to a switch.
thread_local std::atomic<std::uint64_t>* tls_fibers_run = nullptr;
SPINDLE_SWITCH_SAFE_TLS_ACCESSOR(std::atomic<std::uint64_t>*, tls_fibers_run, FibersRunSlot)

void ReclaimFiber(FiberEntity* dead) {
  StackCache::ForThisThread().Put(DestroyFiberEntity(dead));
  CountFiberFinished();
}

int CountBits(std::uint64_t mask) { return __builtin_popcountll(mask); }
std::uint64_t LowestBit(std::uint64_t mask) { return mask & (~mask + 1); }
std::size_t BitIndex(std::uint64_t bit) {
  return static_cast<std::size_t>(__builtin_ctzll(bit));
}

}  // namespace

std::uint64_t LowestSetBits(std::uint64_t mask, std::size_t k) {
  std::uint64_t result = 0;
  for (std::size_t i = 0; i < k && mask != 0; ++i) {
    const std::uint64_t bit = LowestBit(mask);
    result |= bit;
    mask &= ~bit;
  }
  return result;
}

void MarkThisThreadAsRuntimeThread(bool is_runtime_thread) {
  tls_is_runtime_thread = is_runtime_thread;
}

void SetSchedulerTestHook(SchedulerTestHook hook) {
  g_test_hook.store(hook, std::memory_order_relaxed);  // relaxed: see g_test_hook
}

FiberDesc* NewFiberDesc(absl::AnyInvocable<void()> start_proc) {
  FiberDesc* desc = AllocateFiberDesc();
  desc->start_proc = std::move(start_proc);
  desc->id = NewFiberId();
  CountFiberStarted(1);
  return desc;
}

SchedulingGroup::SchedulingGroup(const SchedulingGroupOptions& options)
    : options_(options), run_queue_(options.run_queue_capacity, options.memory_node) {
  CHECK(options.workers >= 1 && options.workers <= kMaxWorkers)
      << "a scheduling group has 1 to " << kMaxWorkers << " workers, not "
      << options.workers;
}

SchedulingGroup::~SchedulingGroup() {
  CHECK(run_queue_.UnsafeEmpty() && overflow_.empty())
      << "scheduling group " << index() << " destroyed with fibers still queued";
}

void* SchedulingGroup::operator new(std::size_t size, int numa_node) {
  return AllocateOnNode(size, numa_node);  // page-aligned, so alignas(64) holds
}

void SchedulingGroup::operator delete(void* pointer, std::size_t size) {
  FreeOnNode(pointer, size);
}

void SchedulingGroup::operator delete(void* pointer, int) {
  FreeOnNode(pointer, sizeof(SchedulingGroup));
}

void SchedulingGroup::BindWorkerThread(std::size_t worker) {
  CHECK(worker == kNoWorker || worker < options_.workers) << "no worker " << worker;
  *FibersRunSlot() = worker == kNoWorker ? nullptr : &worker_counters_[worker].fibers_run;
}

void SchedulingGroup::SetThieves(std::vector<SchedulingGroup*> thieves) {
  thieves_ = std::move(thieves);
}

std::uint64_t SchedulingGroup::BeginStalledStartForTesting() {
  std::uint64_t position = 0;
  CHECK(run_queue_.ClaimForTesting(&position)) << "run queue full";
  return position;
}

void SchedulingGroup::FinishStalledStartForTesting(std::uint64_t position,
                                                   FiberDesc* desc) {
  run_queue_.PublishForTesting(position, EncodeEntry(desc), !desc->scheduling_group_local);
  WakeUpOneWorker();
}

void SchedulingGroup::StartFiber(FiberDesc* desc) {
  Push(EncodeEntry(desc), !desc->scheduling_group_local);
  WakeUpOneWorker();
}

template <class EntryAt>
void SchedulingGroup::PushMany(std::size_t n, EntryAt entry_at) {
  constexpr std::size_t kMaxChunk = 64;
  std::uintptr_t entries[kMaxChunk];
  bool stealable[kMaxChunk];
  const std::size_t chunk = std::min(kMaxChunk, run_queue_.capacity());
  for (std::size_t done = 0; done < n;) {
    const std::size_t count = std::min(chunk, n - done);
    bool all_stealable = true;
    for (std::size_t i = 0; i < count; ++i) {
      const auto [entry, can_steal] = entry_at(done + i);
      entries[i] = entry;
      stealable[i] = can_steal;
      all_stealable = all_stealable && can_steal;
    }
    if (!all_stealable || !run_queue_.BatchPush(entries, count, true)) {
      for (std::size_t i = 0; i < count; ++i) Push(entries[i], stealable[i]);
    }
    done += count;
  }
}

void SchedulingGroup::StartFibers(FiberDesc* const* descs, std::size_t n) {
  PushMany(n, [descs](std::size_t i) {
    return std::make_pair(EncodeEntry(descs[i]), !descs[i]->scheduling_group_local);
  });
  TestPoint(SchedulerTestPoint::kBeforeWakeUp, kNoWorker);
  StoreLoadFence();  // P1 of the protocol, pairs with W2 in WaitForFiber().
  WakeUpWorkers(n);
}

void SchedulingGroup::QueueReadyBatch(FiberEntity* const* fibers, std::size_t n) {
  PushMany(n, [fibers](std::size_t i) {
    return std::make_pair(EncodeEntry(fibers[i]), !fibers[i]->scheduling_group_local);
  });
  TestPoint(SchedulerTestPoint::kBeforeWakeUp, kNoWorker);
  StoreLoadFence();  // P1 of the protocol, pairs with W2 in WaitForFiber().
  WakeUpWorkers(n);
}

void SchedulingGroup::Resume(FiberEntity* fiber) {
  {
    std::lock_guard<Spinlock> lock(fiber->scheduler_lock);
    fiber->SetState(FiberState::kReady);
  }
  QueueReady(fiber);
}

void SchedulingGroup::QueueReady(FiberEntity* fiber) {
  if (tls_ready_batch != nullptr) {
    tls_ready_batch->push_back(fiber);
    return;
  }
  Push(EncodeEntry(fiber), !fiber->scheduling_group_local);
  WakeUpOneWorker();
}

ReadyBatch::ReadyBatch() {
  if (tls_ready_batch == nullptr) tls_ready_batch = &fibers_;  // else the outer one collects
}

ReadyBatch::~ReadyBatch() {
  if (tls_ready_batch != &fibers_) return;  // nested: the outer scope flushes
  tls_ready_batch = nullptr;
  // Usually all of one group; queue each group's share as one batch.
  while (!fibers_.empty()) {
    void* group = fibers_.front()->scheduling_group;
    auto split = std::stable_partition(fibers_.begin(), fibers_.end(), [group](FiberEntity* f) {
      return f->scheduling_group != group;
    });
    static_cast<SchedulingGroup*>(group)->QueueReadyBatch(
        &*split, static_cast<std::size_t>(fibers_.end() - split));
    fibers_.erase(split, fibers_.end());
  }
}

void SchedulingGroup::Push(std::uintptr_t entry, bool stealable) {
  if (!run_queue_.Push(entry, stealable)) PushSlow(entry, stealable);
}

void SchedulingGroup::PushSlow(std::uintptr_t entry, bool stealable) {
  // The queue is full. Nothing is ever dropped; see "Overflow" at the top.
  if (tls_is_runtime_thread) {
    LOG_EVERY_T(WARNING, 1) << "Run queue of scheduling group " << index()
                            << " is full (" << run_queue_.capacity()
                            << " fibers); spilling new fibers to an overflow list. Raise "
                               "--fiber_run_queue_size if this persists.";
    std::lock_guard<std::mutex> lock(overflow_lock_);
    overflow_.push_back(entry);
    // relaxed: the count is a hint read by consumers before they take the lock; the
    // caller's StoreLoadFence (P1) orders it before the masks are read.
    overflow_size_.fetch_add(1, std::memory_order_relaxed);
    (void)stealable;  // overflow entries are taken by this group's workers only
    return;
  }
  while (!run_queue_.Push(entry, stealable)) {
    LOG_EVERY_T(WARNING, 1) << "Run queue of scheduling group " << index()
                            << " is full (" << run_queue_.capacity()
                            << " fibers); the producer waits for room. Raise "
                               "--fiber_run_queue_size if this persists.";
    WakeUpWorkers(options_.workers);
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

std::uintptr_t SchedulingGroup::PopOverflow() {
  std::lock_guard<std::mutex> lock(overflow_lock_);
  if (overflow_.empty()) return 0;
  const std::uintptr_t entry = overflow_.front();
  overflow_.pop_front();
  overflow_size_.fetch_sub(1, std::memory_order_relaxed);  // relaxed: see PushSlow()
  return entry;
}

FiberEntity* SchedulingGroup::Instantiate(FiberDesc* desc) {
  FiberEntity* fiber = InstantiateFiberEntity(StackCache::ForThisThread().Get(),
                                              std::move(desc->start_proc), desc->id);
  fiber->exit_barrier_hook = std::move(desc->exit_hook);
  fiber->scheduling_group = this;
  fiber->scheduling_group_local = desc->scheduling_group_local;
  fiber->reclaim = &ReclaimFiber;
  FreeFiberDesc(desc);
  return fiber;
}

FiberEntity* SchedulingGroup::AcquireFiber() {
  const std::uintptr_t entry = TakeEntry(/*steal=*/false);
  return entry == 0 ? nullptr : MakeRunning(entry);
}

FiberEntity* SchedulingGroup::StealFiber(SchedulingGroup* victim) {
  const std::uintptr_t entry = victim->TakeEntry(/*steal=*/true);
  if (entry == 0) return nullptr;
  // relaxed: statistics.
  victim->steals_out_.fetch_add(1, std::memory_order_relaxed);
  (victim->numa_node() == numa_node() ? steals_in_same_node_ : steals_in_cross_node_)
      .fetch_add(1, std::memory_order_relaxed);
  return MakeRunning(entry);
}

std::uintptr_t SchedulingGroup::TakeEntry(bool steal) {
  for (;;) {
    std::uintptr_t entry = 0;
    // relaxed: a hint (see PushSlow()); the list is read under its lock. Spilled fibers
    // are older than anything in the ring, so they go first. Thieves leave them alone.
    if (!steal && overflow_size_.load(std::memory_order_relaxed) != 0) {
      entry = PopOverflow();
    }
    if (entry == 0) entry = steal ? run_queue_.Steal() : run_queue_.Pop();
    if (entry == 0 || !IsDescEntry(entry)) return entry;
    FiberDesc* desc = DecodeDesc(entry);
    // acq_rel: exactly one of us and a joiner running the fiber inline wins; the
    // winner sees everything the starter published.
    if (desc->claim == nullptr || !desc->claim->exchange(true, std::memory_order_acq_rel)) {
      return entry;
    }
    FreeFiberDesc(desc);  // its joiner already ran it; take the next entry
  }
}

FiberEntity* SchedulingGroup::MakeRunning(std::uintptr_t entry) {
  FiberEntity* fiber = IsDescEntry(entry) ? Instantiate(DecodeDesc(entry))
                                          : DecodeFiber(entry);
  // A fiber may have been stolen from another group: it belongs to ours from now on.
  // Plain write: the fiber is not running and no one else holds it (we took its entry);
  // whoever reads it next is ordered after us through the scheduler lock below.
  fiber->scheduling_group = this;
  if (std::atomic<std::uint64_t>* counter = *FibersRunSlot()) {
    // relaxed load + store, no read-modify-write: a statistic with one writer (this
    // thread); readers take relaxed snapshots.
    counter->store(counter->load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  std::lock_guard<Spinlock> lock(fiber->scheduler_lock);
  fiber->SetState(FiberState::kRunning);
  return fiber;
}

FiberEntity* SchedulingGroup::SpinningAcquireFiber(std::size_t worker) {
  const std::uint64_t self = std::uint64_t{1} << worker;
  // relaxed: a hint; the CAS below decides.
  std::uint64_t spinning = spinning_workers_.load(std::memory_order_relaxed);
  do {
    if (CountBits(spinning) >= 2) return nullptr;
    // seq_cst CAS. No fence follows it, so a poll may still miss a push whose producer
    // read the mask before our bit: harmless, since that producer claimed or woke
    // someone else (P2-P4), and a producer that did claim us is seen by S3's acquire.
  } while (!spinning_workers_.compare_exchange_weak(spinning, spinning | self,
                                                    std::memory_order_seq_cst,
                                                    std::memory_order_relaxed));
  TestPoint(SchedulerTestPoint::kSpinning, worker);
  FiberEntity* fiber = nullptr;
  const auto deadline = std::chrono::steady_clock::now() + options_.spin_time;
  for (int round = 0;; ++round) {
    // relaxed load + exchange: a hand-over flag between spinners; the woken worker
    // re-checks the queue itself, so no ordering is carried by it.
    if (pending_spinner_wakeup_.load(std::memory_order_relaxed) &&
        pending_spinner_wakeup_.exchange(false, std::memory_order_relaxed)) {
      WakeUpOneSleepingWorker();
    }
    fiber = AcquireFiber();
    if (fiber != nullptr) {
      TestPoint(SchedulerTestPoint::kSpinnerTookFiber, worker);
      break;
    }
    // relaxed: a producer cleared our bit (P2); we poll once more below either way.
    if ((spinning_workers_.load(std::memory_order_relaxed) & self) == 0) break;
    if ((round & 15) == 15 && std::chrono::steady_clock::now() >= deadline) break;
    for (int i = 0; i < 16; ++i) CpuRelax();
  }
  // S3. acq_rel: leaving the spinner set; the acquire side orders the final poll below
  // after a producer's claim of our bit (its fence P1 precedes its RMW).
  const bool claimed =
      (spinning_workers_.fetch_and(~self, std::memory_order_acq_rel) & self) == 0;
  if (fiber == nullptr) fiber = AcquireFiber();  // the poll a claim is owed
  // A claimed spinner holding a fiber may owe a poll it cannot make (the claim landed
  // after its pop): if fibers are still queued, pass the claim on (S3).
  if (claimed && fiber != nullptr) WakeAnotherIfQueued();
  if (fiber != nullptr &&
      CountBits(spinning_workers_.load(std::memory_order_relaxed)) < 2) {
    // relaxed: see the exchange above.
    pending_spinner_wakeup_.store(true, std::memory_order_relaxed);
  }
  return fiber;
}

FiberEntity* SchedulingGroup::WaitForFiber(std::size_t worker,
                                           absl::FunctionRef<IdlePlan()> plan_when_marked) {
  const std::uint64_t self = std::uint64_t{1} << worker;
  TestPoint(SchedulerTestPoint::kBeforeSleep, worker);
  // W1. seq_cst RMW, then W2: pairs with P1 in the producer.
  sleeping_workers_.fetch_or(self, std::memory_order_seq_cst);
  StoreLoadFence();
  TestPoint(SchedulerTestPoint::kMarkedSleeping, worker);
  // W3.
  if (FiberEntity* fiber = AcquireFiber()) {
    // acq_rel: whoever clears the bit first owns the wake-up; if a producer did (P3),
    // the acquire side makes its push visible to the check below, which passes its
    // wake-up on if its fiber is still queued.
    sleeping_workers_.fetch_and(~self, std::memory_order_acq_rel);
    WakeAnotherIfQueued();
    return fiber;
  }
  // acquire: pairs with the release store in Stop(). Then T2: the plan is made only
  // now, after W2, so a victim's fiber queued before the producer could see our bit is
  // seen here (by polling, or by a bounded sleep when stealing keeps failing).
  const IdlePlan plan =
      stopping_.load(std::memory_order_acquire) ? IdlePlan{true, {}} : plan_when_marked();
  if (plan.poll) {
    // acq_rel: if a producer cleared the bit first (P3), its Wake() stays banked in our
    // slot and only makes a later Wait() return early, and the fiber it pushed is ours
    // to take: the acquire side (with the producer's fence P1 before its RMW) makes the
    // push visible, and the caller looks at our own queue (L1) before anything else.
    sleeping_workers_.fetch_and(~self, std::memory_order_acq_rel);
    return nullptr;
  }
  TestPoint(SchedulerTestPoint::kBeforeWait, worker);
  if (plan.limit.count() == 0) {
    wait_slots_[worker].Wait();  // W4
  } else {
    // W4 with a time limit. If it expires and a producer claims our bit just after, its
    // Wake() stays banked (harmless) and the caller polls our queue again anyway.
    const auto deadline = std::chrono::steady_clock::now() + plan.limit;
    wait_slots_[worker].WaitUntil(
        std::chrono::duration_cast<std::chrono::nanoseconds>(deadline.time_since_epoch())
            .count());
  }
  // A producer (or Stop) cleared our bit before waking us; clear it in case the wake-up
  // was one banked earlier, or the time limit expired. acq_rel: as in the poll case
  // above, a producer's claim that lands after a time-out makes its push visible to
  // the poll below (and the caller polls our queue first again if it finds nothing).
  sleeping_workers_.fetch_and(~self, std::memory_order_acq_rel);
  FiberEntity* fiber = AcquireFiber();
  if (fiber != nullptr) WakeAnotherIfQueued();  // W4's "more work" rule
  return fiber;
}

void SchedulingGroup::WakeAnotherIfQueued() {
  // relaxed: a snapshot. Every caller has taken a fiber after an acquire that made the
  // pushes it must account for visible (a WaitSlot wake-up, or a claim RMW after the
  // producer's fence P1), so their positions are in tail_ as we read it.
  if (run_queue_.UnsafeSize() != 0 || overflow_size_.load(std::memory_order_relaxed) != 0) {
    WakeUpOneWorker();
  }
}

void SchedulingGroup::WakeUpOneWorker() {
  TestPoint(SchedulerTestPoint::kBeforeWakeUp, kNoWorker);
  StoreLoadFence();  // P1: pairs with W2 (WaitForFiber) and the spinner's CAS (S1).
  if (WakeUpOneSpinningWorker()) return;
  if (WakeUpOneSleepingWorker()) return;
  WakeUpThief();  // P4: all busy
}

void SchedulingGroup::WakeUpThief() {
  // T1 at the top, after the caller's fence P1. Nothing to do if a worker of ours
  // already took the fiber.
  if (thieves_.empty() || run_queue_.UnsafeSize() == 0) return;
  // relaxed: only spreads the wake-ups over the thieves.
  const std::size_t turn = next_thief_.fetch_add(1, std::memory_order_relaxed);
  for (std::size_t i = 0; i < thieves_.size(); ++i) {
    if (thieves_[(turn + i) % thieves_.size()]->WakeUpOneSleepingWorker()) return;
  }
}

bool SchedulingGroup::WakeUpOneSpinningWorker() {
  // relaxed: ordered after the push by the caller's fence P1.
  std::uint64_t spinning = spinning_workers_.load(std::memory_order_relaxed);
  while (spinning != 0) {
    const std::uint64_t bit = LowestBit(spinning);
    // release: the claimed spinner's acquire in S3 then sees our push even where P1 is
    // not a fence (the TSan build); on x86 any RMW is a full barrier anyway.
    if (spinning_workers_.fetch_and(~bit, std::memory_order_release) & bit) return true;
    spinning = spinning_workers_.load(std::memory_order_relaxed);
  }
  return false;
}

bool SchedulingGroup::WakeUpOneSleepingWorker() {
  // relaxed: ordered after the push by the caller's fence P1.
  std::uint64_t sleeping = sleeping_workers_.load(std::memory_order_relaxed);
  while (sleeping != 0) {
    const std::uint64_t bit = LowestBit(sleeping);
    // release: the WaitSlot's release/acquire carries the ordering to a sleeper; this
    // covers a worker that clears its own bit without sleeping (W3, the poll plan, a
    // time-out) and acquires it there.
    if (sleeping_workers_.fetch_and(~bit, std::memory_order_release) & bit) {
      wakeups_.fetch_add(1, std::memory_order_relaxed);  // relaxed: statistic
      wait_slots_[BitIndex(bit)].Wake();
      return true;
    }
    sleeping = sleeping_workers_.load(std::memory_order_relaxed);
  }
  return false;
}

void SchedulingGroup::WakeUpWorkers(std::size_t n) {
  // Claim every spinner: each will take one of the new fibers, or pass its claim on
  // (S3) if it already holds one.
  // release: as in WakeUpOneSpinningWorker().
  const std::uint64_t spinners = spinning_workers_.exchange(0, std::memory_order_release);
  const std::size_t claimed = static_cast<std::size_t>(CountBits(spinners));
  if (claimed >= n) return;
  std::uint64_t sleeping = sleeping_workers_.load(std::memory_order_relaxed);
  std::uint64_t chosen = 0;
  do {
    chosen = LowestSetBits(sleeping, n - claimed);
    if (chosen == 0) break;
    // release: as in WakeUpOneSleepingWorker().
  } while (!sleeping_workers_.compare_exchange_weak(
      sleeping, sleeping & ~chosen, std::memory_order_release, std::memory_order_relaxed));
  const std::size_t woken = static_cast<std::size_t>(CountBits(chosen));
  wakeups_.fetch_add(woken, std::memory_order_relaxed);  // relaxed: statistic
  while (chosen != 0) {
    const std::uint64_t bit = LowestBit(chosen);
    chosen &= ~bit;
    wait_slots_[BitIndex(bit)].Wake();
  }
  // P4 for the rest of the batch: every worker of ours is taken; recruit a thief.
  if (claimed + woken < n) WakeUpThief();
}

void SchedulingGroup::UnlockAndRequeue(void* arg) {
  auto* fiber = static_cast<FiberEntity*>(arg);
  fiber->scheduler_lock.unlock();
  auto* group = static_cast<SchedulingGroup*>(fiber->scheduling_group);
  group->Push(EncodeEntry(fiber), !fiber->scheduling_group_local);
  group->WakeUpOneWorker();  // see "Parking" at the top
}

void SchedulingGroup::Yield(FiberEntity* self) {
  FiberEntity* next = AcquireFiber();
  if (next == nullptr) return;  // nothing else is ready: keep running
  self->scheduler_lock.lock();
  self->SetState(FiberState::kReady);
  // Re-queued by the landing hook, once self is saved.
  self->SwitchTo(next, LandingHook{&UnlockAndRequeue, self});
}

void SchedulingGroup::Halt(FiberEntity* self, std::unique_lock<Spinlock> self_lock) {
  CHECK(self_lock.owns_lock() && self_lock.mutex() == &self->scheduler_lock)
      << "Halt() needs the fiber's own scheduler lock";
  self->SetState(FiberState::kWaiting);
  self_lock.release();  // unlocked by the landing hook below
  FiberEntity* next = AcquireFiber();
  FiberEntity* target = next != nullptr ? next : GetMasterFiberEntity();
  self->SwitchTo(target, LandingHook{[](void* fiber) {
                                       static_cast<FiberEntity*>(fiber)
                                           ->scheduler_lock.unlock();
                                     },
                                     self});
}

void SchedulingGroup::Dispatch(FiberEntity* self, FiberDesc* desc) {
  // Runs now, so nobody may run it inline later. relaxed: the only possible joiner is
  // the caller's own handle, which this fiber creates after we return.
  if (desc->claim != nullptr) desc->claim->store(true, std::memory_order_relaxed);
  FiberEntity* next = Instantiate(desc);
  {
    std::lock_guard<Spinlock> lock(next->scheduler_lock);
    next->SetState(FiberState::kRunning);
  }
  self->scheduler_lock.lock();
  self->SetState(FiberState::kReady);
  self->SwitchTo(next, LandingHook{&UnlockAndRequeue, self});
}

void SchedulingGroup::Stop() {
  // release: pairs with the acquire load in WaitForFiber().
  stopping_.store(true, std::memory_order_release);
  for (std::size_t i = 0; i < options_.workers; ++i) wait_slots_[i].WakeForever();
}

bool SchedulingGroup::stopping() const {
  return stopping_.load(std::memory_order_acquire);  // acquire: as in WaitForFiber()
}

// relaxed: statistics, read as snapshots.
std::uint64_t SchedulingGroup::wakeups() const {
  return wakeups_.load(std::memory_order_relaxed);
}
std::uint64_t SchedulingGroup::fibers_run() const {
  std::uint64_t sum = 0;
  for (const WorkerCounters& counters : worker_counters_) {
    sum += counters.fibers_run.load(std::memory_order_relaxed);
  }
  return sum;
}
std::uint64_t SchedulingGroup::steals_in_same_node() const {
  return steals_in_same_node_.load(std::memory_order_relaxed);
}
std::uint64_t SchedulingGroup::steals_in_cross_node() const {
  return steals_in_cross_node_.load(std::memory_order_relaxed);
}
std::uint64_t SchedulingGroup::steals_out() const {
  return steals_out_.load(std::memory_order_relaxed);
}
std::uint64_t SchedulingGroup::spinning_workers() const {
  return spinning_workers_.load(std::memory_order_relaxed);
}
std::uint64_t SchedulingGroup::sleeping_workers() const {
  return sleeping_workers_.load(std::memory_order_relaxed);
}

}  // namespace spindle::internal
