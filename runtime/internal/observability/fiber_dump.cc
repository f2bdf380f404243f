// Copyright 2026 The Spindle Authors.
//
// The fiber dump: every live fiber, its state and its stack, without a list of fibers.
//
// Finding fibers. A spawn must not pay for the dump (no global list, no lock), so the
// dump enumerates stacks instead: the stack allocator registers every stack it maps
// (stacks are recycled through per-thread caches, so that is rare) and a live fiber's
// FiberEntity sits at a fixed place at the top of its stack. Fibers still queued as
// descriptors have no stack yet; they are counted as "not started" (live fibers minus
// the entities found; both are snapshots, so the figure is approximate).
//
// Reading a fiber another thread may be running, finishing or reviving:
//   1. The registry's walk lock is held throughout: no stack is unmapped meanwhile. (A
//      stack may be created meanwhile, even by a worker that holds a scheduler lock we
//      wait for: that does not need the walk lock.)
//   2. The stack's liveness word (stack_allocator.h) is moved Live -> Pinned. A Vacant
//      stack (cached, or its entity destroyed) is skipped. While Pinned, the entity's
//      owner cannot destroy it (MarkStackEntityGone() waits), and it was fully built
//      before it was marked Live (release/acquire).
//   3. The entity's scheduler_lock is taken: its state cannot change, so a Ready or
//      Waiting fiber cannot be resumed, and its saved context (saved before the lock was
//      released, see FiberEntity's landing hook) stays put while its stack is walked.
//      A Running fiber's stack changes under us: only the calling fiber's own stack is
//      captured (absl::GetStackTrace), others say "stack not captured".
//   4. The raw PCs are copied, the lock and the pin released; symbolizing (slow) comes
//      after, outside every lock.
// The group and worker of a Ready fiber are not shown: they are those of its last run,
// not where it waits (a worker of another group may take it), and the worker that takes
// it rewrites both under the lock when it makes it Running.
//
// The stack walk follows the frame-pointer chain (the build keeps frame pointers):
// from the saved context (context_x86_64.S / context_aarch64.S) take the address it
// resumes at and the saved frame pointer, then each frame's [fp] = caller's fp and
// [fp + 8] = return address, while fp stays inside the stack's usable range and grows
// strictly, up to kMaxFrames. The chain ends at the context trampoline, whose frame
// pointer is 0. Reads of another fiber's stack are exempt from the sanitizers (ASan
// poisons frame redzones; TSan does not see the context switch's stores).

#include "runtime/internal/observability/fiber_dump.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <mutex>

#include "absl/debugging/stacktrace.h"
#include "absl/debugging/symbolize.h"
#include "fiber/internal/stack_allocator.h"
#include "runtime/internal/group/scheduling_group.h"

