// Copyright 2026 The Spindle Authors.
//
// spindle_bench's results: one Summary per workload and metric over the repetitions,
// printed as a table for people or as one JSON object per line for programs.
#ifndef SPINDLE_BENCHMARKS_REPORT_H_
#define SPINDLE_BENCHMARKS_REPORT_H_

#include <cstdio>
#include <string>
#include <vector>

namespace spindle {
namespace bench {

// One metric of one workload over every repetition.
struct Summary {
  std::string workload;
  std::string metric;
  std::string unit;
  std::vector<double> values;  // one per repetition, in the order they ran

  double Median() const;
  double Min() const;
  double Max() const;
};

// workload, metric, median, min-max, unit; one row per summary, columns aligned.
void PrintTable(const std::vector<Summary>& summaries, std::FILE* out);

// One line per summary: {"workload": ..., "metric": ..., "value": <median>, "unit": ...,
// "reps": ..., "min": ..., "max": ...}.
void PrintJsonLines(const std::vector<Summary>& summaries, std::FILE* out);

// `value` with three or four significant digits and no exponent ("0.0123", "12.3",
// "1234").
std::string FormatValue(double value);

}  // namespace bench
}  // namespace spindle

#endif  // SPINDLE_BENCHMARKS_REPORT_H_
