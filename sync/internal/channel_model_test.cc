// Copyright 2026 The Spindle Authors.
//
// Models of the channel protocol (channel_core.cc, the real source built against
// Relacy, over the real TimedWaiter, StopState and TimerQueue: atomic.h; the channel's
// Spinlock is Relacy's mutex). The parties are plain threads, whose waits park on the
// TimedWaiter's futex word and time out on the model's clock (a timed wait that times
// out moves the clock to its deadline).
//
//   - A close racing a send and a receive: the receiver gets the value exactly when the
//     sender was told it was sent; no party stays blocked (Relacy: deadlock).
//   - A timed-out or cancelled waiter racing the hand-off of a value: the value moves
//     exactly when both sides say it did, and otherwise stays with its sender.
//   - A Select over two channels against two senders and a cancellation: exactly one
//     case happens or none (cancelled), the value of the case that did not happen stays
//     in its channel, and nothing stays registered (the channels' destructors check:
//     a registered entry left behind stops the process).
// A value is a Box whose move empties its source, so a value moved twice, or lost, or
// moved although the operation reports it did not happen, fails a check.

#include <cstdlib>

#include "fiber/internal/atomic.h"
#include "fiber/internal/fiber_entity.h"
#include "fiber/internal/model_testing.h"
#include "gtest/gtest.h"
#include "runtime/internal/base/ready_batch.h"
#include "sync/internal/channel_core.h"
#include "sync/internal/stop_state.h"
#include "timer/internal/timer_worker.h"

