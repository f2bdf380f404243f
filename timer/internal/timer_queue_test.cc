// Copyright 2026 The Spindle Authors.

#include "timer/internal/timer_queue.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace spindle::internal {
namespace {

struct Recorded : TimerNode {
  int fired = 0;
};

void Record(TimerNode* node) { ++static_cast<Recorded*>(node)->fired; }

std::vector<TimerNode*> PopAll(TimerQueue& queue, std::int64_t now) {
  std::vector<TimerNode*> out;
  TimerNode* chunk[3];  // small chunks: PopDue() resumes where it stopped
  for (;;) {
    const std::size_t n = queue.PopDue(now, chunk, 3);
    out.insert(out.end(), chunk, chunk + n);
    if (n != 0) queue.DoneFiring();
    if (n < 3) return out;
  }
}

TEST(TimerQueueTest, PopsDueNodesEarliestFirstAndPublishesTheFront) {
  TimerQueue queue;
  EXPECT_EQ(queue.front_ns(), INT64_MAX);
  Recorded nodes[5];
  const std::int64_t expiries[5] = {50, 10, 40, 20, 30};
  for (int i = 0; i < 5; ++i) {
    nodes[i].expires_ns = expiries[i];
    nodes[i].fire = &Record;
    queue.Push(&nodes[i]);
  }
  EXPECT_EQ(queue.front_ns(), 10);
  EXPECT_EQ(queue.size(), 5u);
  const std::vector<TimerNode*> due = PopAll(queue, 30);
  ASSERT_EQ(due.size(), 3u);
  EXPECT_EQ(due[0]->expires_ns, 10);
  EXPECT_EQ(due[1]->expires_ns, 20);
  EXPECT_EQ(due[2]->expires_ns, 30);
  for (TimerNode* node : due) EXPECT_EQ(node->queue.load(), nullptr);
  EXPECT_EQ(queue.front_ns(), 40);  // raised to the exact front
  EXPECT_EQ(queue.size(), 2u);
}

TEST(TimerQueueTest, PushSaysWhenItLowersTheFront) {
  TimerQueue queue;
  Recorded a, b, c;
  a.expires_ns = 100;
  b.expires_ns = 200;
  c.expires_ns = 50;
  EXPECT_EQ(queue.Push(&a), TimerQueue::PushResult::kAddedEarliest);
  EXPECT_EQ(queue.Push(&b), TimerQueue::PushResult::kAdded);
  EXPECT_EQ(queue.Push(&c), TimerQueue::PushResult::kAddedEarliest);
  // Removing the front leaves the published front low (a lower bound): one early look.
  EXPECT_EQ(TimerQueue::Remove(&c), TimerQueue::RemoveResult::kRemoved);
  EXPECT_EQ(queue.front_ns(), 50);
  EXPECT_TRUE(PopAll(queue, 60).empty());
  EXPECT_EQ(queue.front_ns(), 100);
}

TEST(TimerQueueTest, RemoveTakesANodeOutAtOnceAndSaysWhatBecameOfIt) {
  TimerQueue queue;
  Recorded a, b;
  a.expires_ns = 10;
  b.expires_ns = 20;
  queue.Push(&a);
  queue.Push(&b);
  EXPECT_EQ(TimerQueue::Remove(&b), TimerQueue::RemoveResult::kRemoved);
  EXPECT_EQ(b.queue.load(), nullptr);
  EXPECT_EQ(TimerQueue::Remove(&b), TimerQueue::RemoveResult::kNotQueued);  // twice
  const std::vector<TimerNode*> due = PopAll(queue, 100);
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0], &a);
  // Popped to fire: a cancel comes too late.
  EXPECT_EQ(TimerQueue::Remove(&a), TimerQueue::RemoveResult::kNotQueued);
  // A node can be pushed again once out.
  EXPECT_EQ(queue.Push(&b), TimerQueue::PushResult::kAddedEarliest);
  EXPECT_EQ(PopAll(queue, 100).size(), 1u);
}

