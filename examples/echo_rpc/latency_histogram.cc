// Copyright 2026 The Spindle Authors.
//
// Bucket layout, kSubBucketBits = 6 (S = 64):
//   bucket 0 .. 63      values 0 .. 63, one each (exponent group 0)
//   group g >= 1        values [2^(g+5), 2^(g+6)), 64 buckets of width 2^(g-1)
// so a value v >= 64 with highest bit e (>= 6) is in group e - 5, sub-bucket
// (v >> (e - 6)) - 64.

#include "examples/echo_rpc/latency_histogram.h"

#include <cmath>

namespace spindle::examples::echo {

int LatencyHistogram::BucketOf(std::uint64_t value) {
  constexpr std::uint64_t kSub = std::uint64_t{1} << kSubBucketBits;
  if (value < kSub) return static_cast<int>(value);
  const int exponent = 63 - __builtin_clzll(value);
  if (exponent > kMaxExponent) return kBuckets - 1;
  const int group = exponent - kSubBucketBits + 1;
  const auto sub = static_cast<int>((value >> (exponent - kSubBucketBits)) - kSub);
  return (group << kSubBucketBits) + sub;
}

std::uint64_t LatencyHistogram::LowestValueOf(int bucket) {
  constexpr int kSub = 1 << kSubBucketBits;
  const int group = bucket >> kSubBucketBits;
  const auto sub = static_cast<std::uint64_t>(bucket & (kSub - 1));
  if (group == 0) return sub;
  return (kSub + sub) << (group - 1);
}

void LatencyHistogram::Merge(const LatencyHistogram& other) {
  for (int i = 0; i < kBuckets; ++i) counts_[i] += other.counts_[i];
  count_ += other.count_;
}

std::uint64_t LatencyHistogram::Quantile(double quantile) const {
  if (count_ == 0) return 0;
  auto rank =
      static_cast<std::uint64_t>(std::ceil(quantile * static_cast<double>(count_)));
  if (rank == 0) rank = 1;
  std::uint64_t seen = 0;
  for (int i = 0; i < kBuckets; ++i) {
    seen += counts_[i];
    if (seen >= rank) {
      const std::uint64_t low = LowestValueOf(i);
      const std::uint64_t width = i + 1 < kBuckets ? LowestValueOf(i + 1) - low : 1;
      return low + width / 2;
    }
  }
  return LowestValueOf(kBuckets - 1);
}

}  // namespace spindle::examples::echo
