// Copyright 2026 The Spindle Authors.

#include "runtime/internal/testing/isolation_probe.h"

#include <algorithm>
#include <atomic>
#include <vector>

#include "fiber/fiber.h"
#include "fiber/this_fiber.h"
#include "glog/logging.h"

namespace spindle::testing {
namespace {

using Clock = std::chrono::steady_clock;

void Spin(std::chrono::microseconds duration) {
  const auto until = Clock::now() + duration;
  while (Clock::now() < until) {
  }
}

Fiber StartIn(const std::string& pool, absl::AnyInvocable<void()> f) {
  Fiber::Attributes attributes;
  attributes.pool_name = pool.c_str();
  return Fiber(attributes, std::move(f));
}

}  // namespace

ProbeFigures RunIsolationProbe(const IsolationLoad& load) {
  std::atomic<bool> stop{false};
  std::atomic<bool> hog_started{false};
  std::vector<Fiber> load_fibers;
  if (load.load) {
    for (std::size_t i = 0; i < load.cpu_fibers; ++i) {
      load_fibers.push_back(StartIn(load.load_pool, [&] {
        // relaxed: a stop flag; nothing is published through it.
        while (!stop.load(std::memory_order_relaxed)) {
          Spin(load.slice);
          this_fiber::Yield();
        }
      }));
    }
    load_fibers.push_back(StartIn(load.load_pool, [&] {
      hog_started.store(true, std::memory_order_relaxed);  // relaxed: a hint to begin
      Spin(std::chrono::duration_cast<std::chrono::microseconds>(load.hog));
    }));
  }
  std::vector<double> late_us;
  late_us.reserve(load.samples);
  Fiber probe = StartIn(load.probe_pool, [&] {
    // Begin once the hog holds its worker (relaxed: a hint; the load runs either way).
    const auto give_up = Clock::now() + std::chrono::seconds(30);
    while (load.load && !hog_started.load(std::memory_order_relaxed) && Clock::now() < give_up) {
      this_fiber::SleepFor(std::chrono::milliseconds(1));
    }
    for (std::size_t i = 0; i < load.samples; ++i) {
      const auto before = Clock::now();
      this_fiber::SleepFor(std::chrono::milliseconds(1));
      const auto slept = Clock::now() - before;
      late_us.push_back(
          std::max(0.0, std::chrono::duration<double, std::micro>(slept).count() - 1000.0));
    }
  });
  probe.join();
  stop.store(true, std::memory_order_relaxed);  // relaxed: see above
  for (Fiber& fiber : load_fibers) fiber.join();
  std::sort(late_us.begin(), late_us.end());
  ProbeFigures figures;
  figures.samples = late_us.size();
  if (!late_us.empty()) {
    const auto at = [&](double q) {
      return late_us[std::min(late_us.size() - 1,
                              static_cast<std::size_t>(q * static_cast<double>(late_us.size())))];
    };
    figures.p50_us = at(0.50);
    figures.p99_us = at(0.99);
    figures.max_us = late_us.back();
  }
  return figures;
}

}  // namespace spindle::testing