namespace spindle::internal {
namespace {

constexpr int kMaxFrames = 64;

#if defined(__x86_64__)
// context_x86_64.S's protocol: the resume address on top, rbp two words up. A fiber is
// saved by FiberEntity's inline switch, so its resume address is inside the function
// that switched (the yield or park path) and rbp is that function's frame.
constexpr std::size_t kSavedFpOffset = 16;
constexpr std::size_t kSavedPcOffset = 0;
#elif defined(__aarch64__)
constexpr std::size_t kSavedFpOffset = 0x90;
constexpr std::size_t kSavedPcOffset = 0xa0;
#else
#error "fiber dump: unknown saved-context layout for this CPU"
#endif

__attribute__((no_sanitize("address", "thread"))) std::uintptr_t ReadWord(
    std::uintptr_t address) {
  return *reinterpret_cast<const volatile std::uintptr_t*>(address);
}

// Appends the PCs of a switched-out fiber's stack, innermost first.
__attribute__((no_sanitize("address", "thread"))) void WalkSavedStack(
    const Stack& stack, const void* saved_sp, std::vector<void*>* pcs) {
  const auto low = reinterpret_cast<std::uintptr_t>(stack.base);
  const auto high =
      reinterpret_cast<std::uintptr_t>(stack.top()) - FiberControlBlockSize();
  const auto sp = reinterpret_cast<std::uintptr_t>(saved_sp);
  if (sp < low || sp + std::max(kSavedPcOffset, kSavedFpOffset) + sizeof(void*) > high) return;
  void* frames[kMaxFrames];
  frames[0] = reinterpret_cast<void*>(ReadWord(sp + kSavedPcOffset));
  const std::size_t n =
      1 + WalkFramePointers(sp, high, ReadWord(sp + kSavedFpOffset), frames + 1,
                            kMaxFrames - 1);
  pcs->assign(frames, frames + n);
}

// Steps 2-4 of the file comment for one stack; false if it holds no live fiber.
bool SnapshotStack(const Stack& stack, const FiberEntity* caller,
                   const std::vector<void*>& caller_pcs, std::uint64_t now,
                   double ns_per_tick, FiberSnapshot* out) {
  if (!PinStackEntity(stack)) return false;
  const auto* fiber =
      reinterpret_cast<FiberEntity*>(stack.top() - FiberControlBlockSize());
  auto* mutable_fiber = const_cast<FiberEntity*>(fiber);
  {
    std::lock_guard<Spinlock> lock(mutable_fiber->scheduler_lock);
    out->id = fiber->id;
    out->state = fiber->state();
    out->wait_kind = fiber->wait_kind;
    // A joiner's wait object is the joined fiber's id, kept alive by the joiner's handle
    // until it has run again, which our hold on its scheduler lock forbids.
    if (out->state == FiberState::kWaiting && fiber->wait_kind == WaitKind::kJoin &&
        fiber->wait_object != nullptr) {
      out->joined_fiber = *static_cast<const std::uint64_t*>(fiber->wait_object);
    }
    out->is_caller = fiber == caller;
    const std::uint64_t since =
        out->state == FiberState::kWaiting ? fiber->state_since() : 0;
    // Only parks are timed (FiberEntity::SetState()); -1: not known.
    out->seconds_in_state =
        since == 0 ? -1.0
                   : now > since ? static_cast<double>(now - since) * ns_per_tick / 1e9 : 0.0;
    if (out->state != FiberState::kReady && fiber->scheduling_group != nullptr) {
      out->group = static_cast<int>(fiber->scheduling_group->index());
    }
    // Only while Running: a Ready fiber's is that of its last run (see the top).
    if (out->state == FiberState::kRunning) out->worker = fiber->scheduling_worker;
    if (out->is_caller) {
      out->pcs = caller_pcs;
    } else if (out->state == FiberState::kReady || out->state == FiberState::kWaiting) {
      WalkSavedStack(fiber->stack(), fiber->saved_stack_pointer(), &out->pcs);
      // A fiber that never ran still has its initial context: its frame pointer is 0,
      // so the walk found the trampoline alone.
      out->not_started = out->state == FiberState::kReady && out->pcs.size() <= 1;
    }
  }
  UnpinStackEntity(stack);
  return true;
}

std::string DescribeState(const FiberSnapshot& fiber) {
  switch (fiber.state) {
    case FiberState::kReady:
      return fiber.not_started ? "ready (not started)" : "ready";
    case FiberState::kRunning:
      return "running on worker " + std::to_string(fiber.worker);
    case FiberState::kWaiting:
      if (fiber.joined_fiber != 0) {
        return "waiting on join of fiber " + std::to_string(fiber.joined_fiber);
      }
      return std::string("waiting on ") + WaitKindName(fiber.wait_kind);
    case FiberState::kDead:
      return "exiting";
  }
  return "?";
}

std::string FormatSeconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.3fs", seconds);
  return text;
}

}  // namespace

__attribute__((no_sanitize("address", "thread"))) std::size_t WalkFramePointers(
    std::uintptr_t sp, std::uintptr_t high, std::uintptr_t fp, void** out,
    std::size_t max) {
  std::size_t n = 0;
  std::uintptr_t previous = sp;
  while (n < max && fp > previous && fp % sizeof(void*) == 0 &&
         fp + 2 * sizeof(void*) <= high) {
    const std::uintptr_t pc = ReadWord(fp + sizeof(void*));
    if (pc == 0) break;
    out[n++] = reinterpret_cast<void*>(pc);
    previous = fp;
    fp = ReadWord(fp);
  }
  return n;
}

