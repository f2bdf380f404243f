// Copyright 2026 The Spindle Authors.

#include "benchmarks/report.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"

namespace spindle {
namespace bench {

double Summary::Median() const {
  if (values.empty()) return NAN;
  std::vector<double> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  const std::size_t mid = sorted.size() / 2;
  return sorted.size() % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

double Summary::Min() const {
  return values.empty() ? NAN : *std::min_element(values.begin(), values.end());
}

double Summary::Max() const {
  return values.empty() ? NAN : *std::max_element(values.begin(), values.end());
}

std::string FormatValue(double value) {
  if (!std::isfinite(value)) return "n/a";
  const double magnitude = std::fabs(value);
  if (magnitude >= 100) return absl::StrFormat("%.0f", value);
  if (magnitude >= 10) return absl::StrFormat("%.1f", value);
  if (magnitude >= 1 || magnitude == 0) return absl::StrFormat("%.2f", value);
  return absl::StrFormat("%.3g", value);
}

void PrintTable(const std::vector<Summary>& summaries, std::FILE* out) {
  std::size_t workload_width = 8, metric_width = 6;
  for (const Summary& s : summaries) {
    workload_width = std::max(workload_width, s.workload.size());
    metric_width = std::max(metric_width, s.metric.size());
  }
  const auto row = [&](const std::string& workload, const std::string& metric,
                       const std::string& median, const std::string& range,
                       const std::string& unit) {
    absl::FPrintF(out, "%-*s  %-*s  %10s  %-21s  %s\n", workload_width, workload, metric_width,
                  metric, median, range, unit);
  };
  row("workload", "metric", "median", "min - max", "unit");
  for (const Summary& s : summaries) {
    row(s.workload, s.metric, FormatValue(s.Median()),
        FormatValue(s.Min()) + " - " + FormatValue(s.Max()), s.unit);
  }
}

namespace {

std::string JsonString(const std::string& text) {
  std::string quoted = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') quoted += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      quoted += absl::StrFormat("\\u%04x", c);
      continue;
    }
    quoted += c;
  }
  return quoted + "\"";
}

// A JSON number; null for NaN and infinities, which JSON cannot spell.
std::string JsonNumber(double value) {
  return std::isfinite(value) ? absl::StrFormat("%.6g", value) : "null";
}

}  // namespace

void PrintJsonLines(const std::vector<Summary>& summaries, std::FILE* out) {
  for (const Summary& s : summaries) {
    absl::FPrintF(out,
                  "{\"workload\": %s, \"metric\": %s, \"value\": %s, \"unit\": %s, "
                  "\"reps\": %d, \"min\": %s, \"max\": %s}\n",
                  JsonString(s.workload), JsonString(s.metric), JsonNumber(s.Median()),
                  JsonString(s.unit), s.values.size(), JsonNumber(s.Min()), JsonNumber(s.Max()));
  }
}

}  // namespace bench
}  // namespace spindle
