// Copyright 2026 The Spindle Authors.
//
// configs/default.flags names every flag the library defines (fiber/, runtime/, sync/,
// timer/, io/), each with its built-in default, unless the comment block right above it
// says why not with the words "not the built-in default". A flag added to the library
// without a line here, a default changed in one place only, or a line for a flag that
// no longer exists fails this test.

#include <fstream>
#include <map>
#include <set>
#include <string>
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

bool DefinedByTheLibrary(const gflags::CommandLineFlagInfo& flag) {
  for (const char* prefix : {"fiber/", "runtime/", "sync/", "timer/", "io/"}) {
    if (flag.filename.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

TEST(DefaultFlagsTest, NamesEveryLibraryFlagWithItsBuiltInDefault) {
  const std::map<std::string, FileFlag> file = ReadFlagFile("configs/default.flags");
  std::vector<gflags::CommandLineFlagInfo> all;
  gflags::GetAllFlags(&all);
  std::set<std::string> library;
  for (const gflags::CommandLineFlagInfo& flag : all) {
    if (!DefinedByTheLibrary(flag)) continue;
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

}  // namespace
}  // namespace spindle
