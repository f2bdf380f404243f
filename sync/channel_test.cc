// Copyright 2026 The Spindle Authors.

#include "sync/channel.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "fiber/execution_context.h"
#include "fiber/fiber.h"
#include "fiber/this_fiber.h"
#include "gtest/gtest.h"
#include "runtime/internal/testing/runtime_testing.h"
#include "sync/latch.h"

namespace spindle {
namespace {

using namespace std::chrono_literals;
using testing::Scaled;
using testing::ScopedRuntime;
using testing::WaitFor;

// ---- One channel, one operation at a time.

TEST(ChannelTest, ABufferedChannelKeepsOrderAndSaysWhenFullOrEmpty) {
  Channel<int> ch(3);
  EXPECT_EQ(ch.capacity(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(ch.TrySend(int{i}), ChannelStatus::kOk);
  int extra = 7;
  EXPECT_EQ(ch.TrySend(std::move(extra)), ChannelStatus::kWouldBlock);
  EXPECT_EQ(ch.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    ReceiveResult<int> r = ch.TryReceive();
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(*r, i);
  }
  EXPECT_EQ(ch.TryReceive().status(), ChannelStatus::kWouldBlock);
}

TEST(ChannelTest, CloseDrainsTheBufferThenReportsClosedAndRefusesSends) {
  Channel<std::unique_ptr<int>> ch(4);
  ASSERT_EQ(ch.Send(std::make_unique<int>(1)), ChannelStatus::kOk);
  ASSERT_EQ(ch.Send(std::make_unique<int>(2)), ChannelStatus::kOk);
  EXPECT_TRUE(ch.Close());
  EXPECT_FALSE(ch.Close());
  EXPECT_TRUE(ch.closed());
  auto late = std::make_unique<int>(3);
  EXPECT_EQ(ch.Send(std::move(late)), ChannelStatus::kClosed);
  ASSERT_NE(late, nullptr) << "a refused send took the value";
  EXPECT_EQ(*late, 3);
  std::vector<int> got;
  for (std::unique_ptr<int>& v : ch) got.push_back(*v);
  EXPECT_EQ(got, (std::vector<int>{1, 2}));
  EXPECT_EQ(ch.Receive().status(), ChannelStatus::kClosed);
  EXPECT_EQ(ch.TryReceive().status(), ChannelStatus::kClosed);
}

TEST(ChannelTest, ValuesLeftInTheBufferAreDestroyedWithTheChannel) {
  auto shared = std::make_shared<int>(5);
  {
    Channel<std::shared_ptr<int>> ch(2);
    ch.Send(shared);
    ch.Send(shared);
    EXPECT_EQ(shared.use_count(), 3);
  }
  EXPECT_EQ(shared.use_count(), 1);
}

TEST(ChannelTest, DeadlinesPassOnAnEmptyOrFullChannel) {
  ScopedRuntime runtime(2);
  Fiber([] {
    Channel<int> ch(1);
    EXPECT_EQ(ch.ReceiveFor(1ms).status(), ChannelStatus::kTimedOut);
    EXPECT_EQ(ch.SendFor(1, 1ms), ChannelStatus::kOk);
    int v = 2;
    EXPECT_EQ(ch.SendFor(std::move(v), 1ms), ChannelStatus::kTimedOut);
    EXPECT_EQ(ch.SendUntil(std::move(v), std::chrono::steady_clock::now() - 1s),
              ChannelStatus::kTimedOut);
    EXPECT_EQ(*ch.ReceiveFor(1h), 1);
  }).join();
  // A plain thread's deadline too.
  Channel<int> ch;
  EXPECT_EQ(ch.ReceiveFor(1ms).status(), ChannelStatus::kTimedOut);
  EXPECT_EQ(ch.SendFor(1, 1ms), ChannelStatus::kTimedOut);
}

TEST(ChannelTest, ARendezvousSendWaitsForItsReceiver) {
  ScopedRuntime runtime(2);
  Channel<std::string> ch;
  std::atomic<bool> sent{false};
  Fiber sender([&] {
    EXPECT_EQ(ch.Send(std::string("hello")), ChannelStatus::kOk);
    sent = true;
  });
  ASSERT_TRUE(testing::WaitUntilWaitingIn(sender.get_id(), internal::WaitKind::kChannel));
  EXPECT_FALSE(sent.load());
  EXPECT_EQ(*ch.Receive(), "hello");  // a plain thread receives from a fiber
  sender.join();
  EXPECT_TRUE(sent.load());
}

TEST(ChannelTest, CloseWakesBlockedSendersAndReceiversAndKeepsTheSendersValues) {
  ScopedRuntime runtime(2);
  Channel<std::unique_ptr<int>> full(1), empty(1);
  ASSERT_EQ(full.Send(std::make_unique<int>(0)), ChannelStatus::kOk);
  Fiber sender([&] {
    auto v = std::make_unique<int>(1);
    EXPECT_EQ(full.Send(std::move(v)), ChannelStatus::kClosed);
    EXPECT_NE(v, nullptr);
  });
  Fiber receiver([&] { EXPECT_EQ(empty.Receive().status(), ChannelStatus::kClosed); });
  ASSERT_TRUE(testing::WaitUntilWaitingIn(sender.get_id(), internal::WaitKind::kChannel));
  ASSERT_TRUE(testing::WaitUntilWaitingIn(receiver.get_id(), internal::WaitKind::kChannel));
  full.Close();
  empty.Close();
  sender.join();
  receiver.join();
  EXPECT_EQ(**full.Receive(), 0);  // the buffered value stays for the receivers
}

TEST(ChannelTest, CancellingTheContextEndsAnInterruptibleWaitOnly) {
  ScopedRuntime runtime(2);
  Channel<int> ch;
  auto context = ExecutionContext::Create();
  std::atomic<int> stage{0};
  Fiber waiter([&] {
    ScopedExecutionContext scope(context);
    EXPECT_EQ(ch.ReceiveUntil(std::chrono::steady_clock::time_point::max()).status(),
              ChannelStatus::kCancelled);
    int v = 1;
    EXPECT_EQ(ch.SendFor(std::move(v), 1h), ChannelStatus::kCancelled);
    stage = 1;
    EXPECT_EQ(*ch.Receive(), 9);  // the plain form is not interruptible
  });
  ASSERT_TRUE(testing::WaitUntilWaitingIn(waiter.get_id(), internal::WaitKind::kChannel));
  context->Cancel();
  ASSERT_TRUE(WaitFor([&] { return stage.load() == 1; }));
  ASSERT_TRUE(testing::WaitUntilWaitingIn(waiter.get_id(), internal::WaitKind::kChannel));
  EXPECT_EQ(ch.Send(9), ChannelStatus::kOk);
  waiter.join();
}

// ---- Select

TEST(SelectTest, TakesAReadyCaseWithoutWaitingAndReportsWhichOne) {
  Channel<int> a(1), b(1);
  Channel<std::string> c(1);
  ASSERT_EQ(b.Send(5), ChannelStatus::kOk);
  ReceiveResult<int> ra, rb;
  std::string s = "out";
  SelectResult r = TrySelect(ReceiveCase(a, ra), ReceiveCase(b, rb), SendCase(c, s));
  ASSERT_GE(r.index, 1);  // b is ready to receive from, c to send to; a is not
  if (r.index == 1) {
    EXPECT_EQ(*rb, 5);
    EXPECT_EQ(s, "out");
  } else {
    EXPECT_EQ(*c.TryReceive(), "out");
    EXPECT_FALSE(rb.ok());
  }
  EXPECT_FALSE(ra.ok());
  // Nothing ready: the default.
  Channel<int> d;
  ReceiveResult<int> rd;
  r = TrySelect(ReceiveCase(d, rd));
  EXPECT_EQ(r.index, -1);
  EXPECT_EQ(r.status, ChannelStatus::kWouldBlock);
}

TEST(SelectTest, AClosedChannelIsReadyAndANullOneNever) {
  Channel<int> open_one, closed_one;
  closed_one.Close();
  ReceiveResult<int> x, y;
  int v = 1;
  SelectResult r = Select(ReceiveCase(open_one, x), ReceiveCase<int>(nullptr, y),
                          ReceiveCase(closed_one, y));
  EXPECT_EQ(r.index, 2);
  EXPECT_EQ(r.status, ChannelStatus::kClosed);
  EXPECT_EQ(y.status(), ChannelStatus::kClosed);
  r = Select(SendCase(closed_one, v));
  EXPECT_EQ(r.status, ChannelStatus::kClosed);
  EXPECT_EQ(v, 1);
  r = SelectFor(1ms, ReceiveCase<int>(nullptr, x));
  EXPECT_EQ(r.status, ChannelStatus::kTimedOut);
}

TEST(SelectTest, ABlockedSelectTakesTheFirstCaseToBeReadyAndLeavesNothingOnTheOthers) {
  ScopedRuntime runtime(2);
  for (int round = 0; round < 20; ++round) {
    Channel<int> a, b;
    Channel<int> out;
    ReceiveResult<int> ra, rb;
    int v = 42;
    SelectResult result{};
    Fiber selector(
        [&] { result = Select(ReceiveCase(a, ra), ReceiveCase(b, rb), SendCase(out, v)); });
    ASSERT_TRUE(testing::WaitUntilWaitingIn(selector.get_id(), internal::WaitKind::kChannel));
    if (round % 2 == 0) {
      ASSERT_EQ(b.Send(round), ChannelStatus::kOk);
    } else {
      ASSERT_EQ(*out.Receive(), 42);
    }
    selector.join();
    EXPECT_EQ(result.index, round % 2 == 0 ? 1 : 2);
    EXPECT_EQ(result.status, ChannelStatus::kOk);
    if (round % 2 == 0) {
      EXPECT_EQ(*rb, round);
    }
    EXPECT_FALSE(ra.ok());
    // The losing cases left nothing registered: a rendezvous finds no partner, and the
    // channels' destructors find no waiter.
    EXPECT_EQ(a.TrySend(1), ChannelStatus::kWouldBlock);
    EXPECT_EQ(out.TryReceive().status(), ChannelStatus::kWouldBlock);
  }
}

TEST(SelectTest, CancellationEndsASelectUntil) {
  ScopedRuntime runtime(2);
  Channel<int> a, b;
  auto context = ExecutionContext::Create();
  SelectResult result{};
  Fiber selector([&] {
    ScopedExecutionContext scope(context);
    ReceiveResult<int> ra, rb;
    result = SelectUntil(std::chrono::steady_clock::time_point::max(), ReceiveCase(a, ra),
                         ReceiveCase(b, rb));
  });
  ASSERT_TRUE(testing::WaitUntilWaitingIn(selector.get_id(), internal::WaitKind::kChannel));
  context->Cancel();
  selector.join();
  EXPECT_EQ(result.index, -1);
  EXPECT_EQ(result.status, ChannelStatus::kCancelled);
  EXPECT_EQ(a.TrySend(1), ChannelStatus::kWouldBlock);
}

// Two cases always ready: each is taken 40-60% of the time (Go's select is uniform).
TEST(SelectTest, AmongReadyCasesTheChoiceIsFair) {
  Channel<int> a(1), b(1);
  constexpr int kRounds = 10000;
  int taken[2] = {0, 0};
  for (int i = 0; i < kRounds; ++i) {
    if (a.size() == 0) {
      ASSERT_EQ(a.TrySend(1), ChannelStatus::kOk);
    }
    if (b.size() == 0) {
      ASSERT_EQ(b.TrySend(2), ChannelStatus::kOk);
    }
    ReceiveResult<int> ra, rb;
    const SelectResult r = Select(ReceiveCase(a, ra), ReceiveCase(b, rb));
    ASSERT_TRUE(r.index == 0 || r.index == 1);
    ++taken[r.index];
  }
  EXPECT_GE(taken[0], kRounds * 4 / 10) << taken[0] << " vs " << taken[1];
  EXPECT_GE(taken[1], kRounds * 4 / 10) << taken[0] << " vs " << taken[1];
}

// ---- Hammers, over the worker counts

class ChannelHammerTest : public ::testing::TestWithParam<std::size_t> {};
INSTANTIATE_TEST_SUITE_P(Workers, ChannelHammerTest, testing::WorkerCounts(),
                         testing::WorkerCountName);

// How one party of the hammer sends or receives: each operation picks a form at random.
enum class Form { kPlain, kTry, kTimed, kCancellable };

Form PickForm(std::mt19937& random) { return static_cast<Form>(random() % 4); }

// Senders and receivers (fibers and a plain thread of each) on one channel of a given
// capacity, every operation in a random form: the plain one, the Try one, a timed one
// with a deadline of 0-50 us, or an interruptible one in an execution context that a
// canceller cancels at a random moment. A closer closes the channel at a random
// moment. Every value whose send reported kOk is received exactly once, no other value
// is received, and every party ends (a lost wake-up is a timeout here).
std::size_t RunHammer(std::size_t capacity, int round) {
  constexpr int kSenders = 4, kReceivers = 4;
  const int per_sender = static_cast<int>(Scaled(2000));
  Channel<std::uint64_t> ch(capacity);
  std::vector<std::vector<std::uint64_t>> sent(kSenders + 1), received(kReceivers + 1);
  std::vector<std::shared_ptr<ExecutionContext>> contexts;
  for (int i = 0; i < kSenders + kReceivers + 2; ++i) {
    contexts.push_back(ExecutionContext::Create());
  }
  std::atomic<int> done{0};
  std::atomic<int> attempts{0};  // send operations begun, the clock of the cancels and the close
  auto sender = [&](int s) {
    std::mt19937 random(round * 131 + s);
    ScopedExecutionContext scope(contexts[s]);
    for (int i = 0; i < per_sender; ++i) {
      attempts.fetch_add(1, std::memory_order_relaxed);
      std::uint64_t v = (std::uint64_t{static_cast<unsigned>(s)} << 32) | i;
      ChannelStatus status;
      switch (PickForm(random)) {
        case Form::kPlain:
          status = ch.Send(std::move(v));
          break;
        case Form::kTry:
          status = ch.TrySend(std::move(v));
          break;
        case Form::kTimed:
          status = ch.SendFor(std::move(v), std::chrono::microseconds(random() % 50));
          break;
        default:
          status = ch.SendUntil(std::move(v), std::chrono::steady_clock::time_point::max());
          break;
      }
      if (status == ChannelStatus::kOk) sent[s].push_back(v);
      if (status == ChannelStatus::kClosed) break;
    }
    done.fetch_add(1);
  };
  auto receiver = [&](int r) {
    std::mt19937 random(round * 977 + r);
    ScopedExecutionContext scope(contexts[kSenders + 1 + r]);
    for (;;) {
      ReceiveResult<std::uint64_t> got;
      switch (PickForm(random)) {
        case Form::kPlain:
          got = ch.Receive();
          break;
        case Form::kTry:
          got = ch.TryReceive();
          break;
        case Form::kTimed:
          got = ch.ReceiveFor(std::chrono::microseconds(random() % 50));
          break;
        default:
          got = ch.ReceiveUntil(std::chrono::steady_clock::time_point::max());
          break;
      }
      if (got.ok()) received[r].push_back(*got);
      if (got.status() == ChannelStatus::kClosed) break;
    }
    done.fetch_add(1);
  };
  std::vector<Fiber> fibers;
  for (int s = 0; s < kSenders; ++s) fibers.emplace_back([&, s] { sender(s); });
  for (int r = 0; r < kReceivers; ++r) fibers.emplace_back([&, r] { receiver(r); });
  std::thread thread_sender([&] { sender(kSenders); });
  std::thread thread_receiver([&] { receiver(kReceivers); });
  fibers.emplace_back([&] {
    // Cancels half the parties' contexts, each once the senders have begun a random
    // number of sends, and closes the channel at another such moment (or once every
    // sender has ended).
    std::mt19937 random(round);
    const int total = (kSenders + 1) * per_sender;
    std::vector<std::pair<int, int>> events;  // (attempts, context to cancel or -1: close)
    for (std::size_t i = 0; i < contexts.size(); ++i) {
      if (random() % 2 == 0) events.emplace_back(random() % total, static_cast<int>(i));
    }
    events.emplace_back(random() % total, -1);
    std::sort(events.begin(), events.end());
    for (const auto& [when, what] : events) {
      while (attempts.load(std::memory_order_relaxed) < when && done.load() < kSenders + 1) {
        this_fiber::Yield();
      }
      if (what < 0) {
        ch.Close();
        break;
      }
      contexts[what]->Cancel();
    }
  });
  EXPECT_TRUE(WaitFor([&] { return done.load() == kSenders + kReceivers + 2; }))
      << "a sender or receiver never ended: capacity " << capacity << ", round " << round;
  for (Fiber& f : fibers) f.join();
  thread_sender.join();
  thread_receiver.join();
  std::vector<std::uint64_t> all_sent, all_received;
  for (auto& v : sent) all_sent.insert(all_sent.end(), v.begin(), v.end());
  for (auto& v : received) all_received.insert(all_received.end(), v.begin(), v.end());
  std::sort(all_sent.begin(), all_sent.end());
  std::sort(all_received.begin(), all_received.end());
  EXPECT_EQ(all_received.size(), all_sent.size())
      << "capacity " << capacity << ", round " << round << ": values lost or duplicated";
  EXPECT_TRUE(all_received == all_sent) << "capacity " << capacity << ", round " << round;
  // Each party received its values in the order each sender sent them.
  for (auto& got : received) {
    std::vector<std::uint32_t> last(kSenders + 1, 0);
    std::vector<bool> seen(kSenders + 1, false);
    for (std::uint64_t v : got) {
      const auto s = static_cast<std::size_t>(v >> 32);
      const auto i = static_cast<std::uint32_t>(v);
      EXPECT_TRUE(!seen[s] || i > last[s]) << "out of order from sender " << s;
      seen[s] = true;
      last[s] = i;
    }
  }
  return all_sent.size();
}

TEST_P(ChannelHammerTest, EveryValueSentIsReceivedOnceUnderClosesTimeoutsAndCancels) {
  ScopedRuntime runtime(GetParam());
  std::size_t delivered[3] = {0, 0, 0};
  for (int round = 0; round < 20; ++round) {
    delivered[0] += RunHammer(0, round);
    delivered[1] += RunHammer(1, round);
    delivered[2] += RunHammer(16, round);
  }
  // The hammer moved values through each kind of channel (a close at the very start of
  // every round would test nothing).
  for (std::size_t n : delivered) EXPECT_GT(n, 0u);
  std::printf("values delivered at capacity 0, 1, 16: %zu, %zu, %zu\n", delivered[0],
              delivered[1], delivered[2]);
}

// Selectors each receive from two channels and forward what they get to a third, with
// a deadline; producers feed the two, a collector drains the third. Every value sent
// arrives once, and nothing stays registered (the channels' destructors check).
TEST_P(ChannelHammerTest, SelectorsLoseNoValue) {
  ScopedRuntime runtime(GetParam());
  const int per_producer = static_cast<int>(Scaled(5000));
  constexpr int kSelectors = 3;
  for (std::size_t capacity : {std::size_t{0}, std::size_t{8}}) {
    Channel<int> a(capacity), b(capacity), out(capacity);
    std::atomic<int> selectors_left{kSelectors};
    std::atomic<long> timeouts{0};
    std::vector<Fiber> fibers;
    for (Channel<int>* source : {&a, &b}) {
      fibers.emplace_back([&, source] {
        for (int i = 1; i <= per_producer; ++i) ASSERT_EQ(source->Send(i), ChannelStatus::kOk);
        source->Close();
      });
    }
    for (int s = 0; s < kSelectors; ++s) {
      fibers.emplace_back([&] {
        Channel<int>* x = &a;
        Channel<int>* y = &b;
        while (x != nullptr || y != nullptr) {
          ReceiveResult<int> rx, ry;
          const SelectResult r = SelectFor(200us, ReceiveCase(x, rx), ReceiveCase(y, ry));
          if (r.index < 0) {
            ASSERT_EQ(r.status, ChannelStatus::kTimedOut);
            ++timeouts;
            continue;
          }
          ReceiveResult<int>& got = r.index == 0 ? rx : ry;
          if (!got.ok()) {
            ASSERT_EQ(got.status(), ChannelStatus::kClosed);
            (r.index == 0 ? x : y) = nullptr;
            continue;
          }
          ASSERT_EQ(out.Send(*got), ChannelStatus::kOk);
        }
        if (--selectors_left == 0) out.Close();
      });
    }
    long sum = 0, count = 0;
    for (int v : out) {
      sum += v;
      ++count;
    }
    for (Fiber& f : fibers) f.join();
    EXPECT_EQ(count, 2 * per_producer) << "capacity " << capacity;
    EXPECT_EQ(sum, 2L * per_producer * (per_producer + 1) / 2) << "capacity " << capacity;
  }
}

}  // namespace
}  // namespace spindle
