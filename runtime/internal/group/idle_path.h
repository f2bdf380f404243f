// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_IDLE_PATH_H_
#define SPINDLE_RUNTIME_INTERNAL_IDLE_PATH_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fiber/internal/fiber_entity.h"
#include "runtime/internal/group/scheduling_group.h"

namespace spindle::internal {

// Another group a worker may steal from: one attempt every `every_n` idle rounds.
struct StealVictim {
  SchedulingGroup* group = nullptr;
  std::uint64_t every_n = 1;  // >= 1
};

// The idle path of one worker of a group, for every strategy: where the worker's loop
// goes between fibers to find the next one, and where it sleeps. Go's findRunnable, top
// to bottom in idle_path.cc: timers and the poller when due, the worker's own queues,
// its siblings', other groups on their turn, announce, re-check, sleep. The strategy
// supplies the queues (take, steal) and the notifier (notifier.h) whose steps this path
// calls in order.
//
// Thread-safety: used by its worker's thread only (a FiberWorker's, or a test's plain
// thread playing worker `worker`, bound with SchedulingGroup::BindWorkerThread). The
// group and the victims outlive it.
class IdlePath {
 public:
  IdlePath(SchedulingGroup* group, std::size_t worker,
           std::vector<StealVictim> victims = {});
  IdlePath(const IdlePath&) = delete;
  IdlePath& operator=(const IdlePath&) = delete;

  // A fiber made Running on this worker, or nullptr after a sleep or a poll plan (the
  // caller loops), or at once while the group is stopping.
  FiberEntity* FindRunnable();

 private:
  struct Victim {
    SchedulingGroup* group;
    std::uint64_t every_n;
    std::uint64_t next_round;  // the idle round of the next attempt
    // Whether its queues looked non-empty at our last attempt (or when our search
    // began): what L4 polls on between attempts, so that a round without an attempt
    // reads none of the victim's lines, which its busy workers write.
    bool looked_stealable;
  };
  // What a worker does once announced, when its re-check found nothing: go back to
  // polling other groups, or sleep for at most `limit` (0: until woken).
  struct Plan {
    bool poll = false;
    std::chrono::nanoseconds limit{0};
  };

  std::uintptr_t SearchAndSleep();
  // I3: rounds of the search; a searcher repeats them for up to the spin time.
  std::uintptr_t Search(bool searching);
  // The group's queues: our own (TakeNext), then our siblings' (StealInGroup).
  std::uintptr_t LookInGroup();
  // L2, one idle round: an attempt on each victim whose turn it is.
  std::uintptr_t TryOtherGroups();
  // L4: whether to poll again instead of sleeping: some victim looked non-empty at our
  // last attempt on it and our recent attempts were not all fruitless.
  bool ShouldPollVictims() const;
  void PausePolling();
  // L5's choice once announced: poll victims (`searched`: we searched in this round of
  // SearchAndSleep), or sleep (bounded while a victim's queue is not empty but we may
  // not poll it, or stealing from it keeps failing).
  Plan PlanWhenAnnounced(bool searched) const;
  // W4: on the notifier's slot, or in the group's poller. (Not "Sleep": Relacy defines
  // that name as a macro, and this file is built for the idle path's model too.)
  // Sleeps until woken, or until `limit` from now (0: no limit) or `until_ns` (INT64_MAX:
  // none), whichever comes first.
  void SleepOnSlot(std::chrono::nanoseconds limit, std::int64_t until_ns);
  // SleepOnSlot() without its count and trace records.
  void SleepOnSlotUntraced(std::chrono::nanoseconds limit, std::int64_t until_ns);

  SchedulingGroup* const group_;
  SchedulingStrategy& strategy_;
  IdleNotifier& notifier_;
  const std::size_t worker_;
  std::vector<Victim> victims_;
  std::uint64_t idle_rounds_ = 0;
  std::uint64_t fruitless_steals_ = 0;  // failed attempts since the last fiber we ran
  std::uint64_t fruitless_at_last_pause_ = 0;
  bool slept_since_work_ = false;  // the last wake-up has found no fiber yet
  // Our sleep left the poller with descriptors registered: a sibling takes it over.
  bool hand_off_pending_ = false;
};

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_IDLE_PATH_H_
