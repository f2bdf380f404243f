// Copyright 2026 The Spindle Authors.

#include "runtime/internal/queues/wake_inbox.h"

#include <atomic>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace spindle::internal {
namespace {

TEST(WakeInboxTest, EmptyTakesNothing) {
  WakeInbox inbox;
  EXPECT_FALSE(inbox.MaybeNonEmpty());
  EXPECT_EQ(inbox.Take(), 0u);
  std::uintptr_t out[4];
  EXPECT_EQ(inbox.Grab(out, 4, /*half=*/true), 0u);
}

TEST(WakeInboxTest, TakesInPostOrder) {
  WakeInbox inbox;
  const std::uintptr_t entries[] = {8, 16, 24};
  inbox.PostMany(entries, 3);
  EXPECT_EQ(inbox.UnsafeSize(), 3u);
  EXPECT_EQ(inbox.Take(), 8u);
  inbox.PostMany(entries, 1);
  EXPECT_EQ(inbox.Take(), 16u);
  EXPECT_EQ(inbox.Take(), 24u);
  EXPECT_EQ(inbox.Take(), 8u);
  EXPECT_EQ(inbox.Take(), 0u);
  EXPECT_FALSE(inbox.MaybeNonEmpty());
}

TEST(WakeInboxTest, GrabTakesHalfRoundedUpOldestFirst) {
  WakeInbox inbox;
  const std::uintptr_t entries[] = {8, 16, 24, 32, 40};
  inbox.PostMany(entries, 5);
  std::uintptr_t out[8];
  ASSERT_EQ(inbox.Grab(out, 8, /*half=*/true), 3u);
  EXPECT_EQ(out[0], 8u);
  EXPECT_EQ(out[2], 24u);
  ASSERT_EQ(inbox.Grab(out, 1, /*half=*/false), 1u);
  EXPECT_EQ(out[0], 32u);
  EXPECT_EQ(inbox.Take(), 40u);
}

TEST(WakeInboxTest, NeverQuiteEmptyStaysSmall) {
  // A consumer that keeps one entry behind: the taken prefix is dropped on later posts.
  WakeInbox inbox;
  std::uintptr_t next = 8;
  for (int round = 0; round < 100000; ++round) {
    inbox.PostMany(&next, 1);
    next += 8;
    if (round > 0) {
      EXPECT_NE(inbox.Take(), 0u);
    }
  }
  EXPECT_EQ(inbox.UnsafeSize(), 1u);
}

TEST(WakeInboxTest, TortureNothingLostOrDuplicated) {
  // One producer posts in rounds; the owner takes one at a time and two thieves grab
  // halves, over many rounds; every entry comes out exactly once.
  constexpr std::uintptr_t kEntries = 200000;
  WakeInbox inbox;
  std::vector<std::atomic<int>> seen(kEntries);
  std::atomic<std::uintptr_t> taken{0};
  auto note = [&](std::uintptr_t entry) {
    seen[entry / 8 - 1].fetch_add(1, std::memory_order_relaxed);
    taken.fetch_add(1, std::memory_order_relaxed);
  };
  std::thread producer([&] {
    std::uintptr_t batch[7];
    for (std::uintptr_t next = 1; next <= kEntries;) {
      std::size_t n = 0;
      while (n < 7 && next <= kEntries) batch[n++] = 8 * next++;
      inbox.PostMany(batch, n);
    }
  });
  auto consumer = [&](bool owner) {
    std::uintptr_t out[16];
    while (taken.load(std::memory_order_relaxed) < kEntries) {
      if (owner) {
        if (std::uintptr_t entry = inbox.Take()) note(entry);
      } else {
        const std::size_t n = inbox.Grab(out, 16, /*half=*/true);
        for (std::size_t i = 0; i < n; ++i) note(out[i]);
      }
    }
  };
  std::thread owner(consumer, true), thief1(consumer, false), thief2(consumer, false);
  producer.join();
  owner.join();
  thief1.join();
  thief2.join();
  EXPECT_EQ(taken.load(), kEntries);
  for (std::uintptr_t i = 0; i < kEntries; ++i) ASSERT_EQ(seen[i].load(), 1) << i;
}

}  // namespace
}  // namespace spindle::internal