std::vector<FiberSnapshot> SnapshotFibers(std::size_t max_fibers, std::size_t* total) {
  FiberEntity* current = GetCurrentFiberEntity();
  const FiberEntity* caller =
      current != nullptr && !current->is_master() ? current : nullptr;
  std::vector<void*> caller_pcs;
  if (caller != nullptr) {
    caller_pcs.resize(kMaxFrames);
    caller_pcs.resize(static_cast<std::size_t>(
        absl::GetStackTrace(caller_pcs.data(), kMaxFrames, /*skip_count=*/1)));
  }
  const double ns_per_tick = CycleClockNanosPerTick();
  const std::uint64_t now = CycleClockNow();
  std::vector<FiberSnapshot> fibers;
  std::size_t uncaptured = 0;
  ForEachRegisteredStack([&](const Stack& stack) {
    if (fibers.size() >= max_fibers) {
      // Past the bound: counted only (a pin tells a live fiber from a cached stack).
      if (PinStackEntity(stack)) {
        UnpinStackEntity(stack);
        ++uncaptured;
      }
      return;
    }
    FiberSnapshot snapshot;
    if (SnapshotStack(stack, caller, caller_pcs, now, ns_per_tick, &snapshot)) {
      fibers.push_back(std::move(snapshot));
    }
  });
  if (total != nullptr) *total = fibers.size() + uncaptured;
  std::sort(fibers.begin(), fibers.end(),
            [](const FiberSnapshot& a, const FiberSnapshot& b) { return a.id < b.id; });
  return fibers;
}

void WriteFiberBlock(std::ostream& out, const FiberSnapshot& fiber) {
  out << "fiber " << fiber.id << " group ";
  if (fiber.group >= 0) {
    out << fiber.group;
  } else {
    out << '-';
  }
  out << ' ' << DescribeState(fiber);
  if (fiber.seconds_in_state >= 0) out << " for " << FormatSeconds(fiber.seconds_in_state);
  if (fiber.is_caller) out << " (this fiber, taking the dump)";
  out << '\n';
  if (fiber.pcs.empty()) {
    out << "  (stack not captured)\n";
    return;
  }
  for (std::size_t i = 0; i < fiber.pcs.size(); ++i) {
    char symbol[1024];
    // Every PC is a return address, which points after its call: look up the call
    // instruction, in case the call ends a function. (On x86-64 the first is the
    // switch's resume label, or where a signal interrupted a running fiber, not after
    // a call: one byte back is still inside that function.)
    const char* name =
        absl::Symbolize(static_cast<char*>(fiber.pcs[i]) - 1, symbol, sizeof(symbol))
            ? symbol
            : "(unknown)";
    char line[64];
    std::snprintf(line, sizeof(line), "  #%-2zu %p ", i, fiber.pcs[i]);
    out << line << name << '\n';
  }
}

void WriteFiberDump(std::ostream& out, const std::vector<FiberSnapshot>& fibers,
                    std::size_t live_fibers, std::size_t total,
                    const std::function<void()>& between) {
  std::size_t counts[4] = {};
  for (const FiberSnapshot& fiber : fibers) ++counts[static_cast<int>(fiber.state)];
  if (total < fibers.size()) total = fibers.size();
  const std::size_t queued = live_fibers > total ? live_fibers - total : 0;
  out << "--- fiber dump: " << fibers.size() << " fibers (" << counts[0] << " ready, "
      << counts[1] << " running, " << counts[2] << " waiting); about " << queued
      << " more started but not yet scheduled ---\n";
  if (total > fibers.size()) {
    out << "(" << total - fibers.size() << " more fibers with a stack not shown: the dump "
        << "shows at most " << fibers.size() << ")\n";
  }
  for (const FiberSnapshot& fiber : fibers) {
    WriteFiberBlock(out, fiber);
    if (between) between();
  }
  out << "--- end of fiber dump ---\n";
}

}  // namespace spindle::internal
