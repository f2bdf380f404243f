// Copyright 2026 The Spindle Authors.
//
// Application-shaped workloads of seed 004: a parallel merge sort, and a phone factory
// whose tasks wait for the tasks they depend on (each piece goes over a channel to what
// it goes into).

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "benchmarks/workload.h"
#include "fiber/fiber.h"
#include "runtime/runtime.h"
#include "sync/channel.h"
#include "sync/latch.h"
#include "sync/semaphore.h"

namespace spindle {
namespace bench {
namespace {

// Sorts [data, data + n) using [scratch, scratch + n): halves above `cutoff` are sorted
// by a child fiber and this one, then merged.
void MergeSort(int* data, int* scratch, std::size_t n, std::size_t cutoff) {
  if (n <= cutoff) {
    std::sort(data, data + n);
    return;
  }
  const std::size_t half = n / 2;
  Fiber left([=] { MergeSort(data, scratch, half, cutoff); });
  MergeSort(data + half, scratch + half, n - half, cutoff);
  left.join();
  std::merge(data, data + half, data + half, data + n, scratch);
  std::copy(scratch, scratch + n, data);
}

}  // namespace

std::vector<Metric> RunMergeSort(double scale) {
  const auto n = static_cast<std::size_t>(Scaled(4 * 1024 * 1024, scale, 2));
  // Sorting a shuffled 0..n-1 must give 0..n-1 back: that checks both sortedness and
  // that the output is a permutation of the input.
  std::vector<int> data(n), scratch(n);
  std::iota(data.begin(), data.end(), 0);
  std::shuffle(data.begin(), data.end(), std::mt19937_64(20260101));
  const std::size_t cutoff = std::clamp<std::size_t>(n / 64, 64, 4096);
  Stopwatch watch;
  RunAsFiber([&] { MergeSort(data.data(), scratch.data(), n, cutoff); });
  const double seconds = watch.Seconds();
  for (std::size_t i = 0; i < n; ++i) {
    if (data[i] != static_cast<int>(i)) {
      Fail("merge_sort", "element " + std::to_string(i) + " is " + std::to_string(data[i]) +
                             " (the output is not the sorted input)");
    }
  }
  return {{"wall", seconds * 1e3, "ms"}};
}

namespace {

constexpr int kAssembliesPerPhone = 3;
constexpr int kPartsPerAssembly = 3;
constexpr int kPhonesOnTheFloor = 256;  // phones being built at once

// One phone and what its tasks recorded, for CheckPhone() once every phone is done: the
// assembly's fiber records its parts, the phone's fiber its assemblies and itself.
struct PhoneOrder {
  explicit PhoneOrder(std::int64_t number) : number(number) {}
  const std::int64_t number;
  std::int64_t part_serial[kAssembliesPerPhone][kPartsPerAssembly] = {};
  std::uint64_t part_step[kAssembliesPerPhone][kPartsPerAssembly] = {};
  std::int64_t assembly_serial[kAssembliesPerPhone] = {};
  std::uint64_t assembly_step[kAssembliesPerPhone] = {};
  std::int64_t phone_serial = 0;
  std::uint64_t phone_step = 0;
};

// The factory's clock: every task takes a step number when it finishes its own work.
// relaxed: only the order of steps within one phone matters, and the channel a task
// receives its inputs from already orders their steps before its own.
std::atomic<std::uint64_t> factory_step{0};

std::uint64_t NextStep() { return factory_step.fetch_add(1, std::memory_order_relaxed) + 1; }

std::int64_t PartSerial(std::int64_t phone, int assembly, int part) {
  return phone * 100 + assembly * 10 + part + 1;
}

// What a finished piece hands to what it goes into: which piece, its serial, and the
// factory step at which it was done.
struct Finished {
  int index;
  std::int64_t serial;
  std::uint64_t step;
};

// A phone: each assembly is built in a fiber of its own from parts built in fibers of
// their own, and each piece, once done, goes over a channel to what it goes into; a
// receive parks the fiber (not its worker) until the piece arrives.
void BuildPhone(PhoneOrder* order) {
  Channel<Finished> assemblies(kAssembliesPerPhone);
  for (int a = 0; a < kAssembliesPerPhone; ++a) {
    StartFiberDetached([order, a, &assemblies] {
      Channel<Finished> parts(kPartsPerAssembly);
      for (int p = 0; p < kPartsPerAssembly; ++p) {
        StartFiberDetached(
            [order, a, p, &parts] { parts.Send({p, PartSerial(order->number, a, p), NextStep()}); });
      }
      std::int64_t serial = 0;
      for (int p = 0; p < kPartsPerAssembly; ++p) {
        const Finished part = *parts.Receive();
        order->part_serial[a][part.index] = part.serial;
        order->part_step[a][part.index] = part.step;
        serial += part.serial;
      }
      assemblies.Send({a, serial, NextStep()});
    });
  }
  std::int64_t serial = 0;
  for (int a = 0; a < kAssembliesPerPhone; ++a) {
    const Finished assembly = *assemblies.Receive();
    order->assembly_serial[assembly.index] = assembly.serial;
    order->assembly_step[assembly.index] = assembly.step;
    serial += assembly.serial;
  }
  order->phone_serial = serial;
  order->phone_step = NextStep();
}

// Empty if `order` was built in dependency order with the right parts, else what is
// wrong.
std::string CheckPhone(const PhoneOrder& order) {
  std::int64_t expected_phone = 0;
  for (int a = 0; a < kAssembliesPerPhone; ++a) {
    std::int64_t expected_assembly = 0;
    for (int p = 0; p < kPartsPerAssembly; ++p) {
      expected_assembly += PartSerial(order.number, a, p);
      if (order.part_step[a][p] == 0 || order.part_step[a][p] >= order.assembly_step[a]) {
        return "part " + std::to_string(p) + " of assembly " + std::to_string(a) +
               " finished at step " + std::to_string(order.part_step[a][p]) +
               ", not before its assembly (step " + std::to_string(order.assembly_step[a]) + ")";
      }
    }
    if (order.assembly_serial[a] != expected_assembly) {
      return "assembly " + std::to_string(a) + " has serial " +
             std::to_string(order.assembly_serial[a]) + ", expected " +
             std::to_string(expected_assembly);
    }
    if (order.assembly_step[a] >= order.phone_step) {
      return "assembly " + std::to_string(a) + " finished after its phone";
    }
    expected_phone += expected_assembly;
  }
  if (order.phone_serial != expected_phone) {
    return "serial " + std::to_string(order.phone_serial) + ", expected " +
           std::to_string(expected_phone);
  }
  return "";
}

}  // namespace

std::vector<Metric> RunPhoneFactory(double scale) {
  const std::int64_t phones = Scaled(10000, scale);
  std::vector<std::unique_ptr<PhoneOrder>> orders;
  orders.reserve(static_cast<std::size_t>(phones));
  for (std::int64_t i = 0; i < phones; ++i) orders.push_back(std::make_unique<PhoneOrder>(i));
  std::atomic<std::int64_t> finished{0};
  Latch all_done(phones);
  CountingSemaphore<> floor_space(kPhonesOnTheFloor);
  Stopwatch watch;
  RunAsFiber([&] {
    for (auto& order : orders) {
      floor_space.acquire();
      StartFiberDetached([&, order = order.get()] {
        BuildPhone(order);
        finished.fetch_add(1, std::memory_order_relaxed);
        floor_space.release();
        all_done.count_down();
      });
    }
    all_done.wait();
  });
  const double seconds = watch.Seconds();
  if (finished.load() != phones) {
    Fail("phone_factory",
         std::to_string(finished.load()) + " phones finished, expected " + std::to_string(phones));
  }
  for (const auto& order : orders) {
    if (std::string error = CheckPhone(*order); !error.empty()) {
      Fail("phone_factory", "phone " + std::to_string(order->number) + ": " + error);
    }
  }
  return {{"per_phone", seconds * 1e6 / static_cast<double>(phones), "us"}};
}

}  // namespace bench
}  // namespace spindle
