// Copyright 2026 The Spindle Authors.
//
// Every C++ sample in the README and the docs compiles under the project's warnings (the
// generated readme_samples.cc, see readme_samples.sh), and every complete program among
// them runs and exits with 0.

#include <string>

#include "gtest/gtest.h"

struct ReadmeProgram {
  const char* file;
  int line;
  int (*main)(int, char**);
};
extern const ReadmeProgram kReadmePrograms[];
extern const int kReadmeProgramCount;

namespace {

TEST(ReadmeSamplesTest, EveryCompleteProgramRunsAndExitsWithZero) {
#ifndef SPINDLE_SAMPLES_NOT_README  // the gRPC page's test (integrations/grpc) runs it too
  ASSERT_GT(kReadmeProgramCount, 0) << "the README's first sample is a complete program";
  // Bazel names the page README.md, CMake by its absolute path.
  const std::string first = kReadmePrograms[0].file;
  const std::string suffix = "/README.md";
  const bool readme =
      first == "README.md" || (first.size() > suffix.size() &&
                               first.compare(first.size() - suffix.size(), suffix.size(),
                                             suffix) == 0);
  EXPECT_TRUE(readme) << "the first complete program is the README's, not " << first;
#else
  ASSERT_GT(kReadmeProgramCount, 0) << "the pages have a complete program";
#endif
  for (int i = 0; i < kReadmeProgramCount; ++i) {
    char name[] = "readme_sample";
    char* argv[] = {name, nullptr};
    int argc = 1;
    EXPECT_EQ(kReadmePrograms[i].main(argc, argv), 0)
        << "the sample at " << kReadmePrograms[i].file << ":" << kReadmePrograms[i].line;
  }
}

}  // namespace
