// Copyright 2026 The Spindle Authors.
//
// Every C++ sample in the README and the docs compiles under the project's warnings (the
// generated readme_samples.cc, see readme_samples.sh), and every complete program among
// them runs and exits with 0.

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
  ASSERT_GT(kReadmeProgramCount, 0) << "the README's first sample is a complete program";
  ASSERT_NE(kReadmePrograms[0].file, nullptr);
  for (int i = 0; i < kReadmeProgramCount; ++i) {
    char name[] = "readme_sample";
    char* argv[] = {name, nullptr};
    int argc = 1;
    EXPECT_EQ(kReadmePrograms[i].main(argc, argv), 0)
        << "the sample at " << kReadmePrograms[i].file << ":" << kReadmePrograms[i].line;
  }
}

}  // namespace
