// Copyright 2026 The Spindle Authors.
//
// Strategy v2's flags: their definitions, their validation (kStrategyV2Entry's, which
// the registry runs before a runtime starts) and StrategyV2Settings::FromFlags(). What
// each setting does is in strategy_v2.cc and strategy_v2_steal.cc.

#include <cstdint>
#include <memory>
#include <string>

#include "gflags/gflags.h"
#include "runtime/internal/queues/local_queue.h"
#include "runtime/internal/queues/stage_buffer.h"
#include "runtime/internal/strategies/strategy_v2.h"

DEFINE_uint64(fiber_v2_local_queue_size, 256,
              "Strategy v2: capacity of each worker's local queue, in fibers (default "
              "256). A power of two in [2, 65536]. A full local queue moves half of "
              "itself to the group's global queue.");
DEFINE_string(fiber_v2_steal, "half",
              "Strategy v2: what an idle worker takes from a sibling's local queue "
              "(default half). Accepted: half, one.");
DEFINE_string(fiber_v2_spawn, "lifo",
              "Strategy v2: where a fiber started or woken by a fiber goes (default "
              "lifo: the worker's runnext slot, run next; fifo: the tail of its local "
              "queue). Accepted: lifo, fifo. One start can choose otherwise: "
              "Fiber::Attributes::start_order (kNext, kBack).");
DEFINE_string(fiber_v2_global_take, "share",
              "Strategy v2: what a worker takes from its group's global queue (default "
              "share: the queue's length over the workers, plus one, as Go). Accepted: "
              "share, one (seed 000's GetOneFromGlob), all (GetAllFromGlob: as much as "
              "half its local queue holds).");
DEFINE_string(fiber_v2_overflow, "half",
              "Strategy v2: what a full local queue moves to the group's global queue "
              "(default half: half of itself and the new fiber, as Go; seed 000's "
              "PutHalfToGlob). Accepted: half, one (PutOneToGlob: the new fiber only).");
DEFINE_uint64(fiber_v2_stage_size, 64,
              "Strategy v2: fibers a worker's running fiber may displace from its "
              "runnext slot while every worker is busy before they go to its local "
              "queue (default 64; 0 = none). Range [0, 256]. They move at the worker's "
              "next switch, to an idle sibling, or when the stage is full.");
DEFINE_uint64(fiber_v2_runnext_grace_ns, 3000,
              "Strategy v2: how long an idle worker that found a fiber in a busy "
              "sibling's runnext slot (its last resort) waits for the sibling to take it "
              "itself before stealing it, in nanoseconds (default 3000, as Go's "
              "runqgrab; 0 = steal at once). Range [0, 1000000].");
DEFINE_uint64(fiber_v2_global_check_interval, 61,
              "Strategy v2: a worker looks at its group's global queue first once every "
              "this many scheduling rounds, even with local work (default 61, as Go). "
              "Range [1, 1000000].");

namespace spindle::internal {
namespace {

constexpr std::uint64_t kMaxGlobalCheckInterval = 1000000;
constexpr std::uint64_t kMaxRunnextGraceNs = 1000000;

std::string ValidateV2Flags() {
  std::string error = ValidateLocalQueueCapacity(FLAGS_fiber_v2_local_queue_size);
  if (!error.empty()) return error;
  if (FLAGS_fiber_v2_steal != "half" && FLAGS_fiber_v2_steal != "one") {
    return "--fiber_v2_steal=" + FLAGS_fiber_v2_steal +
           " is invalid: expected one of: half, one";
  }
  if (FLAGS_fiber_v2_spawn != "lifo" && FLAGS_fiber_v2_spawn != "fifo") {
    return "--fiber_v2_spawn=" + FLAGS_fiber_v2_spawn +
           " is invalid: expected one of: lifo, fifo";
  }
  if (FLAGS_fiber_v2_global_take != "share" && FLAGS_fiber_v2_global_take != "one" &&
      FLAGS_fiber_v2_global_take != "all") {
    return "--fiber_v2_global_take=" + FLAGS_fiber_v2_global_take +
           " is invalid: expected one of: share, one, all";
  }
  if (FLAGS_fiber_v2_overflow != "half" && FLAGS_fiber_v2_overflow != "one") {
    return "--fiber_v2_overflow=" + FLAGS_fiber_v2_overflow +
           " is invalid: expected one of: half, one";
  }
  if (FLAGS_fiber_v2_stage_size > kMaxStageCapacity) {
    return "--fiber_v2_stage_size=" + std::to_string(FLAGS_fiber_v2_stage_size) +
           " is out of range: accepted [0, " + std::to_string(kMaxStageCapacity) + "]";
  }
  if (FLAGS_fiber_v2_runnext_grace_ns > kMaxRunnextGraceNs) {
    return "--fiber_v2_runnext_grace_ns=" + std::to_string(FLAGS_fiber_v2_runnext_grace_ns) +
           " is out of range: accepted [0, " + std::to_string(kMaxRunnextGraceNs) + "]";
  }
  if (FLAGS_fiber_v2_global_check_interval < 1 ||
      FLAGS_fiber_v2_global_check_interval > kMaxGlobalCheckInterval) {
    return "--fiber_v2_global_check_interval=" +
           std::to_string(FLAGS_fiber_v2_global_check_interval) +
           " is invalid: expected rounds in [1, " + std::to_string(kMaxGlobalCheckInterval) +
           "]";
  }
  return "";
}

std::unique_ptr<SchedulingStrategy> CreateV2(const SchedulingGroupOptions& options) {
  return std::unique_ptr<SchedulingStrategy>(
      new (options.memory_node) StrategyV2(options, StrategyV2Settings::FromFlags()));
}

}  // namespace

const StrategyEntry kStrategyV2Entry = {"v2", &ValidateV2Flags, &CreateV2};

StrategyV2Settings StrategyV2Settings::FromFlags() {
  StrategyV2Settings settings;
  settings.local_queue_capacity = FLAGS_fiber_v2_local_queue_size;
  settings.steal_half = FLAGS_fiber_v2_steal == "half";
  settings.spawn_lifo = FLAGS_fiber_v2_spawn == "lifo";
  settings.global_check_interval = FLAGS_fiber_v2_global_check_interval;
  settings.global_take = FLAGS_fiber_v2_global_take == "one"   ? GlobalTake::kOne
                         : FLAGS_fiber_v2_global_take == "all" ? GlobalTake::kAll
                                                               : GlobalTake::kShare;
  settings.overflow_half = FLAGS_fiber_v2_overflow == "half";
  settings.stage_capacity = FLAGS_fiber_v2_stage_size;
  settings.runnext_grace_ns = FLAGS_fiber_v2_runnext_grace_ns;
  return settings;
}

}  // namespace spindle::internal
