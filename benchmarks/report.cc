// Copyright 2026 The Spindle Authors.

#include "benchmarks/report.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

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

// The fields of PrintJsonLines' object for `s`, without the braces.
std::string JsonFields(const Summary& s) {
  return absl::StrFormat(
      "\"workload\": %s, \"metric\": %s, \"value\": %s, \"unit\": %s, \"reps\": %d, "
      "\"min\": %s, \"max\": %s",
      JsonString(s.workload), JsonString(s.metric), JsonNumber(s.Median()), JsonString(s.unit),
      s.values.size(), JsonNumber(s.Min()), JsonNumber(s.Max()));
}

// One workload and metric of a sweep, with its summary in each column (nullptr where
// the column lacks it).
struct SweepRow {
  std::string workload;
  std::string metric;
  std::string unit;
  bool own_shape;
  std::vector<const Summary*> cells;
};

// The rows of `columns`, in the order their workload and metric first appear.
std::vector<SweepRow> SweepRows(const std::vector<SweepColumn>& columns,
                                const std::vector<std::string>& own_shape) {
  std::vector<SweepRow> rows;
  std::map<std::pair<std::string, std::string>, std::size_t> row_of;
  for (std::size_t c = 0; c < columns.size(); ++c) {
    for (const Summary& s : columns[c].summaries) {
      const auto [it, added] = row_of.try_emplace({s.workload, s.metric}, rows.size());
      if (added) {
        const bool own = std::find(own_shape.begin(), own_shape.end(), s.workload) !=
                         own_shape.end();
        rows.push_back({s.workload, s.metric, s.unit, own,
                        std::vector<const Summary*>(columns.size(), nullptr)});
      }
      rows[it->second].cells[c] = &s;
    }
  }
  return rows;
}

}  // namespace

void PrintJsonLines(const std::vector<Summary>& summaries, std::FILE* out) {
  for (const Summary& s : summaries) absl::FPrintF(out, "{%s}\n", JsonFields(s));
}

std::string SweepColumn::Label() const {
  return workers == 0 ? strategy : absl::StrFormat("%s w%d", strategy, workers);
}

void PrintSweepTable(const std::vector<SweepColumn>& columns,
                     const std::vector<std::string>& own_shape, std::FILE* out) {
  const std::vector<SweepRow> rows = SweepRows(columns, own_shape);
  std::size_t workload_width = 8, metric_width = 6, unit_width = 6;
  std::vector<std::size_t> widths;
  for (const SweepColumn& column : columns) {
    widths.push_back(std::max({std::size_t{6}, column.Label().size(), column.groups.size()}));
  }
  std::vector<std::string> own_names;
  for (const SweepRow& row : rows) {
    workload_width = std::max(workload_width, row.workload.size());
    metric_width = std::max(metric_width, row.metric.size());
    unit_width = std::max(unit_width, row.unit.size());
    for (std::size_t c = 0; c < columns.size(); ++c) {
      if (row.cells[c] != nullptr) {
        widths[c] = std::max(widths[c], FormatValue(row.cells[c]->Median()).size());
      }
    }
    if (row.own_shape && (own_names.empty() || own_names.back() != row.workload)) {
      own_names.push_back(row.workload);
    }
  }
  const auto line = [&](const std::string& workload, const std::string& metric,
                        const std::string& unit, const std::vector<std::string>& cells,
                        bool marked) {
    std::string text = absl::StrFormat("%-*s  %-*s  %-*s", workload_width, workload,
                                       metric_width, metric, unit_width, unit);
    for (std::size_t c = 0; c < cells.size(); ++c) {
      const bool mark = marked && cells[c] != "-";
      text += absl::StrFormat("  %*s%s", widths[c], cells[c], mark ? "*" : " ");
    }
    text.erase(text.find_last_not_of(' ') + 1);
    absl::FPrintF(out, "%s\n", text);
  };
  std::vector<std::string> labels, groups;
  for (const SweepColumn& column : columns) {
    labels.push_back(column.Label());
    groups.push_back(column.groups.empty() ? "-" : column.groups);
  }
  line("workload", "metric", "unit", labels, false);
  line("", "", "groups", groups, false);
  for (const SweepRow& row : rows) {
    std::vector<std::string> cells;
    for (const Summary* s : row.cells) cells.push_back(s ? FormatValue(s->Median()) : "-");
    line(row.workload, row.metric, row.unit, cells, row.own_shape);
  }
  if (!own_names.empty()) {
    absl::FPrintF(out,
                  "\n* %s: the workload sets its own worker shape (see --help), which wins "
                  "over the column's worker count\n",
                  absl::StrJoin(own_names, ", "));
  }
}

void PrintSweepJsonLines(const std::vector<SweepColumn>& columns,
                         const std::vector<std::string>& own_shape, std::FILE* out) {
  for (const SweepRow& row : SweepRows(columns, own_shape)) {
    for (std::size_t c = 0; c < columns.size(); ++c) {
      if (row.cells[c] == nullptr) continue;
      const SweepColumn& column = columns[c];
      absl::FPrintF(out, "{%s, \"strategy\": %s, \"workers\": %s, \"own_shape\": %s}\n",
                    JsonFields(*row.cells[c]), JsonString(column.strategy),
                    column.workers == 0 ? "null" : std::to_string(column.workers),
                    row.own_shape ? "true" : "false");
    }
  }
}

}  // namespace bench
}  // namespace spindle
