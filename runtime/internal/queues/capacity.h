// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_CAPACITY_H_
#define SPINDLE_RUNTIME_INTERNAL_CAPACITY_H_

#include <cstdint>
#include <string>

namespace spindle::internal {

// The bounded queues' sizes (RunQueue, LocalQueue): a power of two in [min, max].
inline bool IsPowerOfTwoIn(std::uint64_t value, std::uint64_t min, std::uint64_t max) {
  return value >= min && value <= max && (value & (value - 1)) == 0;
}

// The empty string when `value` is a power of two in [min, max]; else a message that
// names it (`name`: "--some_flag=" or "SomeQueue capacity "), the value and the range.
inline std::string PowerOfTwoError(const std::string& name, std::uint64_t value,
                                   std::uint64_t min, std::uint64_t max) {
  if (IsPowerOfTwoIn(value, min, max)) return "";
  return name + std::to_string(value) + " is invalid: expected a power of two in [" +
         std::to_string(min) + ", " + std::to_string(max) + "]";
}

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_CAPACITY_H_
