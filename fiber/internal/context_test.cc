// Copyright 2026 The Spindle Authors.

#include "fiber/internal/context.h"

#include <xmmintrin.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "fiber/internal/fiber_entity.h"
#include "fiber/internal/fiber_entity_testing.h"
#include "fiber/internal/sanitizers.h"
#include "gtest/gtest.h"

namespace spindle::internal {
namespace {

constexpr int kContexts = 16;
constexpr int kRounds = 1000;

// Folds one hop into a checksum that depends on the order of the hops.
std::uint64_t Fold(std::uint64_t checksum, int index) {
  return checksum * 1000003 + static_cast<std::uint64_t>(index) + 1;
}

std::uint64_t ExpectedRingChecksum() {
  std::uint64_t checksum = 0;
  for (int round = 0; round < kRounds; ++round) {
    for (int i = 0; i < kContexts; ++i) checksum = Fold(checksum, i);
  }
  return checksum;
}

// A ring of raw contexts: context i folds its index into a checksum and jumps to
// context i+1, the last one back to the test's own context, kRounds times. Raw switches
// carry no sanitizer annotations, so this runs in the plain build only; the same ring
// over FiberEntity below runs under every sanitizer.
struct RawRing {
  std::vector<std::unique_ptr<char[]>> stacks;
  void* saved[kContexts + 1] = {};  // [kContexts] is the test's context
  std::uint64_t checksum = 0;
  bool argument_mismatch = false;
};
RawRing* g_raw = nullptr;

void RawEntry(void* arg) {
  const int index = static_cast<int>(reinterpret_cast<std::intptr_t>(arg));
  for (int round = 0; round < kRounds; ++round) {
    g_raw->checksum = Fold(g_raw->checksum, index);
    const int next = index + 1;
    // Every jump passes the index of the context it resumes, which checks that the
    // value reaches both first entries (as `arg`) and resumptions (as the result).
    void* resumed_with = spindle_jump_context(&g_raw->saved[index], g_raw->saved[next],
                                              reinterpret_cast<void*>(std::intptr_t{next}));
    if (reinterpret_cast<std::intptr_t>(resumed_with) != index) {
      g_raw->argument_mismatch = true;
    }
  }
  spindle_jump_context(&g_raw->saved[index], g_raw->saved[kContexts], nullptr);
  std::abort();  // never resumed
}

TEST(ContextTest, RawRingChecksum) {
  if (kUnderSanitizer) GTEST_SKIP() << "raw switches are not annotated for sanitizers";
  RawRing ring;
  g_raw = &ring;
  constexpr std::size_t kStackSize = 64 * 1024;
  for (int i = 0; i < kContexts; ++i) {
    ring.stacks.emplace_back(new char[kStackSize]);
    ring.saved[i] =
        spindle_make_context(ring.stacks.back().get() + kStackSize, kStackSize, &RawEntry);
  }
  for (int round = 0; round < kRounds; ++round) {
    spindle_jump_context(&ring.saved[kContexts], ring.saved[0], nullptr);
  }
  for (int i = 0; i < kContexts; ++i) {  // let each context leave its loop
    spindle_jump_context(&ring.saved[kContexts], ring.saved[i],
                         reinterpret_cast<void*>(std::intptr_t{i}));
  }
  EXPECT_FALSE(ring.argument_mismatch);
  EXPECT_EQ(ring.checksum, ExpectedRingChecksum());
  g_raw = nullptr;
}

void AlignmentEntry(void* arg) {
  // The ABI promises a 16-byte aligned stack at function entry; SSE spills rely on it.
  alignas(16) volatile char probe[16];
  auto** saved = static_cast<void**>(arg);
  const bool aligned = (reinterpret_cast<std::uintptr_t>(&probe[0]) % 16) == 0;
  spindle_jump_context(&saved[1], saved[0], reinterpret_cast<void*>(aligned ? 1 : 2));
  std::abort();
}

TEST(ContextTest, NewContextStackIsAligned) {
  if (kUnderSanitizer) GTEST_SKIP() << "raw switches are not annotated for sanitizers";
  for (int misalign = 0; misalign < 16; ++misalign) {
    std::unique_ptr<char[]> stack(new char[32 * 1024 + 16]);
    void* saved[2] = {};
    saved[1] = spindle_make_context(stack.get() + 32 * 1024 + misalign, 32 * 1024,
                                    &AlignmentEntry);
    void* result = spindle_jump_context(&saved[0], saved[1], saved);
    EXPECT_EQ(reinterpret_cast<std::intptr_t>(result), 1) << "misalign " << misalign;
  }
}

TEST(ContextTest, FloatingPointControlStateIsPerContext) {
  // A fiber that changes the rounding mode must not leak it to the thread it runs on.
  const unsigned original = _mm_getcsr();
  unsigned seen_in_fiber = 0;
  FiberEntity* fiber = testing::NewFiber([&] {
    _mm_setcsr((original & ~0x6000u) | 0x6000u);  // round toward zero
    seen_in_fiber = _mm_getcsr();
  });
  testing::RunFromMaster(fiber);
  EXPECT_EQ(seen_in_fiber & 0x6000u, 0x6000u);
  EXPECT_EQ(_mm_getcsr(), original);
}

// The same ring over FiberEntity: every switch goes through the annotated path, so this
// one runs in the asan and tsan lanes too.
TEST(ContextTest, FiberEntityRingChecksum) {
  std::vector<FiberEntity*> ring(kContexts);
  std::uint64_t checksum = 0;
  for (int i = 0; i < kContexts; ++i) {
    ring[i] = testing::NewFiber([&, i] {
      for (int round = 0; round < kRounds; ++round) {
        checksum = Fold(checksum, i);
        FiberEntity* next = i + 1 == kContexts ? GetMasterFiberEntity() : ring[i + 1];
        testing::SwitchToReady(ring[i], next);
      }
    });
  }
  // Each round starts at the first fiber and ends back here; a final pass lets every
  // fiber leave its loop and finish (its stack goes back to this thread's cache).
  for (int round = 0; round < kRounds; ++round) testing::RunFromMaster(ring[0]);
  for (int i = 0; i < kContexts; ++i) testing::RunFromMaster(ring[i]);
  EXPECT_EQ(checksum, ExpectedRingChecksum());
}

}  // namespace
}  // namespace spindle::internal
