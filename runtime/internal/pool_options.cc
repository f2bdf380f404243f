// Copyright 2026 The Spindle Authors.
//
// --fiber_pools and --fiber_max_fibers: the flags and their parser (ParseFiberPools(),
// runtime_options.h). ComputeRuntimeLayout() lays the parsed pools out.

#include <string>
#include <utility>
#include <vector>

#include "gflags/gflags.h"
#include "runtime/internal/base/topology.h"
#include "runtime/internal/runtime_options.h"
#include "runtime/internal/strategies/strategy_registry.h"

DEFINE_string(fiber_pools, "",
              "Named worker pools, kept apart: each has its own scheduling groups, "
              "workers and timer threads, and no fiber ever moves between pools (no "
              "stealing, no adoption on a wake-up). POOL[,POOL...] with POOL = "
              "NAME:WORKERS[:OPTION=VALUE...], e.g. default:auto,admin:1:cpus=3,"
              "batch:2:max_fibers=10000. NAME: [a-z][a-z0-9_]*, up to 32 characters, "
              "unique. WORKERS: [1, 1024], or auto for the default pool (the workers "
              "--fiber_concurrency leaves to it, at least 1). OPTIONs: cpus=CPULIST "
              "(pins the pool's workers there; parts of the list after a comma continue "
              "it, as in cpus=0-3,6), max_fibers=N (live fibers past which the TryStart "
              "forms are refused, [0, 2^32], 0 = no cap), strategy=v1|v2|relaxed|"
              "globalfifo (default --fiber_scheduling_strategy). The default pool runs "
              "the fibers plain threads start; declared or not, it is pool 0 (implied "
              "as default:auto). At most 16 pools. Default \"\" = the default pool "
              "only, exactly as without pools.");
DEFINE_uint64(fiber_max_fibers, 0,
              "The default pool's cap on live fibers: past it the TryStart forms "
              "(fiber/fiber.h) are refused with ResourceExhausted and io::Server refuses "
              "connections; plain starts are never refused (they are counted past the "
              "cap). max_fibers= in --fiber_pools overrides it. Default 0 = no cap; "
              "range [0, 2^32].");

namespace spindle::internal {
namespace {

constexpr std::size_t kMaxPoolName = 32;

bool IsPoolName(const std::string& name) {
  if (name.empty() || name.size() > kMaxPoolName || name[0] < 'a' || name[0] > 'z') {
    return false;
  }
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

// A whole decimal number in [0, max] (no sign, no spaces).
bool ParseCount(const std::string& text, std::size_t max, std::size_t* value) {
  if (text.empty() || text.size() > 19) return false;
  std::size_t n = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    n = n * 10 + static_cast<std::size_t>(c - '0');
  }
  if (n > max) return false;
  *value = n;
  return true;
}
}  // namespace

std::string ParseFiberPools(const std::string& text, std::size_t default_max_fibers,
                            std::vector<PoolOptions>* pools) {
  pools->clear();
  const std::string flag = "--fiber_pools=" + text + " is invalid: ";
  const std::string syntax =
      "; expected POOL[,POOL...] with POOL = NAME:WORKERS[:cpus=CPULIST][:max_fibers=N]"
      "[:strategy=NAME], e.g. default:auto,admin:1:cpus=3";
  // Split at commas; a part that starts with a digit continues the previous part (a
  // CPU list's own commas, as in cpus=0-3,6).
  std::vector<std::string> entries;
  std::size_t start = 0;
  while (!text.empty() && start <= text.size()) {
    std::size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    std::string part = text.substr(start, comma - start);
    if (!entries.empty() && !part.empty() && part[0] >= '0' && part[0] <= '9') {
      entries.back() += "," + part;
    } else {
      entries.push_back(part);
    }
    start = comma + 1;
  }
  bool has_default = false;
  for (const std::string& entry : entries) {
    std::vector<std::string> fields;
    std::size_t from = 0;
    for (;;) {
      const std::size_t colon = entry.find(':', from);
      fields.push_back(entry.substr(from, colon == std::string::npos ? colon : colon - from));
      if (colon == std::string::npos) break;
      from = colon + 1;
    }
    if (fields.size() < 2) {
      return flag + "pool \"" + entry + "\" has no worker count" + syntax;
    }
    PoolOptions pool;
    pool.name = fields[0];
    if (!IsPoolName(pool.name)) {
      return flag + "pool name \"" + pool.name +
             "\" is not [a-z][a-z0-9_]* of at most 32 characters" + syntax;
    }
    for (const PoolOptions& other : *pools) {
      if (other.name == pool.name) return flag + "pool " + pool.name + " is declared twice";
    }
    const bool is_default = pool.name == "default";
    if (fields[1] == "auto") {
      if (!is_default) {
        return flag + "pool " + pool.name + " has workers \"auto\", which only the default "
               "pool may have; expected a worker count in [1, " +
               std::to_string(kMaxConcurrency) + "]";
      }
    } else if (!ParseCount(fields[1], kMaxConcurrency, &pool.workers) || pool.workers == 0) {
      return flag + "pool " + pool.name + " has workers \"" + fields[1] +
             "\"; expected a worker count in [1, " + std::to_string(kMaxConcurrency) + "]" +
             (is_default ? " or auto" : "");
    }
    pool.max_fibers = is_default ? default_max_fibers : 0;
    for (std::size_t f = 2; f < fields.size(); ++f) {
      const std::size_t equals = fields[f].find('=');
      const std::string key = fields[f].substr(0, equals);
      const std::string value = equals == std::string::npos ? "" : fields[f].substr(equals + 1);
      if (equals == std::string::npos || value.empty()) {
        return flag + "pool " + pool.name + " has option \"" + fields[f] +
               "\" without a value" + syntax;
      }
      if (key == "cpus") {
        std::vector<int> cpus;
        const std::string error = ParseCpuList(value, &cpus);
        if (!error.empty()) {
          return flag + "pool " + pool.name + " has cpus=" + value + ": " + error +
                 "; expected a CPU list such as 0-3,6";
        }
        pool.cpus = value;
      } else if (key == "max_fibers") {
        if (!ParseCount(value, kMaxFiberCap, &pool.max_fibers)) {
          return flag + "pool " + pool.name + " has max_fibers=" + value +
                 "; expected live fibers in [0, " + std::to_string(kMaxFiberCap) +
                 "] (0 = no cap)";
        }
      } else if (key == "strategy") {
        const std::string error = ValidateSchedulingStrategy(value);
        if (!error.empty()) return flag + "pool " + pool.name + ": " + error;
        pool.strategy = value;
      } else {
        return flag + "pool " + pool.name + " has an unknown option \"" + key +
               "\"; expected cpus, max_fibers or strategy";
      }
    }
    if (is_default) {
      has_default = true;
      pools->insert(pools->begin(), std::move(pool));
    } else {
      pools->push_back(std::move(pool));
    }
  }
  if (!has_default) {
    PoolOptions pool;
    pool.name = "default";
    pool.max_fibers = default_max_fibers;
    pools->insert(pools->begin(), std::move(pool));
  }
  if (pools->size() > kMaxFiberPools) {
    return flag + std::to_string(pools->size()) + " pools (the default one included); " +
           "expected at most " + std::to_string(kMaxFiberPools);
  }
  return "";
}

}  // namespace spindle::internal
