// Copyright 2026 The Spindle Authors.
//
// spindle_bench's results: one Summary per workload and metric over the repetitions,
// printed as a table for people or as one JSON object per line for programs.
#ifndef SPINDLE_BENCHMARKS_REPORT_H_
#define SPINDLE_BENCHMARKS_REPORT_H_

#include <cstdint>
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

// One column of a sweep: every workload's summaries under one scheduling strategy and
// one worker count.
struct SweepColumn {
  std::string strategy;
  std::uint64_t workers = 0;  // workers in all; 0 when unknown (--fiber_concurrency=0)
  std::string groups;         // workers per scheduling group, "8+8"; "" when not seen
  std::vector<Summary> summaries;

  // "v1 w4"; "v1" while `workers` is unknown.
  std::string Label() const;
};

// One table for a sweep: a row per workload and metric (in the order they first appear)
// with its unit, then the median under each column, headed by Label() and, on a second
// header line, the column's groups. The medians of the workloads named in `own_shape`
// get a "*", explained under the table: those workloads set their own worker shape.
void PrintSweepTable(const std::vector<SweepColumn>& columns,
                     const std::vector<std::string>& own_shape, std::FILE* out);

// PrintJsonLines' object for each summary of each column, ordered by workload and
// metric, then by column, with "strategy", "workers" (null when unknown) and
// "own_shape" (true for the workloads named in `own_shape`) added.
void PrintSweepJsonLines(const std::vector<SweepColumn>& columns,
                         const std::vector<std::string>& own_shape, std::FILE* out);

// `value` with three or four significant digits and no exponent ("0.0123", "12.3",
// "1234").
std::string FormatValue(double value);

}  // namespace bench
}  // namespace spindle

#endif  // SPINDLE_BENCHMARKS_REPORT_H_
