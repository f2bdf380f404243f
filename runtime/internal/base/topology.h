// Copyright 2026 The Spindle Authors.
//
// The machine's NUMA topology as the runtime sees it: the CPUs it may use, grouped by
// node. The only platform seam for NUMA: topology.cc is the one file that includes
// <numa.h>. Tests and experiments replace the machine with a fake topology
// (--fiber_numa_topology_override), parsed here too.

#ifndef SPINDLE_RUNTIME_INTERNAL_TOPOLOGY_H_
#define SPINDLE_RUNTIME_INTERNAL_TOPOLOGY_H_

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace spindle::internal {

// No particular node: memory comes from the default policy, threads run anywhere.
inline constexpr int kNoNumaNode = -1;

struct NumaNode {
  int id = 0;             // the node's number as the OS (or the override) names it
  std::vector<int> cpus;  // ascending, non-empty
};

// Nodes in ascending id order, each with at least one CPU; every CPU in one node only.
// A plain value: no thread-safety concerns.
struct Topology {
  std::vector<NumaNode> nodes;
  // False when the nodes are a fake (an override) or a fallback because libnuma said
  // NUMA is unavailable: memory is then never bound to a node.
  bool numa_available = false;

  std::size_t cpu_count() const;
  // The node holding `cpu`, or kNoNumaNode.
  int NodeOfCpu(int cpu) const;
};

// Parses a CPU list such as "0-4,6" into ascending distinct CPU numbers. Returns "" or
// what is wrong (without the flag name; the caller adds it).
std::string ParseCpuList(const std::string& text, std::vector<int>* cpus);

// Parses a fake topology "NODE:CPULIST;NODE:CPULIST..." such as "0:0-3;1:4-7": node
// ids distinct and >= 0, each with a non-empty CPU list, no CPU in two nodes. The
// result has numa_available == false. Returns "" or what is wrong.
std::string ParseTopology(const std::string& text, Topology* topology);

// The CPUs in the calling thread's affinity mask (at least CPU 0 if the call fails).
std::vector<int> CurrentAffinityCpus();

// The real machine restricted to `cpus` (each CPU placed on its node as libnuma
// reports it). When libnuma says NUMA is unavailable, one node 0 holding all of `cpus`,
// with a log line; never fails.
Topology DiscoverTopology(const std::vector<int>& cpus);

// `topology` with only the CPUs in `cpus` kept; nodes left empty are dropped.
Topology RestrictTopology(const Topology& topology, const std::vector<int>& cpus);

// Restricts the calling thread to the CPUs in `cpus` that are also in `allowed` (the
// process's original mask). Returns false and changes nothing when none is.
bool SetCurrentThreadAffinity(const std::vector<int>& cpus, const std::vector<int>& allowed);

// Page-aligned, zeroed memory of `bytes`, placed on `node` when NUMA is available and
// `node` is a real node (numa_alloc_onnode), else from the default policy. Never null
// (CHECK-fails on out-of-memory). Release with FreeOnNode(pointer, bytes). Thread-safe.
void* AllocateOnNode(std::size_t bytes, int node);
void FreeOnNode(void* pointer, std::size_t bytes);

// AllocateOnNode() and FreeOnNode() for the scheduler's objects placed on their node
// (queues' slots, strategies, groups). A model (SPINDLE_MODEL_CHECK; inline, so the
// define is the includer's) builds these afresh at every iteration, and a mapping each
// time, unmapped with a TLB flush at the end, was a third of a model's time: there they
// come from the heap (which model_testing.cc keeps glibc from mapping or trimming),
// zeroed and 64-byte aligned like a mapping.
inline void* AllocateNodeMemory(std::size_t bytes, int node) {
#ifdef SPINDLE_MODEL_CHECK
  static_cast<void>(node);
  void* memory = nullptr;
  if (posix_memalign(&memory, 64, bytes) != 0) std::abort();
  std::memset(memory, 0, bytes);
  return memory;
#else
  return AllocateOnNode(bytes, node);
#endif
}
inline void FreeNodeMemory(void* pointer, std::size_t bytes) {
#ifdef SPINDLE_MODEL_CHECK
  static_cast<void>(bytes);
  (free)(pointer);  // in parentheses: not Relacy's free() macro (the memory is not its)
#else
  FreeOnNode(pointer, bytes);
#endif
}

// Whether memory allocated by AllocateOnNode(..., node) is really bound to `node`.
bool CanBindMemoryToNode(int node);

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_TOPOLOGY_H_
