// Copyright 2026 The Spindle Authors.
//
// Test support: a deadline for a test, and one over the whole test binary, that dump
// every fiber (spindle::DumpFibers()) before the test is killed, so a hang shows where
// each fiber stands. Linked (alwayslink) into every test binary that starts a runtime,
// directly or through :runtime_testing.

#ifndef SPINDLE_RUNTIME_INTERNAL_TIMEOUT_TESTING_H_
#define SPINDLE_RUNTIME_INTERNAL_TIMEOUT_TESTING_H_

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "runtime/runtime.h"

namespace spindle::testing {

// A deadline for a test: if the object still lives when `timeout` has passed, it prints
// "TestWatchdog: <what> exceeded its deadline of N ms" and the fiber dump
// (spindle::DumpFibers()) to stderr, then aborts, so a hang in CI shows where every
// fiber stands. Disarmed by its destructor. Thread-safe to destroy from the thread that
// made it; one watchdog thread per object.
class TestWatchdog {
 public:
  explicit TestWatchdog(std::chrono::milliseconds timeout, std::string what = "test")
      : what_(std::move(what)), thread_([this, timeout] { Watch(timeout); }) {}
  ~TestWatchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      disarmed_ = true;
    }
    disarm_.notify_one();
    thread_.join();
  }
  TestWatchdog(const TestWatchdog&) = delete;
  TestWatchdog& operator=(const TestWatchdog&) = delete;

 private:
  void Watch(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (disarm_.wait_for(lock, timeout, [this] { return disarmed_; })) return;
    std::fprintf(stderr, "TestWatchdog: %s exceeded its deadline of %lld ms\n",
                 what_.c_str(), static_cast<long long>(timeout.count()));
    DumpFibers(std::cerr);
    std::cerr.flush();
    std::abort();
  }

  const std::string what_;
  std::mutex mutex_;
  std::condition_variable disarm_;
  bool disarmed_ = false;
  std::thread thread_;  // last: started once the members above exist
};

// Arms a TestWatchdog over the whole test binary at 90% of Bazel's TEST_TIMEOUT (when
// Bazel runs it), so a hang dumps every fiber before Bazel kills the process silently.
// timeout_testing.cc installs it in every test binary that links :timeout_testing (and
// so :runtime_testing): every test binary that starts a runtime.
class BazelTimeoutWatchdog : public ::testing::Environment {
 public:
  void SetUp() override {
    const char* timeout = std::getenv("TEST_TIMEOUT");
    const long seconds = timeout != nullptr ? std::atol(timeout) : 0;
    if (seconds <= 0) return;
    watchdog_ = std::make_unique<TestWatchdog>(std::chrono::milliseconds(seconds * 900),
                                               "the test binary (90% of TEST_TIMEOUT)");
  }
  void TearDown() override { watchdog_.reset(); }

 private:
  std::unique_ptr<TestWatchdog> watchdog_;
};

}  // namespace spindle::testing

#endif  // SPINDLE_RUNTIME_INTERNAL_TIMEOUT_TESTING_H_
