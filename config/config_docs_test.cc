// docs/configuration.md against what is registered: every key a config file may set (the loader's
// own and every plug-in's section, config/config_section.h) has a row with its default in the
// reference's tables, no row names a key the loader does not have, and the registered key lists
// match what the loader accepts.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "config/config_section.h"
#include "core/collection_engine.h"
#include "tests/support/test_paths.h"

namespace rdmahd {
namespace {

std::vector<std::string> SplitCells(const std::string& row) {
  std::vector<std::string> cells;
  std::string cell;
  bool in_code = false;
  for (std::size_t i = 1; i < row.size(); ++i) {  // row[0] is the leading '|'
    const char c = row[i];
    if (c == '`') in_code = !in_code;
    if (c == '\\' && i + 1 < row.size() && row[i + 1] == '|') {  // "\|" inside a cell
      cell += '|';
      ++i;
      continue;
    }
    if (c == '|' && !in_code) {
      const auto b = cell.find_first_not_of(' ');
      const auto e = cell.find_last_not_of(' ');
      cells.push_back(b == std::string::npos ? "" : cell.substr(b, e - b + 1));
      cell.clear();
      continue;
    }
    cell += c;
  }
  return cells;
}

// key -> the "default" column, from every table of docs/configuration.md whose columns start
// "key | type | default". `path_keys`: the keys of type path or whose row says "path".
std::map<std::string, std::string> DocumentedKeys(std::vector<std::string>& duplicates,
                                                  std::set<std::string>* path_keys = nullptr) {
  std::ifstream in(testing::SourceDir() + "/docs/configuration.md");
  EXPECT_TRUE(in.good());
  std::map<std::string, std::string> out;
  std::string line;
  bool in_key_table = false;
  while (std::getline(in, line)) {
    if (line.rfind("|", 0) != 0) {
      in_key_table = false;
      continue;
    }
    const std::vector<std::string> cells = SplitCells(line);
    if (cells.size() >= 3 && cells[0] == "key" && cells[1] == "type" && cells[2] == "default") {
      in_key_table = true;
      continue;
    }
    if (!in_key_table || cells.size() < 3 || cells[0].rfind("---", 0) == 0) continue;
    const std::string& key_cell = cells[0];
    if (key_cell.size() < 2 || key_cell.front() != '`' || key_cell.back() != '`') {
      ADD_FAILURE() << "a row of a key table without a `key`: " << line;
      continue;
    }
    const std::string key = key_cell.substr(1, key_cell.size() - 2);
    if (!out.emplace(key, cells[2]).second) duplicates.push_back(key);
    if (path_keys != nullptr) {
      bool path = cells[1] == "path";
      for (std::size_t i = 2; i < cells.size(); ++i) {
        std::string lower = cells[i];
        std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
        path = path || lower.find("path") != std::string::npos;
      }
      if (path) path_keys->insert(key);
    }
  }
  return out;
}

TEST(ConfigDocsTest, EveryRegisteredKeyIsDocumentedWithItsDefaultAndNothingElse) {
  std::vector<std::string> duplicates;
  const std::map<std::string, std::string> documented = DocumentedKeys(duplicates);
  EXPECT_THAT(duplicates, ::testing::IsEmpty()) << "keys with two rows in docs/configuration.md";
  const std::vector<ConfigKeyDoc> registered = ConfigKeys();
  ASSERT_GT(registered.size(), 50u);  // the loader's and the plug-ins' keys, not an empty registry
  std::set<std::string> registered_names;
  for (const ConfigKeyDoc& k : registered) {
    EXPECT_TRUE(registered_names.insert(k.key).second) << k.key << " registered twice";
    auto it = documented.find(k.key);
    if (it == documented.end()) {
      ADD_FAILURE() << "`" << k.key << "` is registered but has no row in docs/configuration.md";
      continue;
    }
    EXPECT_EQ(it->second, k.default_text) << "the documented default of `" << k.key
                                          << "` differs from the registered one";
  }
  for (const auto& [key, default_text] : documented) {
    EXPECT_TRUE(registered_names.count(key)) << "docs/configuration.md documents `" << key
                                             << "`, which no plug-in (and not the loader) registers";
  }
}

// "a.b[i].c" -> the YAML that sets it to null ("a: {b: [{c: ~}]}"), with `leaf` as the value.
std::string YamlSetting(const std::string& key, const std::string& leaf) {
  std::vector<std::string> parts;
  std::stringstream ss(key);
  for (std::string part; std::getline(ss, part, '.');) parts.push_back(part);
  std::string yaml = leaf;
  for (std::size_t n = parts.size(); n-- > 0;) {
    std::string part = parts[n];
    const bool item = part.size() > 3 && part.ends_with("[i]");
    if (item) part.resize(part.size() - 3);
    if (part == "<name>") part = "devices";  // collectors.devices: a plug-in name the binary has
    yaml = n == 0 ? part + ": " + (item ? "[" + yaml + "]" : yaml)
                  : "{" + part + ": " + (item ? "[" + yaml + "]" : yaml) + "}";
  }
  return yaml;
}

// A bundle's config is read as data about the captured node (ConfigReadOptions::captured_root):
// every key that names a file must be re-rooted under the extraction, so a new path-valued key
// that CapturedPathKeys() (and the re-rooting) does not know fails here.
TEST(ConfigDocsTest, EveryDocumentedPathKeyIsReRootedForACapturedNode) {
  std::vector<std::string> duplicates;
  std::set<std::string> path_keys;
  DocumentedKeys(duplicates, &path_keys);
  const std::set<std::string> rerooted(CapturedPathKeys().begin(), CapturedPathKeys().end());
  EXPECT_EQ(path_keys, rerooted) << "docs/configuration.md's path-valued keys and CapturedPathKeys() differ";
  EXPECT_TRUE(path_keys.count("host.workloads[i].pid_file"));
  EXPECT_TRUE(path_keys.count("peers.file"));
}

TEST(ConfigDocsTest, TheLoaderAcceptsEveryRegisteredKey) {
  for (const ConfigKeyDoc& k : ConfigKeys()) {
    Result<Config> r = ParseConfig(YamlSetting(k.key, "~"), "t.yaml", RegisteredPluginNames());
    // A null keeps the default; a rule or workload left empty fails its own validation, but no
    // key on the way is unknown.
    if (!r.ok()) {
      EXPECT_THAT(r.error().message, ::testing::Not(::testing::HasSubstr("unknown key"))) << k.key;
    }
  }
}

TEST(ConfigDocsTest, TheLoaderAcceptsNoKeyThatIsNotRegistered) {
  const std::vector<ConfigKeyDoc> keys = ConfigKeys();
  std::set<std::string> names, maps = {""};
  for (const ConfigKeyDoc& k : keys) {
    names.insert(k.key);
    for (std::size_t dot = k.key.find('.'); dot != std::string::npos; dot = k.key.find('.', dot + 1)) {
      maps.insert(k.key.substr(0, dot));
      names.insert(k.key.substr(0, dot));
    }
  }
  const std::string bogus(200, 'z');  // too long to be a typo of anything: the message lists all
  std::size_t probed = 0;
  for (const std::string& map : maps) {
    if (map == "collectors" || map == "checks" || map == "probes") continue;  // plug-in names
    const std::string yaml = map.empty() ? bogus + ": 1" : YamlSetting(map + "." + bogus, "1");
    Result<Config> r = ParseConfig(yaml, "t.yaml", RegisteredPluginNames());
    ASSERT_FALSE(r.ok()) << yaml;
    const std::string& m = r.error().message;
    const std::string marker = "(expected one of: ";
    const auto at = m.find(marker);
    ASSERT_NE(at, std::string::npos) << m;
    std::stringstream listed(m.substr(at + marker.size(), m.find(')', at) - at - marker.size()));
    for (std::string key; std::getline(listed, key, ',');) {
      key.erase(0, key.find_first_not_of(' '));
      std::string prefix = map.empty() ? "" : map + ".";
      const std::string full = prefix + key;
      EXPECT_TRUE(names.count(full) || names.count(full + "[i]"))
          << "the loader accepts `" << full << "`, which is not registered (in " << (map.empty() ? "the top level" : map) << ")";
    }
    ++probed;
  }
  EXPECT_GT(probed, 10u);
}

}  // namespace
}  // namespace rdmahd
