// Copyright 2026 The Spindle Authors.
//
// The debugger's view (debug_info.h) read back the way tools/gdb/spindle.py reads it:
// raw memory at the offsets the descriptor gives, never the C++ types.

#include "fiber/internal/debug_info.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <string>

#include "fiber/internal/fiber_entity.h"
#include "fiber/internal/fiber_entity_testing.h"
#include "fiber/internal/stack_allocator.h"
#include "gtest/gtest.h"

namespace spindle::internal {
namespace {

template <class T>
T ReadAt(const void* base, std::uint64_t offset) {
  T value;
  std::memcpy(&value, static_cast<const char*>(base) + offset, sizeof(value));
  return value;
}

std::string Lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// Whether some region of the registry's mirror holds a stack based at `base`.
bool MirrorHoldsStack(const char* base) {
  const SpindleDebugStacks& stacks = *spindle_debug_info.stacks;
  const auto address = reinterpret_cast<std::uint64_t>(base);
  for (std::uint64_t i = 0; i < stacks.count; ++i) {
    const SpindleDebugStackRegion& region = stacks.regions[i];
    for (std::uint64_t k = 0; k < region.count; ++k) {
      if (region.first_base + k * region.stride == address) return true;
    }
  }
  return false;
}

TEST(DebugInfoTest, HeaderAndNamesAgreeWithTheCode) {
  const SpindleDebugInfo& info = spindle_debug_info;
  EXPECT_STREQ(info.magic, "spindle-debug");
  EXPECT_EQ(info.version, 1u);
  EXPECT_EQ(info.size, sizeof(SpindleDebugInfo));
  EXPECT_EQ(sizeof(SpindleDebugInfo) % 8, 0u);
  EXPECT_EQ(info.control_block_size, FiberControlBlockSize());
  EXPECT_EQ(info.entity_magic, kFiberEntityMagic);
  EXPECT_EQ(info.stack_header_size, kStackHeaderSize);
  ASSERT_EQ(info.state_count, 4u);
  for (std::uint64_t i = 0; i < info.state_count; ++i) {
    EXPECT_EQ(info.state_names[i], Lower(FiberStateName(static_cast<FiberState>(i))));
  }
  ASSERT_EQ(info.wait_kind_count, static_cast<std::uint64_t>(WaitKind::kOther) + 1);
  for (std::uint64_t i = 0; i < info.wait_kind_count; ++i) {
    EXPECT_STREQ(info.wait_kind_names[i], WaitKindName(static_cast<WaitKind>(i)));
  }
}

TEST(DebugInfoTest, AFiberReadThroughTheOffsetsIsTheFiber) {
  const SpindleDebugInfo& info = spindle_debug_info;
  FiberEntity* fiber = testing::NewFiber([] {});
  int object = 0;
  fiber->wait_kind = WaitKind::kChannel;
  fiber->wait_object = &object;
  fiber->scheduling_worker = 7;
  const Stack& stack = fiber->stack();
  const char* block = stack.top() - info.control_block_size;
  EXPECT_EQ(block, reinterpret_cast<const char*>(fiber));
  EXPECT_EQ(ReadAt<std::uint64_t>(block, info.magic_offset), kFiberEntityMagic);
  EXPECT_EQ(ReadAt<std::uint64_t>(block, info.id_offset), fiber->id);
  EXPECT_EQ(ReadAt<std::uint8_t>(block, info.state_offset),
            static_cast<std::uint8_t>(FiberState::kReady));
  EXPECT_EQ(ReadAt<std::uint8_t>(block, info.wait_kind_offset),
            static_cast<std::uint8_t>(WaitKind::kChannel));
  EXPECT_EQ(ReadAt<const void*>(block, info.wait_object_offset), &object);
  EXPECT_EQ(ReadAt<std::uint32_t>(block, info.worker_offset), 7u);
  EXPECT_EQ(ReadAt<const char*>(block, info.stack_base_offset), stack.base);
  EXPECT_EQ(ReadAt<std::size_t>(block, info.stack_size_offset), stack.size);
  EXPECT_EQ(ReadAt<const void*>(block, info.saved_sp_offset), fiber->saved_stack_pointer());
  EXPECT_EQ(ReadAt<std::uint32_t>(stack.top() - info.stack_header_size, 0), info.stack_live);
  // A new context: its resume address is the trampoline, its frame pointer 0, and the
  // stack pointer it resumes with lies inside the stack.
  const char* saved = static_cast<const char*>(fiber->saved_stack_pointer());
  EXPECT_EQ(ReadAt<std::uint64_t>(saved, info.saved_fp_offset), 0u);
  EXPECT_NE(ReadAt<std::uint64_t>(saved, info.saved_pc_offset), 0u);
  EXPECT_TRUE(MirrorHoldsStack(stack.base));
  StackCache::ForThisThread().Put(DestroyFiberEntity(fiber));
}

TEST(DebugInfoTest, TheMirrorFollowsTheRegistry) {
  const SpindleDebugStacks& mirror = *spindle_debug_info.stacks;
  StackAllocatorOptions options;
  options.stack_size = 64 * 1024;
  options.guard_regions = false;  // mmapped stacks: one region each
  options.release_delay_ms = 0;
  std::vector<Stack> stacks;
  {
    StackAllocator allocator(options);
    const std::uint64_t before = mirror.count;
    for (int i = 0; i < 40; ++i) stacks.push_back(allocator.Create());  // the array grows
    EXPECT_GE(mirror.count, before + 1);
    for (const Stack& stack : stacks) EXPECT_TRUE(MirrorHoldsStack(stack.base));
    // Destroyed in an order that moves entries around.
    for (std::size_t i = 0; i < stacks.size(); i += 2) allocator.Destroy(stacks[i]);
    for (std::size_t i = 0; i < stacks.size(); ++i) {
      EXPECT_EQ(MirrorHoldsStack(stacks[i].base), i % 2 == 1) << i;
    }
    for (std::size_t i = 1; i < stacks.size(); i += 2) allocator.Destroy(stacks[i]);
    for (const Stack& stack : stacks) EXPECT_FALSE(MirrorHoldsStack(stack.base));
  }
}

TEST(DebugInfoTest, RuntimeFieldsStartUnknown) {
  // Written by a runtime's start (runtime/internal/runtime_impl.cc); this test starts
  // none. The gdb commands treat 0 as "not known".
  EXPECT_EQ(spindle_debug_info.group_index_offset_plus_one, 0u);
  PublishRuntimeDebugInfo(40);
  EXPECT_EQ(spindle_debug_info.group_index_offset_plus_one, 41u);
  EXPECT_GT(spindle_debug_info.clock_picos_per_tick, 0u);
  EXPECT_GT(spindle_debug_info.clock_realtime_ns, spindle_debug_info.clock_monotonic_ns / 2);
}

}  // namespace
}  // namespace spindle::internal
