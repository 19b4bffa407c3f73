// Golden expositions of the "devices" collector and its checks on every sysfs fixture tree (the
// project's own and the real captures, read in place), plus cross-checks of the values against
// node_exporter's golden output and against expected/infiniband_parsed.json.
//
// RDMAHD_UPDATE_GOLDEN=1 rewrites tests/golden/<fixture>.prom instead of comparing.
// The goldens are rendered with the built-in default Config (no policy: port_rate and
// firmware_version report "unknown"), so the daemon started on defaults serves the same text.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/collection_engine.h"
#include "collectors/rdma_devices.h"
#include "tests/support/test_paths.h"
#include "tests/support/topology.h"

namespace rdmahd {
namespace {

using testing::ProjectFixture;
using testing::RealFixture;
using testing::SourceDir;

// The checks this golden covers. Verdict lines of other checks are dropped, so adding a check
// elsewhere does not churn these files.
const std::set<std::string> kOwnChecks = {"port_active", "port_rate", "roce_v2_gid", "firmware_version"};

struct Fixture {
  std::string name;
  std::string sysfs;
  std::string procfs;
};

std::vector<Fixture> Fixtures() {
  return {
      {"mlx5-roce", ProjectFixture("sysfs/mlx5-roce/sys"), "/nonexistent"},
      {"degraded", ProjectFixture("sysfs/degraded/sys"), "/nonexistent"},
      {"node-exporter-fixtures", RealFixture("sysfs/node-exporter-fixtures/sys"),
       RealFixture("sysfs/node-exporter-fixtures/proc")},
      {"procfs-fixtures", RealFixture("sysfs/procfs-fixtures/sys"), RealFixture("sysfs/procfs-fixtures/proc")},
  };
}

std::string Scrape(const Fixture& f) {
  CollectionEngine engine(NodeFs(f.sysfs, f.procfs), {"devices"});
  auto config = std::make_shared<Config>();
  config->scrape_cache_window = std::chrono::milliseconds(0);
  return engine.ScrapeText(config);
}

// Masks run-dependent values and drops verdicts of checks this golden does not own.
std::string Normalize(const std::string& text) {
  std::istringstream in(text);
  std::string out, line;
  const std::string kDuration = "rdma_healthd_collector_duration_seconds{";
  const std::string kStatus = "rdma_check_status{check=\"";
  while (std::getline(in, line)) {
    if (line.rfind(kDuration, 0) == 0) {
      line = line.substr(0, line.rfind(' ')) + " <masked>";
    } else if (line.rfind(kStatus, 0) == 0) {
      std::string check = line.substr(kStatus.size(), line.find('"', kStatus.size()) - kStatus.size());
      if (!kOwnChecks.contains(check)) continue;
    }
    out += line + "\n";
  }
  return out;
}

std::string ReadAll(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// ---------------------------------------------------------------------------------------------
// Exposition text parsing (enough of the format for the comparisons below).

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

std::vector<Sample> ParseExposition(const std::string& text) {
  std::vector<Sample> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    Sample s;
    std::size_t i = line.find_first_of("{ ");
    s.name = line.substr(0, i);
    if (line[i] == '{') {
      ++i;
      while (line[i] != '}') {
        std::size_t eq = line.find('=', i);
        std::string key = line.substr(i, eq - i);
        std::string value;
        i = eq + 2;  // past ="
        for (; line[i] != '"'; ++i) {
          if (line[i] == '\\') ++i;
          value += line[i];
        }
        ++i;  // closing quote
        if (line[i] == ',') ++i;
        s.labels[key] = value;
      }
      ++i;
    }
    s.value = std::strtod(line.c_str() + i, nullptr);
    out.push_back(std::move(s));
  }
  return out;
}

const Sample* Find(const std::vector<Sample>& samples, const std::string& name,
                   const std::map<std::string, std::string>& labels) {
  for (const Sample& s : samples) {
    if (s.name != name) continue;
    bool match = true;
    for (const auto& [k, v] : labels) {
      auto it = s.labels.find(k);
      if (it == s.labels.end() || it->second != v) match = false;
    }
    if (match) return &s;
  }
  return nullptr;
}

bool PromtoolAccepts(const std::string& text, std::string& output) {
  if (std::system("command -v promtool >/dev/null 2>&1") != 0) {
    output = "promtool not found: install Debian's prometheus package (scripts/install-deps.sh test)";
    return false;
  }
  char tmpl[] = "/tmp/rdmahd-golden-XXXXXX";
  int fd = ::mkstemp(tmpl);
  if (fd < 0) return false;
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  if (!written) {
    ::unlink(tmpl);
    output = std::string("cannot write ") + tmpl;
    return false;
  }
  std::string cmd = std::string("promtool check metrics < ") + tmpl + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  char buf[512];
  while (p && std::fgets(buf, sizeof buf, p)) output += buf;
  int rc = p ? ::pclose(p) : -1;
  ::unlink(tmpl);
  // Lint findings are printed but do not change the exit code: any output is a failure.
  return rc == 0 && output.empty();
}

// ---------------------------------------------------------------------------------------------

TEST(GoldenTest, DevicesExpositionMatchesGoldenFiles) {
  ASSERT_TRUE(testing::RealFixturesAvailable()) << "real captures missing: " << RealFixture("");
  const bool update = std::getenv("RDMAHD_UPDATE_GOLDEN") != nullptr &&
                      std::string(std::getenv("RDMAHD_UPDATE_GOLDEN")) == "1";
  for (const Fixture& f : Fixtures()) {
    SCOPED_TRACE(f.name);
    const std::string raw = Scrape(f);
    const std::string actual = Normalize(raw);
    // Deterministic: a second engine renders byte-identical text.
    EXPECT_EQ(Normalize(Scrape(f)), actual);
    std::string lint;
    EXPECT_TRUE(PromtoolAccepts(raw, lint)) << lint;

    const std::string path = SourceDir() + "/tests/golden/" + f.name + ".prom";
    if (update) {
      std::ofstream(path, std::ios::trunc) << actual;
      continue;
    }
    EXPECT_EQ(ReadAll(path), actual) << "golden " << path
                                     << " differs; rerun with RDMAHD_UPDATE_GOLDEN=1 if the change is intended";
  }
}

// docs/metrics.md's devices section lists exactly the families the collector exposes on the
// fixtures (each row is exposed by some fixture, each exposed family has a row).
TEST(GoldenTest, MetricsDocListsExactlyTheDevicesFamilies) {
  std::set<std::string> exposed;
  for (const Fixture& f : Fixtures()) {
    for (const Sample& s : ParseExposition(Scrape(f))) {
      if (s.name.rfind("rdma_healthd_", 0) != 0 && s.name != "rdma_check_status") exposed.insert(s.name);
    }
  }
  std::set<std::string> documented;
  std::istringstream doc(ReadAll(SourceDir() + "/docs/metrics.md"));
  std::string line;
  bool in_section = false;
  while (std::getline(doc, line)) {
    if (line.rfind("## ", 0) == 0) in_section = line.find("collector `devices`") != std::string::npos;
    if (in_section && line.rfind("| `", 0) == 0) documented.insert(line.substr(3, line.find('`', 3) - 3));
  }
  EXPECT_EQ(documented, exposed);
}

// Every node_infiniband_* value node_exporter exports for its own fixture tree must agree with
// ours: node_infiniband_X -> rdma_port_X (node_exporter's "port_" prefix dropped), and
// node_infiniband_info -> rdma_device_info labels.
TEST(GoldenTest, AgreesWithNodeExporterOnItsFixtureTree) {
  const auto expected = ParseExposition(ReadAll(RealFixture("expected/node_exporter_e2e_selected.prom")));
  const auto ours = ParseExposition(Scrape({"node-exporter-fixtures", RealFixture("sysfs/node-exporter-fixtures/sys"),
                                            RealFixture("sysfs/node-exporter-fixtures/proc")}));
  const std::string kPrefix = "node_infiniband_";
  std::map<std::string, int> expected_per_family;
  int compared = 0;
  for (const Sample& e : expected) {
    if (e.name.rfind(kPrefix, 0) != 0) continue;
    std::string stem = e.name.substr(kPrefix.size());
    SCOPED_TRACE(e.name + " device=" + e.labels.at("device"));
    if (stem == "info") {
      const Sample* s = Find(ours, "rdma_device_info", {{"device", e.labels.at("device")}});
      ASSERT_NE(s, nullptr);
      for (const char* label : {"board_id", "firmware_version", "hca_type"}) {
        EXPECT_EQ(s->labels.at(label), e.labels.at(label)) << label;
      }
      ++compared;
      continue;
    }
    if (stem.rfind("port_", 0) == 0) stem = stem.substr(5);
    const std::string name = "rdma_port_" + stem;
    ++expected_per_family[name];
    const Sample* s = Find(ours, name, {{"device", e.labels.at("device")}, {"port", e.labels.at("port")}});
    ASSERT_NE(s, nullptr) << "missing " << name;
    EXPECT_NEAR(s->value, e.value, std::abs(e.value) * 1e-12) << name;
    ++compared;
  }
  // No series node_exporter leaves out (N/A values, files a port lacks) may appear in ours.
  for (const auto& [name, count] : expected_per_family) {
    int ours_count = 0;
    for (const Sample& s : ours) ours_count += s.name == name;
    EXPECT_EQ(ours_count, count) << name;
  }
  EXPECT_EQ(compared, 51);  // every node_infiniband_* sample in the capture
}

// Facts against the independently derived expected/infiniband_parsed.json (both real trees).
TEST(GoldenTest, FactsAgreeWithParsedJson) {
  const auto json = nlohmann::json::parse(ReadAll(RealFixture("expected/infiniband_parsed.json")));
  int compared = 0;
  for (const auto& [tree, devices] : json.items()) {
    RdmaDevicesCollector collector;
    NodeFs fs(RealFixture("sysfs/" + tree + "/sys"), "/nonexistent");
    Config config;
    Snapshot snapshot;
    CollectorOutcome outcome;
    Topology topology = testing::DiscoverTopology(fs, config);
    ASSERT_TRUE(collector.Collect(CollectContext{fs, config, topology}, snapshot, outcome).ok());
    const auto* facts = snapshot.Get<RdmaDevicesFacts>();
    ASSERT_NE(facts, nullptr);
    ASSERT_EQ(facts->devices.size(), devices.size()) << tree;
    for (const RdmaDeviceFacts& d : facts->devices) {
      SCOPED_TRACE(tree + "/" + d.name);
      const auto& jd = devices.at(d.name);
      auto trimmed = [](const nlohmann::json& j, const char* key) -> std::optional<std::string> {
        if (!j.contains(key)) return std::nullopt;
        std::string v = j.at(key).get<std::string>();
        while (!v.empty() && v.back() == '\n') v.pop_back();
        return v;
      };
      EXPECT_EQ(d.fw_ver, trimmed(jd, "fw_ver"));
      EXPECT_EQ(d.board_id, trimmed(jd, "board_id"));
      EXPECT_EQ(d.hca_type, trimmed(jd, "hca_type"));
      EXPECT_EQ(d.node_guid, trimmed(jd, "node_guid"));
      ASSERT_EQ(d.ports.size(), jd.at("ports").size());
      for (const RdmaPortFacts& p : d.ports) {
        const auto& jp = jd.at("ports").at(std::to_string(p.port));
        ASSERT_TRUE(p.state && p.phys_state && p.rate_bytes_per_second);
        EXPECT_EQ(p.state->id, jp.at("state_id").get<std::uint32_t>());
        EXPECT_EQ(p.state->name, jp.at("state").get<std::string>());
        EXPECT_EQ(p.phys_state->id, jp.at("phys_state_id").get<std::uint32_t>());
        EXPECT_EQ(*p.rate_bytes_per_second, jp.at("rate_bytes_per_sec").get<std::uint64_t>());
        const TopologyDevice* td = topology.FindDevice(d.name);
        ASSERT_NE(td, nullptr);
        std::optional<std::string> link_layer;
        for (const TopologyPort& tp : td->ports) {
          if (tp.port == p.port) link_layer = tp.link_layer;
        }
        EXPECT_EQ(link_layer, jp.at("link_layer").get<std::string>());
        compared += 5;
        for (const auto& [dir, values] : {std::pair{"counters", &p.counters}, std::pair{"counters_ext", &p.counters_ext},
                                          std::pair{"hw_counters", &p.hw_counters}}) {
          if (!jp.contains(dir)) {
            EXPECT_TRUE(values->empty()) << dir;
            continue;
          }
          std::size_t present = 0;
          for (const auto& [key, v] : jp.at(dir).items()) {
            if (key.ends_with("__bytes_x4")) continue;  // derived; the raw words are compared
            std::string file = key.ends_with("__raw_words") ? key.substr(0, key.size() - 11) : key;
            if (v.is_object()) {  // {"unparseable": "N/A (no PMA)"}: absent, not zero
              EXPECT_FALSE(values->contains(file)) << dir << "/" << file;
              continue;
            }
            ASSERT_TRUE(values->contains(file)) << dir << "/" << file;
            EXPECT_EQ(values->at(file), v.get<std::uint64_t>()) << dir << "/" << file;
            ++present;
            ++compared;
          }
          EXPECT_EQ(values->size(), present) << dir;
        }
      }
    }
  }
  EXPECT_GT(compared, 150);
}

}  // namespace
}  // namespace rdmahd
