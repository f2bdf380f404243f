// Copyright 2026 The Spindle Authors.

#include "fiber/internal/model_testing.h"

#include <malloc.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <ostream>
#include <sstream>

#include "gflags/gflags.h"
#include "gtest/gtest.h"

DEFINE_string(model_search, "random",
              "How a model test explores interleavings: random (--model_iterations of "
              "them, the same on every run), bound (all with at most "
              "--model_context_bound preemptions) or full (all)");
DEFINE_uint64(model_iterations, 0,
              "Interleavings a random search explores; 0: the model's own default");
DEFINE_uint32(model_context_bound, 2,
              "Preemptions per interleaving in --model_search=bound, 1 to 8");

namespace spindle::internal::testing {

rl::test_params ModelParams(rl::iteration_t default_iterations) {
  rl::test_params params;
  const std::string& search = FLAGS_model_search;
  if (search == "random") {
    params.search_type = rl::sched_random;
  } else if (search == "bound") {
    params.search_type = rl::sched_bound;
  } else if (search == "full") {
    params.search_type = rl::sched_full;
  } else {
    std::fprintf(stderr, "--model_search=%s: expected random, bound or full\n",
                 search.c_str());
    std::exit(2);
  }
  if (FLAGS_model_context_bound < 1 || FLAGS_model_context_bound > 8) {
    std::fprintf(stderr, "--model_context_bound=%u: expected 1 to 8\n",
                 FLAGS_model_context_bound);
    std::exit(2);
  }
  params.context_bound = FLAGS_model_context_bound;
  params.iteration_count =
      FLAGS_model_iterations != 0 ? FLAGS_model_iterations : default_iterations;
  // Relacy prints its progress every few thousand iterations: keep only its verdicts and
  // traces (an ostream without a buffer drops what it is given).
  static std::ostream no_progress(nullptr);
  params.progress_stream = &no_progress;
  return params;
}

std::string DescribeModelRun(const rl::test_params& params) {
  std::ostringstream out;
  out << rl::format(params.search_type) << ": " << rl::test_result_str(params.test_result)
      << " at iteration " << params.stop_iteration << " of " << params.iteration_count;
  return out.str();
}

bool RunInChild(rl::test_params& params, bool (*simulate)(rl::test_params&)) {
  std::fflush(stdout);
  std::fflush(stderr);
  int verdict[2];
  if (pipe(verdict) != 0) {
    std::perror("model test: pipe");
    std::exit(2);
  }
  const pid_t child = fork();
  if (child < 0) {
    std::perror("model test: fork");
    std::exit(2);
  }
  if (child == 0) {
    close(verdict[0]);
    const bool passed = simulate(params);
    params.output_stream->flush();
    std::cout.flush();
    const std::uint64_t report[3] = {passed ? 1u : 0u,
                                     static_cast<std::uint64_t>(params.test_result),
                                     static_cast<std::uint64_t>(params.stop_iteration)};
    const bool sent = write(verdict[1], report, sizeof(report)) == sizeof(report);
    _exit(sent ? 0 : 3);
  }
  close(verdict[1]);
  std::uint64_t report[3] = {0, static_cast<std::uint64_t>(rl::test_result_success), 0};
  const bool received = read(verdict[0], report, sizeof(report)) == sizeof(report);
  close(verdict[0]);
  int status = 0;
  waitpid(child, &status, 0);
  if (!received || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "model test: the model's process died (wait status %d)\n", status);
    return false;
  }
  params.test_result = static_cast<rl::test_result_e>(report[1]);
  params.stop_iteration = static_cast<rl::iteration_t>(report[2]);
  return report[0] == 1;
}

}  // namespace spindle::internal::testing

int main(int argc, char** argv) {
  // Each iteration of a model constructs its objects afresh, and Relacy's atomics carry
  // their history, so a queue of 8 slots is an allocation past glibc's mmap threshold:
  // left alone, every iteration maps and unmaps it, and half a model's time went to
  // munmap and its TLB flushes. Served from the heap and never trimmed, they cost no
  // system call.
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
  ::testing::InitGoogleTest(&argc, argv);
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  return RUN_ALL_TESTS();
}
