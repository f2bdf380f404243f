// Copyright 2026 The Spindle Authors.
//
// Where the scheduling groups go: a pure function from a topology and the layout
// options to one plan per group (its node, its worker count, the CPUs its workers may
// use). No threads, no system calls, so every layout is testable on any machine.

#ifndef SPINDLE_RUNTIME_INTERNAL_GROUP_LAYOUT_H_
#define SPINDLE_RUNTIME_INTERNAL_GROUP_LAYOUT_H_

#include <cstddef>
#include <string>
#include <vector>

#include "runtime/internal/base/topology.h"

namespace spindle::internal {

struct LayoutOptions {
  std::size_t concurrency = 1;  // workers in all, >= 1 (already resolved from "auto")
  std::size_t group_size = 0;   // 0: automatic (see ComputeGroupSizes())
  bool numa_aware = false;
  bool disallow_cpu_migration = false;
};

// One scheduling group's place. A plain value.
struct GroupPlan {
  int node = kNoNumaNode;        // kNoNumaNode when the layout is not NUMA-aware
  std::size_t workers = 0;       // >= 1
  std::vector<int> cpus;         // ascending: where the group's workers may run
  // With disallow_cpu_migration, worker i's only CPU; empty otherwise.
  std::vector<int> worker_cpus;
  // The pool it belongs to (RuntimeLayout::pools), 0: the default pool.
  std::size_t pool = 0;
};

// The number of workers in each scheduling group for `concurrency` workers.
// `group_size` 0 is automatic: one group of all workers when there are fewer than 8;
// otherwise as few groups as keep each at most 15 workers, sized evenly (so each has
// 8 to 15). An explicit size is honoured: groups of that size, the last one smaller.
std::vector<std::size_t> ComputeGroupSizes(std::size_t concurrency, std::size_t group_size);

// The groups for `topology` (at least one node, each with CPUs) and `options`.
//
// NUMA-aware: the workers are shared out over the nodes in proportion to their CPUs
// (largest remainder; a node may get none when there are fewer workers than nodes),
// each node's workers form ComputeGroupSizes(node workers, group_size) groups (so
// ceil(workers / size) groups), and a group's CPUs are its node's CPUs. Groups are
// numbered node by node. Not NUMA-aware: ComputeGroupSizes(concurrency, group_size)
// groups, all on kNoNumaNode, each allowed on every CPU of the topology.
//
// With disallow_cpu_migration, the workers of a node (all workers, when not
// NUMA-aware) take that node's CPUs in turn, one each; with more workers than CPUs
// the turn wraps around and CPUs are shared.
std::vector<GroupPlan> ComputeGroupLayout(const Topology& topology,
                                          const LayoutOptions& options);

// "0-3,6" for {0, 1, 2, 3, 6}.
std::string FormatCpuList(const std::vector<int>& cpus);

// One line: "4 groups, 8 workers, 2 nodes, 8 CPUs: g0=node0:2w@0-3 ...".
std::string DescribeLayout(const std::vector<GroupPlan>& plans);

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_GROUP_LAYOUT_H_
