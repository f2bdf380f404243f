// Copyright 2026 The Spindle Authors.
//
// An operator new that fails past a size while a test asks it to, for the examples'
// tests that an allocation failure ends one connection, not the process. Linking this
// library replaces the program's operator new (not in sanitizer builds, which keep
// their own: there kCanFailAllocations is false and nothing is replaced).

#ifndef SPINDLE_EXAMPLES_TESTING_FAILING_NEW_H_
#define SPINDLE_EXAMPLES_TESTING_FAILING_NEW_H_

#include <cstddef>

namespace spindle::examples::failing_new {

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
inline constexpr bool kCanFailAllocations = true;
#else
inline constexpr bool kCanFailAllocations = false;
#endif

// From now on, operator new throws std::bad_alloc for any request over `bytes`; 0:
// never (the start). Thread-safe; a no-op where kCanFailAllocations is false.
void FailAllocationsAbove(std::size_t bytes);

}  // namespace spindle::examples::failing_new

#endif  // SPINDLE_EXAMPLES_TESTING_FAILING_NEW_H_
