// README's "Adding a collector, a check or a probe" is what a contributor follows: the macros,
// the CMake lists and the headers it names must exist and say the same.
#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <regex>
#include <sstream>
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

// The rooms of the layout (README.md, "Layout"), left to right, each with its floor: a non-test
// source includes its own room and rooms on a lower floor only. collectors/, checks/ and probes/
// share a floor and never include each other. README states the same order.
struct Room {
  const char* name;
  int floor;
};
constexpr Room kRooms[] = {{"common", 0},     {"config", 1}, {"core", 2},   {"facts", 3},  {"parsers", 4},
                           {"collectors", 5}, {"checks", 5}, {"probes", 5}, {"daemon", 6}};
constexpr const char* kRoomOrder = "common <- config <- core <- facts <- parsers <- collectors/checks/probes <- daemon";

std::optional<int> FloorOf(const std::string& dir) {
  for (const Room& room : kRooms) {
    if (dir == room.name) return room.floor;
  }
  return std::nullopt;
}

TEST(PluginDocsTest, RoomsDependOneWay) {
  EXPECT_NE(Source("README.md").find(kRoomOrder), std::string::npos) << "README.md does not state " << kRoomOrder;
  const std::regex include(R"re(^\s*#\s*include\s*"([^"]*)")re");
  int files = 0;
  for (const Room& room : kRooms) {
    for (const auto& entry : std::filesystem::directory_iterator(testing::SourceDir() + "/" + room.name)) {
      const std::string name = entry.path().filename().string();
      if (name.ends_with("_test.cc") || !(name.ends_with(".cc") || name.ends_with(".h"))) continue;
      ++files;
      std::istringstream lines(Source(std::string(room.name) + "/" + name));
      for (std::string line; std::getline(lines, line);) {
        std::smatch m;
        if (!std::regex_search(line, m, include)) continue;
        const std::string path = m[1];
        const std::string dir = path.substr(0, path.find('/'));
        if (dir == room.name) continue;
        const std::optional<int> floor = FloorOf(dir);
        EXPECT_TRUE(floor && *floor < room.floor)
            << room.name << "/" << name << " includes \"" << path << "\": a room includes only itself and the rooms "
            << "to its left (" << kRoomOrder << "); collectors/, checks/ and probes/ never include each other";
      }
    }
  }
  EXPECT_GT(files, 200);
}

}  // namespace
}  // namespace rdmahd
