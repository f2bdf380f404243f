// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_EXAMPLES_ECHO_RPC_LATENCY_HISTOGRAM_H_
#define SPINDLE_EXAMPLES_ECHO_RPC_LATENCY_HISTOGRAM_H_

#include <array>
#include <cstdint>

namespace spindle::examples::echo {

// A log-linear histogram of durations in nanoseconds, as HdrHistogram lays them out:
// values below 64 have a bucket each; above, every power of two is split into 64
// buckets, so a reported percentile is within 1/64 (1.6%) of the true value. Values
// past 2^40 ns (18 minutes) count in the last bucket. Fixed size (9 KiB), no
// allocation: one per connection, merged at the end. Thread-compatible.
class LatencyHistogram {
 public:
  void Record(std::uint64_t nanoseconds) {
    ++counts_[BucketOf(nanoseconds)];
    ++count_;
  }
  void Merge(const LatencyHistogram& other);

  std::uint64_t count() const { return count_; }
  // The value at `quantile` (0 < quantile <= 1; 0.99 is p99): the middle of the bucket
  // holding the ceil(quantile * count())-th smallest sample. 0 when empty.
  std::uint64_t Quantile(double quantile) const;

 private:
  static constexpr int kSubBucketBits = 6;
  static constexpr int kMaxExponent = 40;
  static constexpr int kBuckets = (kMaxExponent - kSubBucketBits + 2) << kSubBucketBits;

  static int BucketOf(std::uint64_t value);
  static std::uint64_t LowestValueOf(int bucket);

  std::array<std::uint32_t, kBuckets> counts_{};
  std::uint64_t count_ = 0;
};

}  // namespace spindle::examples::echo

#endif  // SPINDLE_EXAMPLES_ECHO_RPC_LATENCY_HISTOGRAM_H_