TEST(TimerQueueTest, TimersInExpiryOrderGoToTheRunTheOthersToTheHeap) {
  TimerQueue queue;
  Recorded nodes[6];
  const std::int64_t expiries[6] = {10, 20, 20, 15, 30, 5};
  for (int i = 0; i < 6; ++i) {
    nodes[i].expires_ns = expiries[i];
    queue.Push(&nodes[i]);
  }
  // 10, 20, 20 and 30 came in order; 15 and 5 did not.
  EXPECT_EQ(queue.run_size(), 4u);
  EXPECT_EQ(queue.size(), 6u);
  EXPECT_EQ(nodes[1].index, TimerNode::kInRun);
  EXPECT_NE(nodes[3].index, TimerNode::kInRun);
  EXPECT_EQ(queue.front_ns(), 5);
  // Out of the middle of the run, and of the heap.
  EXPECT_EQ(TimerQueue::Remove(&nodes[1]), TimerQueue::RemoveResult::kRemoved);
  EXPECT_EQ(TimerQueue::Remove(&nodes[3]), TimerQueue::RemoveResult::kRemoved);
  EXPECT_EQ(queue.run_size(), 3u);
  const std::vector<TimerNode*> due = PopAll(queue, 25);
  ASSERT_EQ(due.size(), 3u);
  EXPECT_EQ(due[0], &nodes[5]);
  EXPECT_EQ(due[1], &nodes[0]);
  EXPECT_EQ(due[2], &nodes[2]);
  EXPECT_EQ(queue.front_ns(), 30);
  EXPECT_EQ(queue.run_size(), 1u);
}

TEST(TimerQueueTest, DropAllClosesTheQueue) {
  TimerQueue queue;
  Recorded a, b;
  a.expires_ns = 10;
  b.expires_ns = 20;
  queue.Push(&a);
  std::vector<TimerNode*> dropped;
  queue.DropAll(&dropped);
  ASSERT_EQ(dropped.size(), 1u);
  EXPECT_EQ(dropped[0], &a);
  EXPECT_EQ(TimerQueue::Remove(&a), TimerQueue::RemoveResult::kDropped);
  EXPECT_EQ(queue.Push(&b), TimerQueue::PushResult::kClosed);
  EXPECT_EQ(TimerQueue::Remove(&b), TimerQueue::RemoveResult::kDropped);
  EXPECT_EQ(queue.front_ns(), INT64_MAX);
  EXPECT_TRUE(PopAll(queue, INT64_MAX).empty());
}

// Shutdown: DropAll() returns only once a firing popped before it is done, so no call
// of the queue's starts after it.
TEST(TimerQueueTest, DropAllWaitsForAFiringUnderWay) {
  TimerQueue queue;
  Recorded a;
  a.expires_ns = 10;
  a.fire = &Record;
  queue.Push(&a);
  TimerNode* popped = nullptr;
  ASSERT_EQ(queue.PopDue(10, &popped, 1), 1u);
  std::atomic<bool> returned{false};
  std::thread stopper([&] {
    std::vector<TimerNode*> dropped;
    queue.DropAll(&dropped);
    returned.store(true);
  });
  // Not a timing assertion: DropAll() must not return at all before DoneFiring(); a
  // while is given to a wrong one to show it.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(returned.load()) << "DropAll() returned while a popped node was firing";
  popped->fire(popped);
  queue.DoneFiring();
  stopper.join();
  EXPECT_TRUE(returned.load());
  EXPECT_EQ(a.fired, 1);
}

