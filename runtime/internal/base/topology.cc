// Copyright 2026 The Spindle Authors.
//
// The one file that includes <numa.h> (see STYLE.md: platform seams are single files).
// libnuma answers three questions: is NUMA available, which node holds a CPU, and give
// me memory on a node. Everything else (parsing, restricting, affinity) is plain Linux.

#include "runtime/internal/base/topology.h"

#include <numa.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>

#include "glog/logging.h"

namespace spindle::internal {
namespace {

constexpr int kMaxCpu = CPU_SETSIZE - 1;

// True when libnuma works on this machine. numa_available() must be called before any
// other libnuma function; a function-local static makes that once and thread-safe.
bool NumaAvailable() {
  static const bool available = numa_available() >= 0;
  return available;
}

// Parses a non-negative decimal number of at most 7 digits; false if `text` is not one.
bool ParseNumber(const std::string& text, int* value) {
  if (text.empty() || text.size() > 7) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  *value = std::atoi(text.c_str());
  return true;
}

std::vector<std::string> Split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (;;) {
    const std::size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end == std::string::npos ? end : end - start));
    if (end == std::string::npos) return parts;
    start = end + 1;
  }
}

}  // namespace

std::size_t Topology::cpu_count() const {
  std::size_t count = 0;
  for (const NumaNode& node : nodes) count += node.cpus.size();
  return count;
}

int Topology::NodeOfCpu(int cpu) const {
  for (const NumaNode& node : nodes) {
    if (std::binary_search(node.cpus.begin(), node.cpus.end(), cpu)) return node.id;
  }
  return kNoNumaNode;
}

std::string ParseCpuList(const std::string& text, std::vector<int>* cpus) {
  if (text.empty()) return "the CPU list is empty";
  std::set<int> seen;
  for (const std::string& item : Split(text, ',')) {
    const std::size_t dash = item.find('-');
    int first = 0;
    int last = 0;
    const bool ok = dash == std::string::npos
                        ? ParseNumber(item, &first) && ParseNumber(item, &last)
                        : ParseNumber(item.substr(0, dash), &first) &&
                              ParseNumber(item.substr(dash + 1), &last);
    if (!ok || first > last) {
      return "'" + item + "' is not a CPU number or an ascending range A-B";
    }
    if (last > kMaxCpu) {
      return "CPU " + std::to_string(last) + " is above the highest CPU number " +
             std::to_string(kMaxCpu);
    }
    for (int cpu = first; cpu <= last; ++cpu) {
      if (!seen.insert(cpu).second) return "CPU " + std::to_string(cpu) + " is listed twice";
    }
  }
  cpus->assign(seen.begin(), seen.end());
  return "";
}

std::string ParseTopology(const std::string& text, Topology* topology) {
  std::map<int, std::vector<int>> nodes;
  std::set<int> all_cpus;
  for (const std::string& item : Split(text, ';')) {
    const std::size_t colon = item.find(':');
    int node = 0;
    if (colon == std::string::npos || !ParseNumber(item.substr(0, colon), &node)) {
      return "'" + item + "' is not NODE:CPULIST";
    }
    if (nodes.count(node) != 0) return "node " + std::to_string(node) + " is listed twice";
    std::vector<int> cpus;
    const std::string error = ParseCpuList(item.substr(colon + 1), &cpus);
    if (!error.empty()) return "node " + std::to_string(node) + ": " + error;
    for (int cpu : cpus) {
      if (!all_cpus.insert(cpu).second) {
        return "CPU " + std::to_string(cpu) + " is in two nodes";
      }
    }
    nodes[node] = std::move(cpus);
  }
  topology->nodes.clear();
  topology->numa_available = false;
  for (auto& [id, cpus] : nodes) topology->nodes.push_back(NumaNode{id, std::move(cpus)});
  return "";
}

std::vector<int> CurrentAffinityCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int cpu = 0; cpu <= kMaxCpu; ++cpu) {
      if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
    }
  }
  if (cpus.empty()) cpus.push_back(0);
  return cpus;
}

Topology DiscoverTopology(const std::vector<int>& cpus) {
  Topology topology;
  if (!NumaAvailable()) {
    // VLOG: a library stays quiet unless asked (the layout line says "not NUMA-aware").
    VLOG(1) << "Spindle: libnuma reports NUMA unavailable; using one node for all "
            << cpus.size() << " CPUs";
    topology.nodes.push_back(NumaNode{0, cpus});
    return topology;
  }
  std::map<int, std::vector<int>> nodes;
  for (int cpu : cpus) {
    const int node = numa_node_of_cpu(cpu);
    nodes[node < 0 ? 0 : node].push_back(cpu);  // unknown CPU: count it on node 0
  }
  topology.numa_available = true;
  for (auto& [id, node_cpus] : nodes) {
    topology.nodes.push_back(NumaNode{id, std::move(node_cpus)});
  }
  return topology;
}

Topology RestrictTopology(const Topology& topology, const std::vector<int>& cpus) {
  Topology restricted;
  restricted.numa_available = topology.numa_available;
  for (const NumaNode& node : topology.nodes) {
    NumaNode kept{node.id, {}};
    for (int cpu : node.cpus) {
      if (std::binary_search(cpus.begin(), cpus.end(), cpu)) kept.cpus.push_back(cpu);
    }
    if (!kept.cpus.empty()) restricted.nodes.push_back(std::move(kept));
  }
  return restricted;
}

bool SetCurrentThreadAffinity(const std::vector<int>& cpus,
                              const std::vector<int>& allowed) {
  cpu_set_t set;
  CPU_ZERO(&set);
  int count = 0;
  for (int cpu : cpus) {
    if (std::binary_search(allowed.begin(), allowed.end(), cpu)) {
      CPU_SET(cpu, &set);
      ++count;
    }
  }
  if (count == 0) return false;
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

bool CanBindMemoryToNode(int node) {
  return node >= 0 && NumaAvailable() && node <= numa_max_node() &&
         numa_bitmask_isbitset(numa_all_nodes_ptr, static_cast<unsigned>(node));
}

void* AllocateOnNode(std::size_t bytes, int node) {
  void* memory = nullptr;
  if (CanBindMemoryToNode(node)) {
    memory = numa_alloc_onnode(bytes, node);  // mmap + mbind: zeroed, page-aligned
  } else {
    memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                  -1, 0);
    if (memory == MAP_FAILED) memory = nullptr;
  }
  CHECK(memory != nullptr) << "out of memory allocating " << bytes << " bytes on node "
                           << node;
  return memory;
}

void FreeOnNode(void* pointer, std::size_t bytes) {
  // Both paths of AllocateOnNode() are mmap()s (numa_free() is munmap() as well).
  if (pointer != nullptr) munmap(pointer, bytes);
}

}  // namespace spindle::internal
