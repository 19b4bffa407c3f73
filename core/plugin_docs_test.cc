// README's "Adding a collector, a check or a probe" is what a contributor follows: the macros,
// the CMake lists and the headers it names must exist and say the same.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <string>

#include "common/node_fs.h"
#include "tests/support/test_paths.h"

namespace rdmahd {
namespace {

std::string Source(const std::string& rel) {
  auto text = ReadRegularFile(testing::SourceDir() + "/" + rel, std::size_t{1} << 20);
  EXPECT_TRUE(text.ok()) << rel;
  return text.ok() ? *text : "";
}

struct Kind {
  const char* macro;
  const char* cmake_list;
  const char* header;
};

TEST(PluginDocsTest, ReadmeHeadersAndCMakeAgreeOnHowToAddAPlugin) {
  const std::string readme = Source("README.md");
  const std::string cmake = Source("CMakeLists.txt");
  const auto section_at = readme.find("## Adding a collector, a check or a probe");
  ASSERT_NE(section_at, std::string::npos) << "README.md lost its section on adding plug-ins";
  const std::string section = readme.substr(section_at, readme.find("\n## ", section_at + 1) - section_at);
  for (const Kind& k : {Kind{"RDMAHD_REGISTER_COLLECTOR", "RDMAHD_COLLECTOR_SOURCES", "core/collector.h"},
                        Kind{"RDMAHD_REGISTER_CHECK", "RDMAHD_CHECK_SOURCES", "core/check.h"},
                        Kind{"RDMAHD_REGISTER_PROBE", "RDMAHD_PROBE_SOURCES", "core/probe.h"}}) {
    SCOPED_TRACE(k.macro);
    const std::string header = Source(k.header);
    EXPECT_NE(section.find(std::string(k.macro) + "(\"name\", Type, \"description\")"), std::string::npos);
    EXPECT_NE(section.find(k.cmake_list), std::string::npos);
    EXPECT_NE(section.find(k.header), std::string::npos);
    EXPECT_NE(header.find("#define " + std::string(k.macro) + "(name, Type, description)"), std::string::npos)
        << k.header << " does not define the macro README shows";
    EXPECT_NE(header.find(k.cmake_list), std::string::npos) << k.header << " does not name the CMake list";
    EXPECT_NE(cmake.find("set(" + std::string(k.cmake_list)), std::string::npos) << "CMakeLists.txt has no " << k.cmake_list;
    EXPECT_NE(cmake.find("${" + std::string(k.cmake_list) + "}"), std::string::npos)
        << k.cmake_list << " is not built into the core";
  }
}

// The dependency rule of the layout (README.md, "Layout"), over the non-test sources: core/ and
// facts/ include neither collectors/ nor checks/; checks/ include no collector; collectors/ include
// no check; parsers/ include only common/, facts/ and each other (no reader, no plug-in).
TEST(PluginDocsTest, CollectorsAndChecksMeetOnlyInCoreAndFacts) {
  const std::regex include(R"re(#include "([a-z_]+)/[^"]+")re");
  struct Rule {
    const char* dir;
    std::vector<std::string> forbidden;
  };
  int files = 0;
  for (const Rule& rule : {Rule{"core", {"collectors", "checks", "daemon"}}, Rule{"facts", {"collectors", "checks", "daemon"}},
                           Rule{"checks", {"collectors", "daemon"}}, Rule{"collectors", {"checks", "daemon"}},
                           Rule{"parsers", {"collectors", "checks", "core", "config", "probes", "daemon"}}}) {
    for (const auto& entry : std::filesystem::directory_iterator(testing::SourceDir() + "/" + rule.dir)) {
      const std::string name = entry.path().filename().string();
      if (name.ends_with("_test.cc") || !(name.ends_with(".cc") || name.ends_with(".h"))) continue;
      ++files;
      const std::string text = Source(std::string(rule.dir) + "/" + name);
      for (auto it = std::sregex_iterator(text.begin(), text.end(), include); it != std::sregex_iterator(); ++it) {
        const std::string dir = (*it)[1];
        for (const std::string& bad : rule.forbidden) {
          EXPECT_NE(dir, bad) << rule.dir << "/" << name << " includes " << (*it)[0];
        }
      }
    }
  }
  EXPECT_GT(files, 30);
}

}  // namespace
}  // namespace rdmahd