namespace spindle::internal {

// ---- The scheduler and timer hooks a fiber's wait would call: a model of plain
// threads never calls them (GetCurrentFiberEntity() is null), so each fails the model.

FiberEntity* GetCurrentFiberEntity() { return nullptr; }
std::uint64_t CurrentLockOwnerId() { return kLockOwnerThread; }  // the trace's (unused)
FiberEntity::~FiberEntity() = default;
void FiberEntity::FailSetState(FiberState) const {
  RL_ASSERT(!"a fiber's state changed in a model of plain threads");
  std::abort();
}
std::uint64_t FiberEntity::StateClockNow() { return 0; }
void ParkFiber(FiberEntity*, std::unique_lock<Spinlock>) {
  RL_ASSERT(!"ParkFiber in a model of plain threads");
}
void YieldFiber(FiberEntity*) { RL_ASSERT(!"YieldFiber in a model of plain threads"); }
void QueueReadyFiber(FiberEntity*) { RL_ASSERT(!"QueueReadyFiber in a model of plain threads"); }
void QueueReadyFibers(SchedulingGroup*, FiberEntity* const*, std::size_t, bool) {
  RL_ASSERT(!"a ReadyBatch collected a fiber in a model of plain threads");
}
void ArmTimerNodeOnThisWorker(TimerNode*) {
  RL_ASSERT(!"a fiber's timer in a model of plain threads");
}

namespace {

using testing::ExpectModelHolds;

// A value that knows whether it was moved from (-1).
struct Box {
  int value = 0;
  explicit Box(int v) : value(v) {}
  Box(Box&& other) noexcept : value(other.value) { other.value = -1; }
};

const ChannelElementOps& BoxOps() { return ChannelOpsFor<Box>::kOps; }

MonotonicDeadline ModelTimeIn(std::int64_t ns) {
  return MonotonicDeadline::AtNs(ModelClockNs() + ns);
}

// Raw storage for a received Box; `Take()` reads it (only after a kOk).
struct BoxSlot {
  alignas(Box) unsigned char bytes[sizeof(Box)];
  void* storage() { return bytes; }
  int Take() {
    Box* box = static_cast<Box*>(storage());
    const int v = box->value;
    box->~Box();
    return v;
  }
};

// Receives what is left in `channel` without waiting; -1 if nothing.
int Leftover(ChannelCore& channel) {
  BoxSlot slot;
  return channel.Receive(slot.storage(), false, MonotonicDeadline::None(), nullptr) ==
                 ChannelStatus::kOk
             ? slot.Take()
             : -1;
}

// A send, a receive and a close, all at once, on a channel of `kCapacity`.
template <std::size_t kCapacity>
struct CloseRacesSendAndReceive
    : rl::test_suite<CloseRacesSendAndReceive<kCapacity>, 3> {
  ChannelCore* channel = nullptr;
  Box value{42};
  ChannelStatus sent = ChannelStatus::kWouldBlock;
  ChannelStatus received = ChannelStatus::kWouldBlock;
  int got = 0;

  void before() { channel = new ChannelCore(kCapacity, BoxOps()); }
  void thread(unsigned index) {
    if (index == 0) {
      sent = channel->Send(&value, true, MonotonicDeadline::None(), nullptr);
    } else if (index == 1) {
      BoxSlot slot;
      received = channel->Receive(slot.storage(), true, MonotonicDeadline::None(), nullptr);
      if (received == ChannelStatus::kOk) got = slot.Take();
    } else {
      RL_ASSERT(channel->Close());
    }
  }
  void after() {
    RL_ASSERT(sent == ChannelStatus::kOk || sent == ChannelStatus::kClosed);
    RL_ASSERT(received == ChannelStatus::kOk || received == ChannelStatus::kClosed);
    RL_ASSERT((sent == ChannelStatus::kOk) == (received == ChannelStatus::kOk));
    if (sent == ChannelStatus::kOk) {
      RL_ASSERT(got == 42 && value.value == -1);
    } else {
      RL_ASSERT(value.value == 42);  // a refused send keeps its value
    }
    RL_ASSERT(Leftover(*channel) == -1);
    delete channel;
  }
};

// A receiver with a deadline, and (with kCancel) a cancellation, against a sender with
// a deadline, on a rendezvous: the value moves exactly when both say it did.
template <bool kCancel>
struct WaiterLeavesAsAValueArrives
    : rl::test_suite<WaiterLeavesAsAValueArrives<kCancel>, kCancel ? 3 : 2> {
  ChannelCore* channel = nullptr;
  StopState* stop = nullptr;
  WaitLimits limits;
  Box value{7};
  ChannelStatus sent = ChannelStatus::kWouldBlock;
  ChannelStatus received = ChannelStatus::kWouldBlock;
  int got = 0;

  void before() {
    channel = new ChannelCore(0, BoxOps());
    if (kCancel) {
      stop = StopState::Create();
      limits.stop = stop;
    }
  }
  void thread(unsigned index) {
    if (index == 0) {
      BoxSlot slot;
      received = channel->Receive(slot.storage(), true, ModelTimeIn(1000),
                                  kCancel ? &limits : nullptr);
      if (received == ChannelStatus::kOk) got = slot.Take();
    } else if (index == 1) {
      sent = channel->Send(&value, true, ModelTimeIn(1000), nullptr);
    } else {
      RL_ASSERT(stop->RequestStop());
    }
  }
  void after() {
    RL_ASSERT((sent == ChannelStatus::kOk) == (received == ChannelStatus::kOk));
    if (received == ChannelStatus::kOk) {
      RL_ASSERT(got == 7 && value.value == -1);
    } else {
      RL_ASSERT(value.value == 7);
      RL_ASSERT(sent == ChannelStatus::kTimedOut);
      RL_ASSERT(received == ChannelStatus::kTimedOut ||
                (kCancel && received == ChannelStatus::kCancelled));
    }
    delete channel;
    if (kCancel) stop->Unref();
  }
};

// A Select receiving from two channels of capacity 1, interruptible, against a sender
// on the first, (with kTwoSenders) a sender on the second, and a cancellation. With
// one sender, an entry of the Select left on the second channel would stay there for
// its destructor to find; with two, the second sender would pop it.
template <bool kTwoSenders>
struct SelectAgainstSendersAndACancel
    : rl::test_suite<SelectAgainstSendersAndACancel<kTwoSenders>, kTwoSenders ? 4 : 3> {
  static constexpr unsigned kCanceller = kTwoSenders ? 3 : 2;
  ChannelCore* channels[2] = {nullptr, nullptr};
  StopState* stop = nullptr;
  WaitLimits limits;
  Box values[2] = {Box(1), Box(2)};
  ChannelStatus sent[2] = {ChannelStatus::kWouldBlock, ChannelStatus::kWouldBlock};
  SelectOutcome outcome{-2, ChannelStatus::kWouldBlock};
  int got = 0;

  void before() {
    channels[0] = new ChannelCore(1, BoxOps());
    channels[1] = new ChannelCore(1, BoxOps());
    stop = StopState::Create();
    limits.stop = stop;
  }
  void thread(unsigned index) {
    if (index == 0) {
      BoxSlot slots[2];
      SelectCase cases[2] = {{channels[0], slots[0].storage(), false},
                             {channels[1], slots[1].storage(), false}};
      outcome = SelectAmong(cases, 2, true, MonotonicDeadline::None(), &limits);
      if (outcome.index >= 0 && outcome.status == ChannelStatus::kOk) {
        got = slots[outcome.index].Take();
      }
    } else if (index == kCanceller) {
      RL_ASSERT(stop->RequestStop());
    } else {
      sent[index - 1] =
          channels[index - 1]->Send(&values[index - 1], true, MonotonicDeadline::None(), nullptr);
    }
  }
  void after() {
    const int senders = kTwoSenders ? 2 : 1;
    for (int i = 0; i < senders; ++i) {
      RL_ASSERT(sent[i] == ChannelStatus::kOk && values[i].value == -1);
    }
    // What each channel holds now: its value unless the Select took it (-1 if none).
    const int left[2] = {Leftover(*channels[0]), Leftover(*channels[1])};
    const int expected[2] = {1, kTwoSenders ? 2 : -1};
    if (outcome.index >= 0) {
      RL_ASSERT(outcome.status == ChannelStatus::kOk);
      RL_ASSERT(got == expected[outcome.index]);
      RL_ASSERT(left[outcome.index] == -1);
      RL_ASSERT(left[1 - outcome.index] == expected[1 - outcome.index]);
    } else {
      RL_ASSERT(outcome.index == -1 && outcome.status == ChannelStatus::kCancelled);
      RL_ASSERT(left[0] == expected[0] && left[1] == expected[1]);
    }
    delete channels[0];  // stops the process if an entry of the Select is still linked
    delete channels[1];
    stop->Unref();
  }
};

TEST(ChannelModelTest, CloseRacesSendAndReceiveOnARendezvous) {
  ExpectModelHolds<CloseRacesSendAndReceive<0>>(50000);
}
TEST(ChannelModelTest, CloseRacesSendAndReceiveOnABuffer) {
  ExpectModelHolds<CloseRacesSendAndReceive<1>>(50000);
}
TEST(ChannelModelTest, ATimedOutReceiverRacesTheHandOff) {
  ExpectModelHolds<WaiterLeavesAsAValueArrives<false>>(50000);
}
TEST(ChannelModelTest, ACancelledReceiverRacesTheHandOff) {
  ExpectModelHolds<WaiterLeavesAsAValueArrives<true>>(50000);
}
TEST(ChannelModelTest, SelectOverTwoChannelsRacesTwoSendersAndACancel) {
  ExpectModelHolds<SelectAgainstSendersAndACancel<true>>(50000);
}
TEST(ChannelModelTest, SelectOverTwoChannelsRacesOneSenderAndACancel) {
  ExpectModelHolds<SelectAgainstSendersAndACancel<false>>(50000);
}

}  // namespace
}  // namespace spindle::internal
