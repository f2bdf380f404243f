// Copyright 2026 The Spindle Authors.
//
// configs/default.flags names every flag the library defines (fiber/, runtime/, sync/,
// timer/, io/), each with its built-in default, unless the comment block right above it
// says why not with the words "not the built-in default". A flag added to the library
// without a line here, a default changed in one place only, or a line for a flag that
// no longer exists fails this test.
//
// docs/configuration.md's flag tables name every flag the library defines too, each with
// its built-in default, and an "accepted" column quoted from the flag's own help text (so
// that neither can drift from the code); every numeric flag's help states its range.

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gflags/gflags.h"
#include "gtest/gtest.h"

namespace spindle {
namespace {

struct FileFlag {
  std::string value;
  bool commented_exception = false;  // its comment says it is not the built-in default
  int line = 0;
};

// Parses `--name=value` lines; comment lines (#) above a flag belong to it, and a blank
// line ends a comment block.
std::map<std::string, FileFlag> ReadFlagFile(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::map<std::string, FileFlag> flags;
  std::string line, comment;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty()) {
      comment.clear();
    } else if (line[0] == '#') {
      // One line of words, so a phrase may wrap: "# a\n# b" reads "a b".
      comment += " " + line.substr(line.find_first_not_of("# ") == std::string::npos
                                       ? line.size()
                                       : line.find_first_not_of("# "));
    } else {
      const std::size_t eq = line.find('=');
      EXPECT_TRUE(line.rfind("--", 0) == 0 && eq != std::string::npos)
          << path << ":" << number << ": not a --name=value line: " << line;
      if (eq == std::string::npos) continue;
      const std::string name = line.substr(2, eq - 2);
      EXPECT_EQ(flags.count(name), 0u) << path << ":" << number << ": --" << name
                                       << " is set twice";
      flags[name] = {line.substr(eq + 1),
                     comment.find("not the built-in default") != std::string::npos, number};
      comment.clear();
    }
  }
  return flags;
}

// The flags linked in from the library (fiber/, runtime/, sync/, timer/, io/).
std::vector<gflags::CommandLineFlagInfo> LibraryFlags() {
  std::vector<gflags::CommandLineFlagInfo> all, library;
  gflags::GetAllFlags(&all);
  for (gflags::CommandLineFlagInfo& flag : all) {
    for (const char* prefix : {"fiber/", "runtime/", "sync/", "timer/", "io/"}) {
      if (flag.filename.rfind(prefix, 0) == 0) {
        library.push_back(std::move(flag));
        break;
      }
    }
  }
  return library;
}

TEST(DefaultFlagsTest, NamesEveryLibraryFlagWithItsBuiltInDefault) {
  const std::map<std::string, FileFlag> file = ReadFlagFile("configs/default.flags");
  std::set<std::string> library;
  for (const gflags::CommandLineFlagInfo& flag : LibraryFlags()) {
    library.insert(flag.name);
    auto it = file.find(flag.name);
    if (it == file.end()) {
      ADD_FAILURE() << "configs/default.flags does not name --" << flag.name
                    << " (defined in " << flag.filename << ", default '"
                    << flag.default_value << "')";
      continue;
    }
    if (!it->second.commented_exception) {
      EXPECT_EQ(it->second.value, flag.default_value)
          << "configs/default.flags:" << it->second.line << ": --" << flag.name << "="
          << it->second.value << " is not the built-in default ('" << flag.default_value
          << "') and its comment does not say why (\"not the built-in default\")";
    } else {
      EXPECT_NE(it->second.value, flag.default_value)
          << "configs/default.flags:" << it->second.line << ": --" << flag.name
          << "'s comment says it is not the built-in default, but it is";
    }
  }
  // Sanity: the library's flags were linked in (a flag of each layer that has them).
  for (const char* name : {"fiber_scheduling_strategy", "fiber_stack_size",
                           "io_blocking_threads", "fiber_chaos_seed"}) {
    EXPECT_EQ(library.count(name), 1u) << "--" << name << " is not linked into this test";
  }
  for (const auto& [name, flag] : file) {
    EXPECT_EQ(library.count(name), 1u)
        << "configs/default.flags:" << flag.line << ": --" << name
        << " is not a flag the library defines";
  }
}

struct DocRow {
  std::string default_value;
  std::string accepted;
  int line = 0;
};

std::string Trim(const std::string& text) {
  const std::size_t begin = text.find_first_not_of(" `");
  if (begin == std::string::npos) return "";
  const std::size_t end = text.find_last_not_of(" `");
  return text.substr(begin, end - begin + 1);
}

// Lower case, runs of blanks as one space: the form in which a quoted range is compared.
std::string Normalized(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  return out;
}

