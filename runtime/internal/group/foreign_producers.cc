// Copyright 2026 The Spindle Authors.

#include "runtime/internal/group/foreign_producers.h"

namespace spindle::internal {

// Constant-initialized (constexpr constructor): usable before any dynamic initializer.
ForeignProducers g_foreign_producers;

void WaitForForeignProducers() { g_foreign_producers.WaitUntilNone(); }

}  // namespace spindle::internal
