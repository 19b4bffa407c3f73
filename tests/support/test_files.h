// Reading test inputs: a real capture's file whole, and the metric families a docs/metrics.md
// section lists (tests compare them with what a collector or probe renders).
#pragma once

#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>

#include "common/node_fs.h"
#include "tests/support/test_paths.h"

namespace rdmahd::testing {

// ../shared/fixtures/real/<rel>, whole; empty (and a test failure) when it cannot be read.
inline std::string ReadRealFixture(const std::string& rel) {
  auto text = ReadRegularFile(RealFixture(rel), kMaxAttributeBytes);
  EXPECT_TRUE(text.ok()) << text.error().message;
  return text.ok() ? *text : "";
}

// The families of an exposition (its `# TYPE` lines).
inline std::set<std::string> RenderedFamilies(const std::string& exposition) {
  std::set<std::string> out;
  std::istringstream text(exposition);
  for (std::string line; std::getline(text, line);) {
    if (line.rfind("# TYPE ", 0) == 0) out.insert(line.substr(7, line.find(' ', 7) - 7));
  }
  return out;
}

// The metric names docs/metrics.md lists in the `## ...` section whose heading contains `marker`
// (e.g. "(collector `verbs`)").
inline std::set<std::string> DocumentedFamilies(const std::string& marker) {
  std::set<std::string> out;
  auto doc = ReadRegularFile(SourceDir() + "/docs/metrics.md", std::size_t{1} << 20);
  EXPECT_TRUE(doc.ok()) << doc.error().message;
  if (!doc.ok()) return out;
  std::istringstream lines(*doc);
  bool in_section = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("## ", 0) == 0) in_section = line.find(marker) != std::string::npos;
    if (in_section && line.rfind("| `", 0) == 0) out.insert(line.substr(3, line.find('`', 3) - 3));
  }
  return out;
}

}  // namespace rdmahd::testing
