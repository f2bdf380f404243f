// Copyright 2026 The Spindle Authors.
//
// The per-thread stack caches in front of the StackAllocators (stack_allocator.h), the
// wait of a plain start that finds no stack to be had (StackCache::Get()), and the
// stack size classes that pick a cache.

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "fiber/internal/sanitizers.h"
#include "fiber/internal/stack_allocator.h"
#include "glog/logging.h"

namespace spindle::internal {

std::uint8_t StackClassFor(std::size_t requested) {
  const std::size_t default_size = StackAllocator::Default(0).stack_size();
  if (requested == 0 || requested == default_size) return 0;
  std::uint8_t stack_class = 1;
  while (stack_class < kMaxStackClass && StackClassSize(stack_class) < requested) {
    ++stack_class;
  }
  return StackClassSize(stack_class) == default_size ? 0 : stack_class;
}

std::size_t StackClassSize(std::uint8_t stack_class) {
  if (stack_class == 0) return StackAllocator::Default(0).stack_size();
  return std::size_t{1} << (13 + stack_class);
}

std::string ValidateRequestedStackSize(std::size_t requested) {
  if (requested <= kMaxRequestedStackSize) return "";
  return "Fiber::Attributes::stack_size=" + std::to_string(requested) +
         " is invalid: expected 0 (--fiber_stack_size) or bytes in [1, " +
         std::to_string(kMaxRequestedStackSize) +
         "], rounded up to a power of two of at least 16384";
}

StackCache::~StackCache() {
  if (!cached_.empty()) allocator_->GiveBatch(&cached_);
}

StackCache& StackCache::ForThisThread(std::uint8_t stack_class) {
  thread_local StackCache default_cache(&StackAllocator::Default(0));
  if (stack_class == 0) return default_cache;
  thread_local std::unique_ptr<StackCache> others[kMaxStackClass + 1];
  CHECK_LE(stack_class, kMaxStackClass) << "no stack class " << int{stack_class};
  std::unique_ptr<StackCache>& cache =
      others[std::min<std::uint8_t>(stack_class, kMaxStackClass)];
  if (cache == nullptr) {
    cache = std::make_unique<StackCache>(&StackAllocator::Default(stack_class));
  }
  return *cache;
}

void StackCache::PrepareThisThread() {
  StackCache& cache = ForThisThread(0);
  // Put() spills a batch once the cache holds two.
  cache.cached_.reserve(2 * cache.allocator_->batch_size());
}

StackCache& StackCache::ForStack(const Stack& stack) {
  if (stack.size == ForThisThread(0).allocator()->stack_size()) return ForThisThread(0);
  return ForThisThread(StackClassFor(stack.size));
}

Stack StackCache::TryGet(std::string* why) {
  // While a thread starves for a stack (Get()), one at a time: a batch of released
  // stacks in this cache would be out of its reach until our fibers end.
  // relaxed: a hint.
  if (cached_.empty() && !allocator_->TakeBatch(&cached_) &&
      allocator_->TryCreateBatch(
          &cached_,
          allocator_->starving.load(std::memory_order_relaxed) != 0 ? 1
                                                                    : allocator_->batch_size(),
          why) == 0) {
    return {};
  }
  Stack stack = cached_.back();
  cached_.pop_back();
  UnpoisonStack(stack.base, stack.size);
  return stack;
}

Stack StackCache::Get() {
  std::string why;
  Stack stack = TryGet(&why);
  if (__builtin_expect(static_cast<bool>(stack), 1)) return stack;
  // No stack anywhere and none can be mapped: wait until a fiber that ends gives one
  // back (Put() sends stacks straight to the pool while we starve) or the limit moves.
  // relaxed: statistics and a hint (see `starving`).
  allocator_->stack_waits.fetch_add(1, std::memory_order_relaxed);
  allocator_->starving.fetch_add(1, std::memory_order_relaxed);
  auto pause = std::chrono::microseconds(100);
  auto next_log = std::chrono::steady_clock::now();
  for (;;) {
    if (std::chrono::steady_clock::now() >= next_log) {
      LOG(ERROR) << "A fiber started with a plain start waits for a stack: " << why
                 << ". Its worker retries until one is free; starts that can be refused "
                    "(Fiber::TryStart, io::Server) are refused meanwhile.";
      next_log = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    }
    std::this_thread::sleep_for(pause);
    pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(100));
    stack = TryGet(&why);
    if (stack) break;
  }
  allocator_->starving.fetch_sub(1, std::memory_order_relaxed);
  return stack;
}

void StackCache::Put(const Stack& stack) {
  // The header stays readable: the fiber dump looks at cached stacks' liveness words.
  PoisonStack(stack.base, stack.size - kStackHeaderSize);
  cached_.push_back(stack);
  // relaxed: a hint; a thread that starves polls the pool.
  if (__builtin_expect(allocator_->starving.load(std::memory_order_relaxed) != 0, 0)) {
    allocator_->GiveBatch(&cached_);
    return;
  }
  allocator_->SpillIfFull(&cached_);
}

}  // namespace spindle::internal