// Table rows `| `--name` | `default` | accepted | meaning |`.
std::map<std::string, DocRow> ReadFlagTables(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::map<std::string, DocRow> rows;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.rfind("| `--", 0) != 0) continue;
    std::vector<std::string> cells;
    std::size_t start = 1;
    for (std::size_t bar = line.find('|', start); bar != std::string::npos;
         bar = line.find('|', start)) {
      cells.push_back(line.substr(start, bar - start));
      start = bar + 1;
    }
    EXPECT_GE(cells.size(), 4u) << path << ":" << number
                                << ": a flag row has 4 cells (flag, default, accepted, "
                                   "what it does): "
                                << line;
    if (cells.size() < 4) continue;
    const std::string name = Trim(cells[0]).substr(2);
    EXPECT_EQ(rows.count(name), 0u) << path << ":" << number << ": --" << name
                                    << " has two rows";
    std::string default_value = Trim(cells[1]);
    if (default_value == "\"\"") default_value.clear();
    rows[name] = {default_value, Trim(cells[2]), number};
  }
  return rows;
}

// The first "[low, high]" in a help text ("" if none).
std::string RangeIn(const std::string& help) {
  for (std::size_t open = help.find('['); open != std::string::npos;
       open = help.find('[', open + 1)) {
    const std::size_t close = help.find(']', open);
    if (close == std::string::npos) break;
    const std::string range = help.substr(open, close - open + 1);
    if (range.find(", ") != std::string::npos) return range;
  }
  return "";
}

// Comma-separated values, each trimmed of blanks and backticks.
std::set<std::string> Values(const std::string& list) {
  std::set<std::string> values;
  std::size_t start = 0;
  while (start <= list.size()) {
    std::size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    values.insert(Trim(list.substr(start, comma - start)));
    start = comma + 1;
  }
  return values;
}

// The values a help text lists after "Accepted: ", up to the sentence's end, without
// their explanations in parentheses ("Accepted: v1 (one queue), v2 (...)." -> v1, v2).
std::set<std::string> AcceptedIn(const std::string& help) {
  const std::string marker = "Accepted: ";
  const std::size_t at = help.find(marker);
  if (at == std::string::npos) return {};
  std::string list;
  int depth = 0;
  for (std::size_t i = at + marker.size(); i < help.size(); ++i) {
    const char c = help[i];
    if (c == '(') {
      ++depth;
    } else if (c == ')') {
      --depth;
    } else if (depth == 0) {
      if (c == '.' && (i + 1 == help.size() || help[i + 1] == ' ')) break;
      list += c;
    }
  }
  return Values(list);
}

TEST(FlagReferenceTest, ConfigurationPageListsEveryLibraryFlag) {
  const std::string path = "docs/configuration.md";
  const std::map<std::string, DocRow> rows = ReadFlagTables(path);
  std::set<std::string> library;
  for (const gflags::CommandLineFlagInfo& flag : LibraryFlags()) {
    library.insert(flag.name);
    const bool numeric = flag.type != "bool" && flag.type != "string";
    const std::string range = RangeIn(flag.description);
    if (numeric) {
      EXPECT_FALSE(range.empty())
          << "--" << flag.name << "'s help text (" << flag.filename
          << ") does not state its range as [low, high]: " << flag.description;
    }
    auto it = rows.find(flag.name);
    if (it == rows.end()) {
      ADD_FAILURE() << path << " has no row for --" << flag.name << " (defined in "
                    << flag.filename << ", default '" << flag.default_value << "')";
      continue;
    }
    const DocRow& row = it->second;
    const std::string where = path + ":" + std::to_string(row.line) + ": --" + flag.name;
    EXPECT_EQ(row.default_value, flag.default_value)
        << where << "'s default is '" << flag.default_value
        << "' (write `\"\"` for an empty string)";
    const std::set<std::string> listed = AcceptedIn(flag.description);
    if (flag.type == "bool") {
      EXPECT_EQ(row.accepted, "true, false") << where;
    } else if (numeric) {
      // The range itself, with any words around it taken from the help text.
      EXPECT_NE(row.accepted.find(range), std::string::npos)
          << where << "'s accepted column '" << row.accepted << "' does not give its range "
          << range << " (help text: " << flag.description << ")";
      EXPECT_NE(Normalized(flag.description).find(Normalized(row.accepted)),
                std::string::npos)
          << where << "'s accepted column '" << row.accepted
          << "' is not quoted from its help text: " << flag.description;
    } else if (!listed.empty()) {
      EXPECT_EQ(Values(row.accepted), listed)
          << where << "'s accepted column '" << row.accepted
          << "' is not the help text's list of accepted values: " << flag.description;
    } else {
      // A format (a CPU list, a topology): quoted from the help text.
      EXPECT_FALSE(row.accepted.empty()) << where << " has an empty accepted column";
      EXPECT_NE(Normalized(flag.description).find(Normalized(row.accepted)),
                std::string::npos)
          << where << "'s accepted column '" << row.accepted
          << "' is not quoted from its help text: " << flag.description;
    }
  }
  for (const auto& [name, row] : rows) {
    EXPECT_EQ(library.count(name), 1u)
        << path << ":" << row.line << ": --" << name << " is not a flag the library defines";
  }
}

}  // namespace
}  // namespace spindle
