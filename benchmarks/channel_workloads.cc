// Copyright 2026 The Spindle Authors.
//
// Channel workloads, in the shapes of the Go peer's benchmarks of the same names
// (../shared/peers/go/main.go): a ping-pong over two rendezvous channels, a fan-in of
// 8 producers to 8 consumers through one buffered channel, and a Select over two fed
// channels and one that is never ready.

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "benchmarks/workload.h"
#include "fiber/fiber.h"
#include "runtime/runtime.h"
#include "sync/channel.h"
#include "sync/latch.h"

namespace spindle {
namespace bench {

// Two fibers bounce a counter over two rendezvous channels; ns per one-way hand-off.
std::vector<Metric> RunChanPingPong(double scale) {
  const std::int64_t trips = Scaled(1000000, scale);
  Channel<std::int64_t> there, back;
  std::int64_t v = 0;
  Stopwatch watch;
  RunAsFiber([&] {
    Fiber echo([&] {
      for (std::int64_t got : there) {
        if (back.Send(got + 1) != ChannelStatus::kOk) Fail("chan_pingpong", "send back failed");
      }
      back.Close();
    });
    for (std::int64_t i = 0; i < trips; ++i) {
      if (there.Send(std::int64_t{v}) != ChannelStatus::kOk) Fail("chan_pingpong", "send failed");
      ReceiveResult<std::int64_t> got = back.Receive();
      if (!got) Fail("chan_pingpong", "the echo closed early");
      v = *got;
    }
    there.Close();
    echo.join();
  });
  const double seconds = watch.Seconds();
  if (v != trips) {
    Fail("chan_pingpong", "counter " + std::to_string(v) + ", expected " + std::to_string(trips));
  }
  return {{"per_handoff", seconds * 1e9 / (2.0 * static_cast<double>(trips)), "ns"}};
}

// 8 producers send 1M values in all into one channel of capacity 1024, read by 8
// consumers; ns per value, the sum checked.
std::vector<Metric> RunChanFanIn(double scale) {
  constexpr int kProducers = 8, kConsumers = 8;
  const std::int64_t total = Scaled(1 << 20, scale, kProducers);
  Channel<std::int64_t> ch(1024);
  std::atomic<std::int64_t> sum{0};
  Stopwatch watch;
  RunAsFiber([&] {
    Latch producers_done(kProducers), consumers_done(kConsumers);
    for (int c = 0; c < kConsumers; ++c) {
      StartFiberDetached([&] {
        std::int64_t local = 0;
        for (std::int64_t v : ch) local += v;
        sum.fetch_add(local, std::memory_order_relaxed);
        consumers_done.count_down();
      });
    }
    for (int p = 0; p < kProducers; ++p) {
      StartFiberDetached([&, p] {
        for (std::int64_t i = p; i < total; i += kProducers) {
          if (ch.Send(std::int64_t{i}) != ChannelStatus::kOk) Fail("chan_fanin", "send failed");
        }
        producers_done.count_down();
      });
    }
    producers_done.wait();
    ch.Close();
    consumers_done.wait();
  });
  const double seconds = watch.Seconds();
  if (sum.load() != total * (total - 1) / 2) {
    Fail("chan_fanin", "sum " + std::to_string(sum.load()) + ", expected " +
                           std::to_string(total * (total - 1) / 2));
  }
  return {{"per_value", seconds * 1e9 / static_cast<double>(total), "ns"}};
}

// One fiber selects over two channels of capacity 64, each fed 500k values by a
// producer, and a third channel that is never ready; ns per received value.
std::vector<Metric> RunChanSelect(double scale) {
  const std::int64_t per = Scaled(500000, scale);
  Channel<std::int64_t> x(64), y(64), never;
  std::int64_t sum = 0;
  Stopwatch watch;
  RunAsFiber([&] {
    for (Channel<std::int64_t>* c : {&x, &y}) {
      StartFiberDetached([c, per] {
        for (std::int64_t i = 1; i <= per; ++i) {
          if (c->Send(std::int64_t{i}) != ChannelStatus::kOk) Fail("chan_select", "send failed");
        }
        c->Close();
      });
    }
    Channel<std::int64_t>* a = &x;
    Channel<std::int64_t>* b = &y;
    while (a != nullptr || b != nullptr) {
      ReceiveResult<std::int64_t> ra, rb, rn;
      const SelectResult r = Select(ReceiveCase(a, ra), ReceiveCase(b, rb), ReceiveCase(never, rn));
      if (r.index == 2) Fail("chan_select", "a never-ready channel was selected");
      ReceiveResult<std::int64_t>& got = r.index == 0 ? ra : rb;
      if (!got) {
        (r.index == 0 ? a : b) = nullptr;
        continue;
      }
      sum += *got;
    }
  });
  const double seconds = watch.Seconds();
  if (sum != 2 * per * (per + 1) / 2) {
    Fail("chan_select", "sum " + std::to_string(sum) + ", expected " +
                            std::to_string(2 * per * (per + 1) / 2));
  }
  return {{"per_value", seconds * 1e9 / (2.0 * static_cast<double>(per)), "ns"}};
}

}  // namespace bench
}  // namespace spindle
