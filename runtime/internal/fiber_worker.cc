// Copyright 2026 The Spindle Authors.
//
// The worker loop and its stealing policy.
//
// Each worker keeps its victims (every other group it may steal from) with a ratio N:
// --fiber_work_stealing_ratio for groups on its NUMA node, and
// --fiber_cross_numa_work_stealing_ratio for the others (0 = not a victim at all).
// Every pass through the loop that finds the worker's own queue empty is one idle
// round; a victim with ratio N gets one steal attempt every N idle rounds. Every victim
// of the same node is a victim, including when the loop meets the worker's own group
// in the runtime's list (it is skipped and the scan goes on, where flare and tRPC
// returned early and so never registered same-node victims: anchors_design.md §3.4).
//
// Loop (the strategy's idle path, SchedulingStrategy::FindRunnable, runs these steps
// and asks this worker, as its IdleHooks, for L2, L4 and T2; the names below are v1's):
//   L1. Take from our own group. Found: run it.
//   L2. Idle round: attempt each victim whose turn it is (StealFiber).
//   L3. Spin on our own queue (v1's S1-S3), unless we are polling victims (L4): a
//       polling worker already looks at its queue every round.
//   L4. Poll: while some victim has queued fibers and fewer than kMaxFruitlessSteals
//       attempts in a row failed, go back to L1. A round without a steal attempt costs
//       one look at our own queue, so with a backlog to steal an attempt comes every few
//       hundred nanoseconds at the default ratio; after a failed attempt the worker
//       backs off (a short pause, and a yield of the CPU every eighth time).
//   L5. Otherwise sleep (v1's W1-W4) until our group wakes us: a push to our group, or
//       a victim whose workers are all busy (T1 in strategy_v1.cc). W3 asks L4's
//       question again once we are marked sleeping (T2): that is what makes a fiber
//       queued behind a victim's busy workers impossible to miss.
//
// Giving up: L4 stops after kMaxFruitlessSteals failed attempts at queues that looked
// non-empty (the oldest entry is scheduling_group_local, which hides everything behind
// it from thieves, or the victim's own workers keep winning). The worker then sleeps in
// L5 for at most kStuckVictimRecheck (1 ms) while some victim's queue is still not
// empty, and looks again: without that, a stealable fiber that reaches the head of a
// queue whose workers are all busy, after the last push, would wait for them.
//
// Idle CPU: L4 polls, and L5 sleeps with a time limit, only while a victim's queue is
// non-empty, so an idle runtime sleeps in L5 until woken, exactly as without stealing.
// The worst case is a victim whose queue stays non-empty with unstealable fibers at its
// head: each thief then makes kMaxFruitlessSteals attempts per kStuckVictimRecheck.
// A polling worker is in neither v1 mask, which the protocol already allows (a producer
// that finds nobody spinning or sleeping relies on a running worker coming back to the
// queue, and a polling worker comes back every round).
//
// Rejected: always sleeping with a time limit (a steal check every T): it wakes idle
// workers of an idle runtime for nothing and still leaves a sleeping group blind for T.
// Waking thieves from the producer (T1) costs nothing unless the victim is saturated.
// Making polling workers spinners too (in the v1 mask): a producer would hand its own
// group's fiber to a worker that may be about to run a stolen one.

#include "runtime/internal/fiber_worker.h"

#include <chrono>
#include <string>
#include <utility>

#include <pthread.h>

#include "fiber/internal/fiber_entity.h"
#include "fiber/internal/spinlock.h"
#include "fiber/internal/switch_safe_tls.h"
#include "glog/logging.h"
#include "runtime/internal/chaos.h"
#include "runtime/internal/test_seams.h"
#include "runtime/internal/global_run_queue.h"

