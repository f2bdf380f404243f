// Copyright 2026 The Spindle Authors.
//
// The scheduling strategies, each described once by its own files: its name (the value
// of --fiber_scheduling_strategy), a check of its own flags, and a factory. The runtime
// knows strategies only through this table: runtime_options.cc validates whichever is
// named and every strategy's flags through it, and SchedulingGroup builds its strategy
// with it. Adding a strategy touches its own files, one registration line in
// strategy_registry.cc and its tests.
//
// Thread-safety: the table is constant; its functions may be called from any thread.

#ifndef SPINDLE_RUNTIME_INTERNAL_STRATEGY_REGISTRY_H_
#define SPINDLE_RUNTIME_INTERNAL_STRATEGY_REGISTRY_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/internal/strategies/scheduling_strategy.h"  // StrategyEntry

namespace spindle::internal {

// Every strategy, in registration order.
const std::vector<const StrategyEntry*>& Strategies();
// The strategy called `name`, or nullptr.
const StrategyEntry* FindStrategy(std::string_view name);
// "v1, v2, relaxed, globalfifo": the accepted values of --fiber_scheduling_strategy.
std::string StrategyNames();
// What is wrong with `name` as a value of --fiber_scheduling_strategy (naming the flag,
// the value and the accepted values); the empty string when it names a strategy.
std::string ValidateSchedulingStrategy(const std::string& name);
// The first error of any strategy's flags (every strategy's, whichever is chosen: a bad
// value is refused even while another strategy runs); the empty string if none.
std::string ValidateStrategyFlags();

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_STRATEGY_REGISTRY_H_
