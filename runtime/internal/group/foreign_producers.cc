// Copyright 2026 The Spindle Authors.

#include "runtime/internal/group/foreign_producers.h"

#include <thread>

namespace spindle::internal {

std::atomic<std::size_t> g_foreign_producers{0};

void WaitForForeignProducers() {
  // acquire: pairs with ForeignProducerScope's release. Such a producer is at most a
  // wake-up system call away from leaving.
  while (g_foreign_producers.load(std::memory_order_acquire) != 0) std::this_thread::yield();
}

}  // namespace spindle::internal