// The heap against an ordered multimap, through random pushes, removals anywhere and
// partial pops: every pop returns exactly the due nodes, earliest first.
TEST(TimerQueueTest, RandomOperationsMatchAnOrderedMap) {
  std::mt19937_64 random(20261127);
  constexpr int kNodes = 2000;
  auto nodes = std::make_unique<Recorded[]>(kNodes);
  std::multimap<std::int64_t, Recorded*> model;
  std::vector<int> free_nodes;
  for (int i = 0; i < kNodes; ++i) free_nodes.push_back(i);
  std::vector<Recorded*> queued;
  TimerQueue queue;
  std::int64_t now = 0;
  for (int step = 0; step < 200000; ++step) {
    const int op = static_cast<int>(random() % 10);
    if (op < 5 && !free_nodes.empty()) {
      const int i = free_nodes.back();
      free_nodes.pop_back();
      // Half in order (a run grows), half anywhere (the heap).
      nodes[i].expires_ns = random() % 2 == 0 ? now + 1000 + step / 4
                                              : now + static_cast<std::int64_t>(random() % 1000);
      queue.Push(&nodes[i]);
      model.emplace(nodes[i].expires_ns, &nodes[i]);
      queued.push_back(&nodes[i]);
    } else if (op < 8 && !queued.empty()) {
      const std::size_t pick = random() % queued.size();
      Recorded* node = queued[pick];
      queued[pick] = queued.back();
      queued.pop_back();
      ASSERT_EQ(TimerQueue::Remove(node), TimerQueue::RemoveResult::kRemoved);
      auto range = model.equal_range(node->expires_ns);
      auto it = std::find_if(range.first, range.second,
                             [node](const auto& entry) { return entry.second == node; });
      ASSERT_NE(it, range.second);
      model.erase(it);
      free_nodes.push_back(static_cast<int>(node - nodes.get()));
    } else {
      now += static_cast<std::int64_t>(random() % 200);
      const std::vector<TimerNode*> due = PopAll(queue, now);
      std::vector<std::int64_t> expected;
      while (!model.empty() && model.begin()->first <= now) {
        expected.push_back(model.begin()->first);
        model.erase(model.begin());
      }
      ASSERT_EQ(due.size(), expected.size()) << "step " << step;
      for (std::size_t k = 0; k < due.size(); ++k) {
        ASSERT_EQ(due[k]->expires_ns, expected[k]) << "step " << step;
        auto* node = static_cast<Recorded*>(due[k]);
        queued.erase(std::find(queued.begin(), queued.end(), node));
        free_nodes.push_back(static_cast<int>(node - nodes.get()));
      }
      ASSERT_EQ(queue.front_ns(), model.empty() ? INT64_MAX : model.begin()->first);
    }
    ASSERT_EQ(queue.size(), model.size());
  }
}

// Removals from other threads against the owner's pushes and pops: each node leaves
// exactly once, by a pop or by a removal, never both.
TEST(TimerQueueTest, RemovalsFromOtherThreadsRaceThePops) {
  constexpr int kNodes = 20000;
  auto nodes = std::make_unique<Recorded[]>(kNodes);
  TimerQueue queue;
  std::atomic<int> pushed{0};
  std::atomic<int> removed{0};
  std::vector<std::thread> removers;
  for (int t = 0; t < 2; ++t) {
    removers.emplace_back([&, t] {
      for (int i = t; i < kNodes; i += 2) {
        while (pushed.load(std::memory_order_acquire) <= i) std::this_thread::yield();
        if (TimerQueue::Remove(&nodes[i]) == TimerQueue::RemoveResult::kRemoved) {
          removed.fetch_add(1, std::memory_order_relaxed);
          nodes[i].fired += 100;  // marks a removal: a pop must never follow
        }
      }
    });
  }
  int popped = 0;
  TimerNode* chunk[16];
  for (int i = 0; i < kNodes; ++i) {
    nodes[i].expires_ns = i;
    nodes[i].fire = &Record;
    queue.Push(&nodes[i]);
    pushed.store(i + 1, std::memory_order_release);
    if (i % 7 == 0) {
      const std::size_t n = queue.PopDue(i, chunk, 16);
      for (std::size_t k = 0; k < n; ++k) chunk[k]->fire(chunk[k]);
      if (n != 0) queue.DoneFiring();
      popped += static_cast<int>(n);
    }
  }
  for (std::thread& t : removers) t.join();
  for (;;) {
    const std::size_t n = queue.PopDue(INT64_MAX, chunk, 16);
    for (std::size_t k = 0; k < n; ++k) chunk[k]->fire(chunk[k]);
    popped += static_cast<int>(n);
    if (n == 0) break;
    queue.DoneFiring();
  }
  EXPECT_EQ(popped + removed.load(), kNodes);
  for (int i = 0; i < kNodes; ++i) {
    ASSERT_TRUE(nodes[i].fired == 1 || nodes[i].fired == 100) << "node " << i << ": "
                                                               << nodes[i].fired;
  }
  EXPECT_EQ(queue.size(), 0u);
}

}  // namespace
}  // namespace spindle::internal
