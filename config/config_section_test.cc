// Config sections owned by plug-ins (config/config_section.h): typed access, defaults, copies, and
// the order the loader lists them in.
#include "config/config_section.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "core/collection_engine.h"

namespace rdmahd {
namespace {

// A type no plug-in registers: a Config still answers with its built-in defaults.
struct UnregisteredPolicy {
  int knob = 7;
};

TEST(ConfigSectionTest, AnUnsetSectionHasItsBuiltInDefaults) {
  const Config c;
  EXPECT_EQ(c.Section<UnregisteredPolicy>().knob, 7);
  EXPECT_TRUE(c.Section<RocePolicy>().require_ecn);
  EXPECT_FALSE(c.Section<RocePolicy>().priority);
  EXPECT_EQ(c.Section<PeersPolicy>().port, 18600);
}

TEST(ConfigSectionTest, ACopyIsIndependentOfTheConfigItCameFrom) {
  Config a;
  a.Section<RocePolicy>().priority = 3;
  const Config b = a;  // shares the section until one of them changes it
  Config c = a;
  c.Section<RocePolicy>().priority = 5;
  c.Section<UnregisteredPolicy>().knob = 1;
  EXPECT_EQ(a.Section<RocePolicy>().priority, 3);
  EXPECT_EQ(b.Section<RocePolicy>().priority, 3);
  EXPECT_EQ(c.Section<RocePolicy>().priority, 5);
  EXPECT_EQ(std::as_const(a).Section<UnregisteredPolicy>().knob, 7);
  EXPECT_EQ(c.Section<UnregisteredPolicy>().knob, 1);
}

TEST(ConfigSectionTest, ParsedValuesLandInTheOwningPluginsSection) {
  Result<Config> r = ParseConfig("roce: {priority: 3}\nhost: {cpu_governor: performance}\n", "t.yaml",
                                 RegisteredPluginNames());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->Section<RocePolicy>().priority, 3);
  EXPECT_EQ(r->Section<CpuGovernorPolicy>().governor, "performance");
  EXPECT_EQ(r->Section<PortPolicy>().require_active, true);  // not in the file: default
}

std::vector<std::string> Children(const std::string& parent) {
  std::vector<std::string> out;
  for (const ConfigSectionEntry& s : ConfigSections()) {
    const auto dot = s.path.rfind('.');
    if ((dot == std::string::npos ? "" : s.path.substr(0, dot)) == parent) out.push_back(s.path);
  }
  return out;
}

// Messages that list the valid keys list them in this order; registration order across files is
// not defined, so the registered `order` decides.
TEST(ConfigSectionTest, SectionsAreListedInTheirRegisteredOrder) {
  // The sections messages have always listed, in their old order; a new plug-in's section may
  // come anywhere its order puts it.
  auto in_order = [](const std::vector<std::string>& listed, const std::vector<std::string>& expected) {
    std::vector<std::string> kept;
    for (const auto& s : listed) {
      if (std::find(expected.begin(), expected.end(), s) != expected.end()) kept.push_back(s);
    }
    return kept == expected;
  };
  EXPECT_TRUE(in_order(Children(""), {"ports", "limits", "firmware", "roce", "host", "peers"}));
  EXPECT_TRUE(in_order(Children("host"), {"host.hugepages", "host.memlock", "host.workload_numa", "host.workloads",
                                          "host.device_access", "host.cpu_governor", "host.link_flaps"}));
  EXPECT_FALSE(in_order(Children(""), {"roce", "ports"}));  // the helper can tell
  Result<Config> r = ParseConfig("host: {cpu_govenor: performance}\n", "t.yaml", RegisteredPluginNames());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "t.yaml:1:8: unknown key \"cpu_govenor\" in host (did you mean \"cpu_governor\"?)");
}

}  // namespace
}  // namespace rdmahd
