// Copyright 2026 The Spindle Authors.

#include "runtime/internal/group_layout.h"

#include <algorithm>
#include <set>
#include <sstream>

namespace spindle::internal {
namespace {

constexpr std::size_t kAutoGroupMin = 8;
constexpr std::size_t kAutoGroupMax = 15;

// Shares `total` out over `weights` in proportion (largest remainder, ties to the
// lower index).
std::vector<std::size_t> Apportion(std::size_t total, const std::vector<std::size_t>& weights) {
  std::size_t weight_sum = 0;
  for (std::size_t w : weights) weight_sum += w;
  std::vector<std::size_t> shares(weights.size());
  std::vector<std::size_t> remainders(weights.size());
  std::size_t given = 0;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    shares[i] = total * weights[i] / weight_sum;
    remainders[i] = total * weights[i] % weight_sum;
    given += shares[i];
  }
  std::vector<std::size_t> order(weights.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return remainders[a] > remainders[b];
  });
  for (std::size_t i = 0; given < total; ++i, ++given) ++shares[order[i % order.size()]];
  return shares;
}

// Appends the groups of `workers` workers placed on `node` with CPUs `cpus`.
void AppendGroups(int node, const std::vector<int>& cpus, std::size_t workers,
                  const LayoutOptions& options, std::vector<GroupPlan>* plans) {
  std::size_t next_cpu = 0;
  for (std::size_t size : ComputeGroupSizes(workers, options.group_size)) {
    GroupPlan plan;
    plan.node = node;
    plan.workers = size;
    plan.cpus = cpus;
    if (options.disallow_cpu_migration) {
      for (std::size_t w = 0; w < size; ++w) {
        plan.worker_cpus.push_back(cpus[next_cpu++ % cpus.size()]);
      }
    }
    plans->push_back(std::move(plan));
  }
}

}  // namespace

std::vector<std::size_t> ComputeGroupSizes(std::size_t concurrency,
                                           std::size_t group_size) {
  std::vector<std::size_t> sizes;
  if (group_size == 0) {
    if (concurrency < kAutoGroupMin) return {concurrency};
    const std::size_t groups = (concurrency + kAutoGroupMax - 1) / kAutoGroupMax;
    for (std::size_t i = 0; i < groups; ++i) {
      sizes.push_back(concurrency / groups + (i < concurrency % groups ? 1 : 0));
    }
    return sizes;
  }
  for (std::size_t left = concurrency; left > 0;) {
    const std::size_t size = std::min(left, group_size);
    sizes.push_back(size);
    left -= size;
  }
  return sizes;
}

std::vector<GroupPlan> ComputeGroupLayout(const Topology& topology,
                                          const LayoutOptions& options) {
  std::vector<GroupPlan> plans;
  if (!options.numa_aware) {
    std::set<int> all;
    for (const NumaNode& node : topology.nodes) all.insert(node.cpus.begin(), node.cpus.end());
    AppendGroups(kNoNumaNode, std::vector<int>(all.begin(), all.end()), options.concurrency,
                 options, &plans);
    return plans;
  }
  std::vector<std::size_t> weights;
  for (const NumaNode& node : topology.nodes) weights.push_back(node.cpus.size());
  const std::vector<std::size_t> workers = Apportion(options.concurrency, weights);
  for (std::size_t i = 0; i < topology.nodes.size(); ++i) {
    if (workers[i] == 0) continue;
    AppendGroups(topology.nodes[i].id, topology.nodes[i].cpus, workers[i], options, &plans);
  }
  return plans;
}

std::string FormatCpuList(const std::vector<int>& cpus) {
  std::ostringstream out;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    out << (i == 0 ? "" : ",") << cpus[i];
    if (j > i) out << "-" << cpus[j];
    i = j + 1;
  }
  return out.str();
}

std::string DescribeLayout(const std::vector<GroupPlan>& plans) {
  std::size_t workers = 0;
  std::set<int> nodes;
  std::set<int> cpus;
  std::ostringstream groups;
  for (std::size_t g = 0; g < plans.size(); ++g) {
    const GroupPlan& plan = plans[g];
    workers += plan.workers;
    nodes.insert(plan.node);
    cpus.insert(plan.cpus.begin(), plan.cpus.end());
    groups << " g" << g << "=";
    if (plan.node == kNoNumaNode) {
      groups << "any";
    } else {
      groups << "node" << plan.node;
    }
    groups << ":" << plan.workers << "w@" << FormatCpuList(plan.cpus);
    if (!plan.worker_cpus.empty()) groups << "(pinned)";
  }
  std::ostringstream out;
  const auto count = [](std::size_t n, const char* noun) {
    return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
  };
  out << count(plans.size(), "group") << ", " << count(workers, "worker") << ", ";
  if (nodes.count(kNoNumaNode) != 0) {
    out << "not NUMA-aware";
  } else {
    out << count(nodes.size(), "node");
  }
  out << ", " << count(cpus.size(), "CPU") << ":" << groups.str();
  return out.str();
}

}  // namespace spindle::internal