namespace spindle::internal {
namespace {

constexpr std::uint64_t kMaxFruitlessSteals = 64;
// How long a worker that gave up on victims whose queues are not empty sleeps before it
// looks again (L5).
constexpr std::chrono::milliseconds kStuckVictimRecheck{1};

thread_local FiberWorker* tls_current_worker = nullptr;

SPINDLE_SWITCH_SAFE_TLS_ACCESSOR(FiberWorker*, tls_current_worker, CurrentWorkerSlot)

}  // namespace

FiberWorker::FiberWorker(SchedulingGroup* group, std::size_t index,
                         FiberWorkerOptions options)
    : group_(group),
      index_(index),
      cpus_(std::move(options.cpus)),
      affinity_cpus_(std::move(options.affinity_cpus)) {
  for (const StealVictim& victim : options.victims) {
    CHECK(victim.group != group_ && victim.every_n >= 1)
        << "a worker's victims are other groups with a ratio >= 1";
    victims_.push_back(Victim{victim.group, victim.every_n, victim.every_n});
  }
}

FiberWorker::~FiberWorker() {
  CHECK(!thread_.joinable()) << "FiberWorker destroyed while its thread runs";
}

void FiberWorker::Start() {
  thread_ = std::thread([this] { Run(); });
}

void FiberWorker::Join() { thread_.join(); }

void FiberWorker::Run() {
  const std::string name = "spindle-g" + std::to_string(group_->index()) + "w" +
                           std::to_string(index_);
  pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
  if (!cpus_.empty()) SetCurrentThreadAffinity(cpus_, affinity_cpus_);
  *CurrentWorkerSlot() = this;
  MarkThisThreadAsRuntimeThread(true);
  group_->BindWorkerThread(index_);
  if constexpr (kTestSeams) {
    ChaosBindWorker(group_->index(), index_);  // chaos mode's decisions, reproducibly
  }
  FiberEntity* master = GetMasterFiberEntity();
  for (;;) {
    // L1-L5: the strategy's idle path, which asks us (IdleHooks) about other groups.
    FiberEntity* fiber = group_->FindRunnable(index_, *this);
    // We ran a fiber, or were woken (maybe by a saturated victim, T1): look again.
    fruitless_steals_ = 0;
    fruitless_at_last_pause_ = 0;
    if (fiber == nullptr) {
      if (group_->stopping()) break;
      continue;
    }
    master->SwitchTo(fiber);
  }
  group_->BindWorkerThread(SchedulingGroup::kNoWorker);
  MarkThisThreadAsRuntimeThread(false);
  *CurrentWorkerSlot() = nullptr;
}

std::uintptr_t FiberWorker::TryOtherSources() {
  if (victims_.empty()) return 0;
  ++idle_rounds_;
  for (Victim& victim : victims_) {
    if (victim.next_round > idle_rounds_) continue;  // not its turn; the scan goes on
    victim.next_round = idle_rounds_ + victim.every_n;
    if (std::uintptr_t entry = group_->StealEntryFrom(victim.group)) return entry;
    // Only attempts at a queue that still looks non-empty count: the entry at its head
    // is not stealable, or another worker keeps beating us to it.
    if (victim.group->MayHaveStealable()) ++fruitless_steals_;
  }
  return 0;
}

void FiberWorker::PausePolling() {
  // L4. Rounds without an attempt are cheap, so the ratio decides how often we steal.
  // After a failed attempt, back off, and yield now and then: on an oversubscribed
  // machine the victim's workers need the CPU more than we need to look again.
  if (fruitless_steals_ == fruitless_at_last_pause_) {
    CpuRelax();
  } else if ((fruitless_steals_ & 7) == 0) {
    std::this_thread::yield();
  } else {
    for (int i = 0; i < 16; ++i) CpuRelax();
  }
  fruitless_at_last_pause_ = fruitless_steals_;
}

IdlePlan FiberWorker::PlanWhenMarkedSleeping() {
  // Asked after W2 (T2): a victim's queue that is not empty now is either polled, or,
  // after kMaxFruitlessSteals failed attempts, looked at again within
  // kStuckVictimRecheck; an empty one cannot strand a fiber (its next push sees our
  // sleeping bit in T1).
  if (!VictimsHaveFibers()) return {false, std::chrono::nanoseconds(0)};
  if (fruitless_steals_ < kMaxFruitlessSteals) return {true, std::chrono::nanoseconds(0)};
  return {false, kStuckVictimRecheck};
}

bool FiberWorker::ShouldPoll() {
  return fruitless_steals_ < kMaxFruitlessSteals && VictimsHaveFibers();
}

bool FiberWorker::VictimsHaveFibers() const {
  for (const Victim& victim : victims_) {
    if (victim.group->MayHaveStealable()) return true;
  }
  return false;
}

FiberWorker* CurrentFiberWorker() { return *CurrentWorkerSlot(); }

}  // namespace spindle::internal
