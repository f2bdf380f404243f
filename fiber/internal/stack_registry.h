// Copyright 2026 The Spindle Authors.
//
// The registry of every stack the stack allocators have mapped and not unmapped, in
// regions (stack_registry.cc says how it is kept, and its mirror for debuggers). The
// allocator's side of it; the fiber dump reads it through ForEachRegisteredStack()
// (stack_allocator.h). Thread-safe.

#ifndef SPINDLE_FIBER_INTERNAL_STACK_REGISTRY_H_
#define SPINDLE_FIBER_INTERNAL_STACK_REGISTRY_H_

#include <cstddef>

#include "fiber/internal/stack_allocator.h"

namespace spindle::internal {

// A region of `count` stacks like `first`, each `stride` bytes above the last (an
// mmapped stack: a region of one, stride 0).
void RegisterStacks(const Stack& first, std::size_t stride, std::size_t count);
// The region that starts at `first_base` now holds `count` stacks.
void GrowRegisteredStacks(char* first_base, std::size_t count);
// Forgets the region that starts at `first_base`, waiting for a walk in progress.
void UnregisterStacks(char* first_base);

}  // namespace spindle::internal

#endif  // SPINDLE_FIBER_INTERNAL_STACK_REGISTRY_H_
