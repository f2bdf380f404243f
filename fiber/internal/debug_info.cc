// Copyright 2026 The Spindle Authors.

#include "fiber/internal/debug_info.h"

#include <time.h>

#include <cmath>
#include <cstddef>

#include "fiber/internal/cycle_clock.h"
#include "fiber/internal/fiber_entity.h"
#include "fiber/internal/stack_allocator.h"

namespace spindle::internal {

// The offsets of FiberEntity's fields, private ones included (a friend of it).
// FiberEntity is not standard-layout (it mixes access levels), so offsetof is only
// conditionally supported there: GCC and Clang both give the layout the compiler uses,
// which is what a debugger reads; the warning is silenced here and only here.
struct FiberEntityLayout {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
  static constexpr std::uint64_t kMagic = offsetof(FiberEntity, magic);
  static constexpr std::uint64_t kId = offsetof(FiberEntity, id);
  static constexpr std::uint64_t kState = offsetof(FiberEntity, state_);
  static constexpr std::uint64_t kWaitKind = offsetof(FiberEntity, wait_kind);
  static constexpr std::uint64_t kWaitObject = offsetof(FiberEntity, wait_object);
  static constexpr std::uint64_t kGroup = offsetof(FiberEntity, scheduling_group);
  static constexpr std::uint64_t kWorker = offsetof(FiberEntity, scheduling_worker);
  static constexpr std::uint64_t kStateSince = offsetof(FiberEntity, state_since_);
  static constexpr std::uint64_t kStack = offsetof(FiberEntity, stack_);
  static constexpr std::uint64_t kSavedSp = offsetof(FiberEntity, saved_sp_);
#pragma GCC diagnostic pop
  // FiberControlBlockSize()'s formula, as a constant (debug_info_test checks the two
  // agree).
  static constexpr std::uint64_t kControlBlock =
      (sizeof(FiberEntity) + kStackHeaderSize + 63) / 64 * 64;
};

namespace {

static_assert(sizeof(FiberState) == 1 && sizeof(WaitKind) == 1,
              "the debugger reads a state and a wait kind as one byte");
static_assert(sizeof(FiberEntity::scheduling_worker) == 4);

// FiberStateName() and WaitKindName() as arrays (debug_info_test checks they agree).
constexpr const char* kStateNames[] = {"ready", "running", "waiting", "dead"};
constexpr const char* kWaitKindNames[] = {
    "nothing", "mutex",   "condition_variable", "event",   "latch",
    "future",  "timer",   "socket",             "shared_mutex", "semaphore",
    "barrier", "join",    "run_blocking",       "channel", "other"};
static_assert(static_cast<int>(WaitKind::kOther) + 1 ==
              sizeof(kWaitKindNames) / sizeof(kWaitKindNames[0]));

#if defined(__x86_64__)
// context_x86_64.S and context_inline.h: the inline switch leaves 152 bytes below the
// stack pointer it resumes with (the red zone and its 24-byte frame).
constexpr std::uint64_t kSavedPc = 0, kSavedFp = 16, kResumedSp = 152;
#else
// Not described on other CPUs: the gdb commands say so.
constexpr std::uint64_t kSavedPc = 0, kSavedFp = 0, kResumedSp = 0;
#endif

std::uint64_t ClockNs(clockid_t clock) {
  timespec now{};
  clock_gettime(clock, &now);
  return static_cast<std::uint64_t>(now.tv_sec) * 1000000000u +
         static_cast<std::uint64_t>(now.tv_nsec);
}

}  // namespace

void PublishRuntimeDebugInfo(std::uint64_t group_index_offset) {
  SpindleDebugInfo& info = spindle_debug_info;
  info.group_index_offset_plus_one = group_index_offset + 1;
  info.clock_picos_per_tick =
      static_cast<std::uint64_t>(std::llround(CycleClockNanosPerTick() * 1000.0));
  info.clock_ticks = CycleClockNow();
  // steady_clock is CLOCK_MONOTONIC on Linux: what a live debugger compares with.
  info.clock_monotonic_ns = ClockNs(CLOCK_MONOTONIC);
  info.clock_realtime_ns = ClockNs(CLOCK_REALTIME);
}

}  // namespace spindle::internal

using spindle::internal::FiberEntityLayout;

// Constant-initialised: in the image (and every core) before main() runs. `used`: kept
// by the compiler although no code reads most of it.
__attribute__((used)) SpindleDebugInfo spindle_debug_info = {
    "spindle-debug",
    /*version=*/1,
    sizeof(SpindleDebugInfo),
    spindle::internal::kFiberEntityMagic,
    FiberEntityLayout::kControlBlock,
    spindle::internal::kStackHeaderSize,
    spindle::internal::kStackLive,
    spindle::internal::kStackPinned,
    FiberEntityLayout::kMagic,
    FiberEntityLayout::kId,
    FiberEntityLayout::kState,
    FiberEntityLayout::kWaitKind,
    FiberEntityLayout::kWaitObject,
    FiberEntityLayout::kGroup,
    FiberEntityLayout::kWorker,
    FiberEntityLayout::kStateSince,
    FiberEntityLayout::kStack + offsetof(spindle::internal::Stack, base),
    FiberEntityLayout::kStack + offsetof(spindle::internal::Stack, size),
    FiberEntityLayout::kSavedSp,
    spindle::internal::kStateNames,
    sizeof(spindle::internal::kStateNames) / sizeof(spindle::internal::kStateNames[0]),
    spindle::internal::kWaitKindNames,
    sizeof(spindle::internal::kWaitKindNames) / sizeof(spindle::internal::kWaitKindNames[0]),
    spindle::internal::kSavedPc,
    spindle::internal::kSavedFp,
    spindle::internal::kResumedSp,
    &spindle_debug_stacks,
    /*group_index_offset_plus_one=*/0,
    /*clock_picos_per_tick=*/0,
    /*clock_ticks=*/0,
    /*clock_monotonic_ns=*/0,
    /*clock_realtime_ns=*/0,
    /*mutex_owner_offset_plus_one=*/0,
    /*shared_mutex_owner_offset_plus_one=*/0,
};
