// Copyright 2026 The Spindle Authors.
//
// Context-switch and stack benchmarks. Run with -c opt:
//   ./bazelw run -c opt //fiber/internal:context_benchmark
// One iteration of a *RoundTrip benchmark is two switches (there and back).
// Baselines in the same binary: glibc swapcontext (which also saves the signal mask
// with a syscall) and a raw mmap/munmap per stack.

#include <ucontext.h>

#include <cstdlib>
#include <memory>

#include "benchmark/benchmark.h"
#include "fiber/internal/context.h"
#include "fiber/internal/fiber_entity.h"
#include "fiber/internal/fiber_entity_testing.h"
#include "fiber/internal/stack_allocator.h"

namespace spindle::internal {
namespace {

void* g_main_sp = nullptr;
void* g_peer_sp = nullptr;

void PingBack(void*) {
  for (;;) spindle_jump_context(&g_peer_sp, g_main_sp, nullptr);
}

void BM_RawJumpRoundTrip(benchmark::State& state) {
  constexpr std::size_t kSize = 64 * 1024;
  std::unique_ptr<char[]> stack(new char[kSize]);
  g_peer_sp = spindle_make_context(stack.get() + kSize, kSize, &PingBack);
  for (auto _ : state) spindle_jump_context(&g_main_sp, g_peer_sp, nullptr);
}
BENCHMARK(BM_RawJumpRoundTrip);

void BM_MakeContext(benchmark::State& state) {
  constexpr std::size_t kSize = 64 * 1024;
  std::unique_ptr<char[]> stack(new char[kSize]);
  for (auto _ : state) {
    benchmark::DoNotOptimize(spindle_make_context(stack.get() + kSize, kSize, &PingBack));
  }
}
BENCHMARK(BM_MakeContext);

// The switch the scheduler uses: FiberEntity::SwitchTo, with the current-fiber update,
// the landing protocol and (compiled out here) the sanitizer annotations.
// Tells the ping fiber to finish.
bool g_stop_ping = false;

void BM_FiberEntityRoundTrip(benchmark::State& state) {
  FiberEntity* master = GetMasterFiberEntity();
  g_stop_ping = false;
  FiberEntity* fiber = nullptr;
  fiber = testing::NewFiber([&fiber, master] {
    FiberEntity* self = fiber;
    while (!g_stop_ping) self->SwitchTo(master);
  });
  for (auto _ : state) master->SwitchTo(fiber);
  g_stop_ping = true;
  {
    std::lock_guard<Spinlock> lock(fiber->scheduler_lock);
    fiber->SetState(FiberState::kRunning);
  }
  master->SwitchTo(fiber);  // let it finish
}
BENCHMARK(BM_FiberEntityRoundTrip);

ucontext_t g_main_uc, g_peer_uc;
void UcontextPingBack() {
  for (;;) swapcontext(&g_peer_uc, &g_main_uc);
}

void BM_SwapcontextRoundTrip(benchmark::State& state) {
  constexpr std::size_t kSize = 64 * 1024;
  std::unique_ptr<char[]> stack(new char[kSize]);
  getcontext(&g_peer_uc);
  g_peer_uc.uc_stack.ss_sp = stack.get();
  g_peer_uc.uc_stack.ss_size = kSize;
  g_peer_uc.uc_link = nullptr;
  makecontext(&g_peer_uc, &UcontextPingBack, 0);
  for (auto _ : state) swapcontext(&g_main_uc, &g_peer_uc);
}
BENCHMARK(BM_SwapcontextRoundTrip);

void BM_StackCacheGetPut(benchmark::State& state) {
  StackCache& cache = StackCache::ForThisThread();
  cache.Put(cache.Get());  // warm
  for (auto _ : state) {
    Stack stack = cache.Get();
    benchmark::DoNotOptimize(stack.base);
    cache.Put(stack);
  }
}
BENCHMARK(BM_StackCacheGetPut);

// A burst of 256 stacks taken and returned: crosses the batch boundary, so the global
// pool's lock is part of the cost.
void BM_StackCacheBurst256(benchmark::State& state) {
  StackCache& cache = StackCache::ForThisThread();
  std::vector<Stack> stacks(256);
  for (auto _ : state) {
    for (auto& s : stacks) s = cache.Get();
    for (auto& s : stacks) cache.Put(s);
  }
  state.SetItemsProcessed(state.iterations() * 256);
}
BENCHMARK(BM_StackCacheBurst256);

// Baseline: what every stack would cost without the pool (mmap + guard + munmap).
void BM_StackCreateDestroyNoPool(benchmark::State& state) {
  StackAllocator& allocator = StackAllocator::Default();
  for (auto _ : state) {
    Stack stack = allocator.Create();
    benchmark::DoNotOptimize(stack.base);
    allocator.Destroy(stack);
  }
}
BENCHMARK(BM_StackCreateDestroyNoPool);

}  // namespace
}  // namespace spindle::internal
