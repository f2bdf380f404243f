// Copyright 2026 The Spindle Authors.

#include "fiber/internal/fiber_function.h"

#include <array>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "absl/functional/any_invocable.h"
#include "gtest/gtest.h"

namespace spindle::internal {
namespace {

// Counts live copies, so a test sees every construction and destruction.
struct Counted {
  explicit Counted(int* live) : live(live) { ++*live; }
  Counted(Counted&& other) noexcept : live(other.live) { ++*live; }
  Counted(const Counted&) = delete;
  ~Counted() { --*live; }
  int* live;
};

TEST(FiberFunctionTest, ATriviallyCopyableLambdaIsStoredInlineWithoutAManager) {
  int calls = 0;
  std::array<long, 3> words = {1, 2, 3};
  auto lambda = [&calls, words] { calls += static_cast<int>(words[0] + words[1] + words[2]); };
  static_assert(FiberFunction::kTrivial<decltype(lambda)>);
  FiberFunction f(lambda);
  FiberFunction g(std::move(f));
  EXPECT_FALSE(f);  // NOLINT: moved-from is empty, by contract
  ASSERT_TRUE(g);
  g();
  EXPECT_EQ(calls, 6);
  g = nullptr;
  EXPECT_FALSE(g);
}

TEST(FiberFunctionTest, ANonTrivialCallableIsMovedAndDestroyedExactlyOnce) {
  int live = 0;
  int calls = 0;
  {
    FiberFunction f([counted = Counted(&live), &calls] { ++calls; });
    EXPECT_EQ(live, 1);
    FiberFunction g(std::move(f));
    EXPECT_EQ(live, 1) << "a move leaves one live copy";
    FiberFunction h;
    h = std::move(g);
    EXPECT_EQ(live, 1);
    h();
    EXPECT_EQ(calls, 1);
  }
  EXPECT_EQ(live, 0) << "destroyed with its last holder";
}

TEST(FiberFunctionTest, ACallableLargerThanTheBufferGoesToTheHeap) {
  int live = 0;
  std::string sum;
  {
    std::array<char, 100> big{};
    big[0] = 'x';
    auto lambda = [counted = Counted(&live), big, &sum] { sum.push_back(big[0]); };
    static_assert(!FiberFunction::kStoredInline<decltype(lambda)>);
    FiberFunction f(std::move(lambda));
    EXPECT_EQ(live, 2);  // `lambda` moved-from, and the heap copy
    FiberFunction g(std::move(f));
    EXPECT_EQ(live, 2) << "a heap callable moves by its pointer";
    g();
    g();
    EXPECT_EQ(sum, "xx");
    g = nullptr;
    EXPECT_EQ(live, 1);
  }
  EXPECT_EQ(live, 0);
}

TEST(FiberFunctionTest, HoldsAnAnyInvocableAndAMoveOnlyCapture) {
  int calls = 0;
  absl::AnyInvocable<void()> any = [&calls] { ++calls; };
  FiberFunction f(std::move(any));
  auto owner = std::make_unique<int>(41);
  FiberFunction g([owner = std::move(owner), &calls] { calls += *owner; });
  FiberFunction h(std::move(f));
  h();
  g();
  EXPECT_EQ(calls, 42);
}

int g_free_function_calls = 0;
void FreeFunction() { ++g_free_function_calls; }

TEST(FiberFunctionTest, ANullCallableMakesAnEmptyFunction) {
  g_free_function_calls = 0;  // --gtest_repeat runs this again
  void (*null_pointer)() = nullptr;
  EXPECT_FALSE(FiberFunction(null_pointer));
  EXPECT_FALSE(FiberFunction(std::function<void()>()));
  EXPECT_FALSE(FiberFunction(absl::AnyInvocable<void()>()));
  EXPECT_FALSE(FiberFunction(nullptr));
  // Their non-null values are functions like any other.
  FiberFunction pointer(&FreeFunction);
  ASSERT_TRUE(pointer);
  pointer();
  EXPECT_EQ(g_free_function_calls, 1);
  int calls = 0;
  FiberFunction wrapped(std::function<void()>([&calls] { ++calls; }));
  ASSERT_TRUE(wrapped);
  wrapped();
  EXPECT_EQ(calls, 1);
}

TEST(FiberFunctionTest, AssigningReplacesAndDestroysTheOldFunction) {
  int live = 0;
  int calls = 0;
  FiberFunction f([counted = Counted(&live)] {});
  EXPECT_EQ(live, 1);
  f = [&calls] { ++calls; };
  EXPECT_EQ(live, 0);
  f();
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace spindle::internal
