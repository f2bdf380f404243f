// Copyright 2026 The Spindle Authors.

#include "runtime/internal/strategies/strategy_registry.h"

#include "runtime/internal/strategies/strategy_global_fifo.h"
#include "runtime/internal/strategies/strategy_relaxed.h"
#include "runtime/internal/strategies/strategy_v1.h"
#include "runtime/internal/strategies/strategy_v2.h"

namespace spindle::internal {

const std::vector<const StrategyEntry*>& Strategies() {
  // The registration lines: one per strategy, each entry defined in its own files.
  static const std::vector<const StrategyEntry*> strategies = {
      &kStrategyV1Entry,
      &kStrategyV2Entry,
      &kStrategyRelaxedEntry,
      &kStrategyGlobalFifoEntry,
  };
  return strategies;
}

const StrategyEntry* FindStrategy(std::string_view name) {
  for (const StrategyEntry* entry : Strategies()) {
    if (name == entry->name) return entry;
  }
  return nullptr;
}

std::string StrategyNames() {
  std::string names;
  for (const StrategyEntry* entry : Strategies()) {
    if (!names.empty()) names += ", ";
    names += entry->name;
  }
  return names;
}

std::string ValidateSchedulingStrategy(const std::string& name) {
  if (FindStrategy(name) != nullptr) return "";
  return "--fiber_scheduling_strategy=" + name +
         " is invalid: expected one of: " + StrategyNames();
}

std::string ValidateStrategyFlags() {
  for (const StrategyEntry* entry : Strategies()) {
    std::string error = entry->validate_flags();
    if (!error.empty()) return error;
  }
  return "";
}

}  // namespace spindle::internal
