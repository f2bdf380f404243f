// Copyright 2026 The Spindle Authors.

#include "runtime/internal/base/foreign_producers.h"

#include <thread>

#include "absl/base/attributes.h"

namespace spindle::internal {

void ForeignProducers::WaitUntilNone() const {
  // acquire: pairs with Leave()'s release.
  while (count_.load(std::memory_order_acquire) != 0) std::this_thread::yield();
}

#ifndef SPINDLE_MODEL_CHECK
ABSL_CONST_INIT ForeignProducers g_foreign_producers;

void WaitForForeignProducers() { g_foreign_producers.WaitUntilNone(); }
#endif

}  // namespace spindle::internal
