// Copyright 2026 The Spindle Authors.

#include "benchmarks/report.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace spindle {
namespace bench {
namespace {

// What `print` writes, as a string.
template <class Print>
std::string Capture(Print print) {
  char* buffer = nullptr;
  std::size_t size = 0;
  std::FILE* out = open_memstream(&buffer, &size);
  print(out);
  std::fclose(out);
  std::string text(buffer, size);
  free(buffer);
  return text;
}

TEST(SummaryTest, MedianMinMaxOfOddAndEvenCounts) {
  Summary odd{"w", "m", "ns", {5, 1, 3}};
  EXPECT_EQ(odd.Median(), 3);
  EXPECT_EQ(odd.Min(), 1);
  EXPECT_EQ(odd.Max(), 5);
  Summary even{"w", "m", "ns", {4, 1, 3, 10}};
  EXPECT_EQ(even.Median(), 3.5);
  Summary one{"w", "m", "ns", {7}};
  EXPECT_EQ(one.Median(), 7);
  EXPECT_EQ(one.Min(), 7);
  EXPECT_EQ(one.Max(), 7);
  Summary none{"w", "m", "ns", {}};
  EXPECT_TRUE(std::isnan(none.Median()));
}

TEST(FormatValueTest, SignificantDigitsWithoutExponent) {
  EXPECT_EQ(FormatValue(499999500000.0), "499999500000");
  EXPECT_EQ(FormatValue(1234.5), "1234");
  EXPECT_EQ(FormatValue(56.23), "56.2");
  EXPECT_EQ(FormatValue(3.2), "3.20");
  EXPECT_EQ(FormatValue(0), "0.00");
  EXPECT_EQ(FormatValue(0.0123), "0.0123");
  EXPECT_EQ(FormatValue(NAN), "n/a");
}

TEST(PrintJsonLinesTest, OneObjectPerSummary) {
  const std::string text = Capture([](std::FILE* out) {
    PrintJsonLines({{"fib", "wall", "ms", {3, 1, 2}}, {"a\"b", "m", "us", {NAN}}}, out);
  });
  EXPECT_EQ(text,
            "{\"workload\": \"fib\", \"metric\": \"wall\", \"value\": 2, \"unit\": \"ms\", "
            "\"reps\": 3, \"min\": 1, \"max\": 3}\n"
            "{\"workload\": \"a\\\"b\", \"metric\": \"m\", \"value\": null, \"unit\": \"us\", "
            "\"reps\": 1, \"min\": null, \"max\": null}\n");
}

TEST(PrintTableTest, HeaderAndAlignedRows) {
  const std::string text = Capture([](std::FILE* out) {
    PrintTable({{"skynet", "wall", "ms", {400, 500, 600}}, {"pingpong", "round_trip", "us", {2.5}}},
               out);
  });
  EXPECT_EQ(text,
            "workload  metric          median  min - max              unit\n"
            "skynet    wall               500  400 - 600              ms\n"
            "pingpong  round_trip        2.50  2.50 - 2.50            us\n");
}

// Two columns: the first with every row, the second without pingpong's.
std::vector<SweepColumn> TwoColumns() {
  std::vector<SweepColumn> columns(2);
  columns[0].strategy = "v1";
  columns[0].workers = 2;
  columns[0].groups = "2";
  columns[0].summaries = {{"fib", "wall", "ms", {3, 1, 2}},
                          {"pingpong", "round_trip", "us", {2.5}}};
  columns[1].strategy = "v2";
  columns[1].workers = 16;
  columns[1].groups = "8+8";
  columns[1].summaries = {{"fib", "wall", "ms", {1234.5}}};
  return columns;
}

TEST(SweepColumnTest, LabelNamesStrategyAndKnownWorkers) {
  SweepColumn column;
  column.strategy = "v1";
  EXPECT_EQ(column.Label(), "v1");
  column.workers = 4;
  EXPECT_EQ(column.Label(), "v1 w4");
}

TEST(PrintSweepTableTest, OneMedianPerColumnAndMarkedOwnShapes) {
  const std::string text = Capture(
      [](std::FILE* out) { PrintSweepTable(TwoColumns(), {"pingpong", "yield"}, out); });
  EXPECT_EQ(text,
            "workload  metric      unit     v1 w2   v2 w16\n"
            "                      groups       2      8+8\n"
            "fib       wall        ms        2.00     1234\n"
            "pingpong  round_trip  us        2.50*       -\n"
            "\n"
            "* pingpong: the workload sets its own worker shape (see --help), which wins over "
            "the column's worker count\n");
}

TEST(PrintSweepJsonLinesTest, OneObjectPerSummaryAndColumn) {
  const std::string text = Capture(
      [](std::FILE* out) { PrintSweepJsonLines(TwoColumns(), {"pingpong"}, out); });
  EXPECT_EQ(text,
            "{\"workload\": \"fib\", \"metric\": \"wall\", \"value\": 2, \"unit\": \"ms\", "
            "\"reps\": 3, \"min\": 1, \"max\": 3, \"strategy\": \"v1\", \"workers\": 2, "
            "\"own_shape\": false}\n"
            "{\"workload\": \"fib\", \"metric\": \"wall\", \"value\": 1234.5, \"unit\": "
            "\"ms\", \"reps\": 1, \"min\": 1234.5, \"max\": 1234.5, \"strategy\": \"v2\", "
            "\"workers\": 16, \"own_shape\": false}\n"
            "{\"workload\": \"pingpong\", \"metric\": \"round_trip\", \"value\": 2.5, "
            "\"unit\": \"us\", \"reps\": 1, \"min\": 2.5, \"max\": 2.5, \"strategy\": "
            "\"v1\", \"workers\": 2, \"own_shape\": true}\n");
}

}  // namespace
}  // namespace bench
}  // namespace spindle
