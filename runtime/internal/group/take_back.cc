// Copyright 2026 The Spindle Authors.
//
// Dead entries. join() on a child that has not started runs it inline (Fiber::join()
// wins FiberDesc::claim), but the child's descriptor is still queued; whoever takes it
// drops it (ClaimEntry). A fiber that fans out and joins in a loop without parking left
// one such entry per child: on one worker nobody took them, and they filled the queue
// (65,536 entries within a second), after which plain-thread producers waited for room
// that never came. Now the joiner takes its child back (TakeBackRunInline): where the
// entry is the next to leave a queue the joiner may take from, it removes it (a value
// compare and one CAS; SchedulingStrategy::TakeBack). Children are queued in start
// order and usually joined in that order, so the child is usually at the front. If not
// (joined out of order, or behind another fiber), the worker keeps it in a short list
// and retries on its next inline join, when earlier entries may have left the front;
// the joiner's reference on the descriptor (run_inline_refs) keeps its address from
// being reused meanwhile, which is what makes the bare value compare safe. An entry a
// consumer takes first is dropped by that consumer. v2 also drops dead entries when a
// full local queue moves half of itself to the global queue, so what the list cannot
// reach costs at most one local queue.

#include "runtime/internal/group/take_back.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "runtime/internal/group/scheduling_group.h"

namespace spindle::internal {
namespace {

// Tries to take back every entry of `pending` (the joiner's worker's list); frees those
// taken and those whose queue reference is gone.
void TakeBackPending(std::vector<std::pair<SchedulingGroup*, FiberDesc*>>& pending,
                     const FiberEntity* joiner) {
  std::size_t left = pending.size();
  // Usually one group; each group's strategy looks for all of its entries at once.
  for (std::size_t i = 0; i < pending.size() && left != 0; ++i) {
    SchedulingGroup* const group = pending[i].first;
    bool seen = false;  // an earlier entry of the same group: done already
    for (std::size_t j = 0; j < i && !seen; ++j) seen = pending[j].first == group;
    if (seen) continue;
    const bool ours =
        group == joiner->scheduling_group && joiner->scheduling_worker < group->size();
    group->strategy()->TakeBack(
        ours ? joiner->scheduling_worker : SchedulingGroup::kNoWorker,
        [&](std::uintptr_t entry) {
          if (!IsDescEntry(entry)) return false;
          const FiberDesc* desc = DecodeDesc(entry);
          for (const auto& item : pending) {
            if (item.second == desc && item.first == group) return true;
          }
          return false;
        },
        [&](std::uintptr_t entry) {
          FiberDesc* desc = DecodeDesc(entry);
          for (auto& item : pending) {
            if (item.second == desc) item.second = nullptr;
          }
          FreeFiberDesc(desc);  // both references were ours now
          return --left != 0;
        });
  }
  if (left != pending.size()) {
    pending.erase(std::remove_if(pending.begin(), pending.end(),
                                 [](const auto& item) { return item.second == nullptr; }),
                  pending.end());
  }
}

}  // namespace

void TakeBackRunInline(SchedulingGroup* group, FiberEntity* joiner, FiberDesc* desc) {
  SchedulingGroup* home = joiner->scheduling_group;
  const bool on_worker = joiner->scheduling_worker < home->size();
  // Started in `group`; it never gets a stack. The joiner runs on our worker's thread
  // when it is one of ours.
  group->stats().CountRunInline(home == group ? joiner->scheduling_worker
                                              : SchedulingGroup::kNoWorker);
  // acquire: pairs with a consumer's release of its reference (acq_rel fetch_sub). A
  // consumer already dropped the entry (v2 does when runnext is taken over): ours is the
  // last reference.
  if (desc->run_inline_refs.load(std::memory_order_acquire) == 1) {
    FreeFiberDesc(desc);
    return;
  }
  // The child alone first: usually it is at the front (fan-out joined in start order).
  const std::uintptr_t entry = EncodeEntry(desc);
  bool taken = false;
  group->strategy()->TakeBack(
      home == group && on_worker ? joiner->scheduling_worker : SchedulingGroup::kNoWorker,
      [entry](std::uintptr_t queued) { return queued == entry; },
      [&taken](std::uintptr_t) {
        taken = true;
        return false;
      });
  if (!on_worker) {  // a test's fiber, not on a worker: no list to keep it in
    if (taken) {
      FreeFiberDesc(desc);  // both references were ours now
    } else {
      group->strategy()->NoteDeadEntries();
      ReleaseRunInlineDesc(desc);
    }
    return;
  }
  // Only this worker's thread touches its list: the joiner runs on it, and does not
  // switch while it is in here.
  auto& pending = home->pending_take_backs_[joiner->scheduling_worker].entries;
  if (taken) {
    FreeFiberDesc(desc);
    // Taking it may have brought an earlier one of ours to the front.
    if (!pending.empty()) TakeBackPending(pending, joiner);
    return;
  }
  group->strategy()->NoteDeadEntries();  // left behind, for now at least
  // A short list: joined in reverse order, a small fan-out drains once its first child
  // is joined. Nested fork-join leaves entries in the middle of the queue, where no
  // retry reaches them, so a long list would only cost every inline join a long scan
  // (skynet spent half its time there with 128); what it cannot hold, a full queue
  // drops (GlobalRunQueue::Compact(), v2's local overflow).
  constexpr std::size_t kMaxPending = 8;
  if (pending.size() >= kMaxPending) {
    auto gone = std::remove_if(pending.begin(), pending.end(), [](const auto& item) {
      // acquire: as above.
      if (item.second->run_inline_refs.load(std::memory_order_acquire) != 1) return false;
      FreeFiberDesc(item.second);
      return true;
    });
    pending.erase(gone, pending.end());
    if (pending.size() >= kMaxPending) {
      ReleaseRunInlineDesc(pending.front().second);  // given up: the queue's ref frees it
      pending.erase(pending.begin());
    }
  }
  pending.emplace_back(group, desc);
}

}  // namespace spindle::internal
