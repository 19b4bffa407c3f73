// The labelled verdict corpus (tests/corpus/*.yaml): real-world scenarios built from real captures
// (../shared/fixtures/real, read in place) and the project's fixture trees, each with the verdicts an
// expert would give, healthy nodes that must stay quiet among them. Every scenario runs the way
// `rdma-healthd check` does (its flags, its config loading, one engine), collection after collection
// with the files changed in between as the kernel would change them, and its verdicts are compared
// with the labels. The test prints every disagreement as a false failure, a false warning, a missed
// fault or a wrong reason, then the totals, and fails on any. tests/corpus/README.md has the format.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/parse.h"
#include "core/collection_engine.h"
#include "core/check.h"
#include "core/collector.h"
#include "daemon/daemon.h"
#include "daemon/options.h"
#include "tests/support/test_paths.h"

namespace rdmahd {
namespace {

namespace fs = std::filesystem;

// A scenario names its inputs as "fixtures:REL" (tests/fixtures/REL) or "real:REL"
// (../shared/fixtures/real/REL).
std::string Source(const std::string& ref) {
  if (ref.rfind("fixtures:", 0) == 0) return testing::ProjectFixture(ref.substr(9));
  if (ref.rfind("real:", 0) == 0) return testing::RealFixture(ref.substr(5));
  throw std::runtime_error("a source must start with fixtures: or real:, got " + ref);
}

std::string ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// `rel` under `root`, refused when it would leave it (through "..", or a symlink of the copied tree
// that points out of it): the test writes only inside its own temporary folder.
fs::path Inside(const fs::path& root, const std::string& rel) {
  const fs::path p = fs::weakly_canonical(root / rel);
  const fs::path r = fs::canonical(root);
  const auto [end, _] = std::mismatch(r.begin(), r.end(), p.begin(), p.end());
  if (end != r.end()) throw std::runtime_error(rel + " leaves the scenario's tree");
  return p;
}

// Rewrites a file in place (same inode, as sysfs values change under a held descriptor).
void WriteInPlace(const fs::path& path, const std::string& content) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::in | std::ios::out | std::ios::trunc);
  if (!out) out.open(path, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error("cannot write " + path.string());
  out << content;
}

// Counter files from a real dump: "=== ./name ===\nvalue" (a `cat` loop over a counters folder),
// "name value" pairs on one or more lines (`rdma statistic show`, whose first words are "link
// DEV/PORT"), or "name: value" lines (`ethtool -S`, `show_counters`).
// `link` ("mlx5_0/1") picks one port's pairs from an `rdma statistic show` of several.
std::map<std::string, std::string> ParseDump(const std::string& text, const std::string& format,
                                             const std::string& link) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  std::string line;
  if (format == "cat_loop") {
    std::string name;
    while (std::getline(in, line)) {
      if (line.rfind("=== ./", 0) == 0) {
        name = line.substr(6, line.find(' ', 6) - 6);
      } else if (!name.empty() && !line.empty()) {
        out[name] = line;
        name.clear();
      }
    }
  } else if (format == "rdma_statistic") {
    std::vector<std::string> words;
    std::string w;
    while (in >> w) words.push_back(w);
    bool wanted = link.empty();
    for (std::size_t i = 0; i + 1 < words.size(); ++i) {
      if (words[i] == "link") {
        wanted = link.empty() || words[i + 1] == link;
        ++i;
        continue;
      }
      if (wanted && ParseU64(words[i + 1])) {
        out[words[i]] = words[i + 1];
        ++i;
      }
    }
  } else if (format == "colon") {
    while (std::getline(in, line)) {
      const std::size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      const std::string value(Trim(std::string_view(line).substr(colon + 1)));
      if (ParseU64(value)) out[std::string(Trim(std::string_view(line).substr(0, colon)))] = value;
    }
  } else {
    throw std::runtime_error("unknown dump format " + format);
  }
  return out;
}

std::vector<std::string> Strings(const YAML::Node& n) {
  std::vector<std::string> out;
  if (!n) return out;
  if (n.IsSequence()) {
    for (const auto& e : n) out.push_back(e.as<std::string>());
  } else {
    out.push_back(n.as<std::string>());
  }
  return out;
}

// One collection's changes to the tree: write (whole files), add (to a counter's value; a big
// number as text), import (counter files from a real dump), copy (a real file in place), remove
// (a file, or a device's link in class/: the device vanished).
void ApplySample(const YAML::Node& sample, const fs::path& sysfs) {
  if (!sample) return;
  for (const auto& r : sample["remove"]) {
    const std::string rel = r.as<std::string>();
    const fs::path link = sysfs / rel;  // the link itself, not where it points
    Inside(sysfs, fs::path(rel).parent_path().string());
    if (!fs::remove(link)) throw std::runtime_error("remove: " + rel + " does not exist");
  }
  for (const auto& c : sample["copy"]) {
    WriteInPlace(Inside(sysfs, c.second.as<std::string>()), ReadWhole(Source(c.first.as<std::string>())));
  }
  for (const auto& imp : sample["import"]) {
    const auto values = ParseDump(ReadWhole(Source(imp["from"].as<std::string>())), imp["format"].as<std::string>(),
                                  imp["link"] ? imp["link"].as<std::string>() : "");
    const std::vector<std::string> only = Strings(imp["only"]);
    const std::string into = imp["into"].as<std::string>();
    for (const auto& [name, value] : values) {
      if (!only.empty() && std::find(only.begin(), only.end(), name) == only.end()) continue;
      WriteInPlace(Inside(sysfs, into + "/" + name), value + "\n");
    }
  }
  for (const auto& w : sample["write"]) {
    WriteInPlace(Inside(sysfs, w.first.as<std::string>()), w.second.as<std::string>());
  }
  for (const auto& a : sample["add"]) {
    const fs::path p = Inside(sysfs, a.first.as<std::string>());
    const auto before = ParseU64(Trim(ReadWhole(p.string())));
    const auto by = ParseU64(a.second.as<std::string>());
    if (!before || !by) throw std::runtime_error("add: " + a.first.as<std::string>() + " is not a counter");
    WriteInPlace(p, std::to_string(*before + *by) + "\n");
  }
}

// The saved kernel log of a scenario: real lines (with a device's address put in place of the
// captured one, so the events are about this tree's NIC), lines built from a driver's format
// strings, and repeats of a line (a flood).
std::string KernelLog(const YAML::Node& parts) {
  std::string out;
  double t = 1000.0;  // dmesg's [seconds] for lines given without one
  auto stamp = [&t](const std::string& line) {
    if (line.empty() || line[0] == '<') return line;
    if (line[0] == '[') {  // a real line's own time: the built lines that follow come after it
      if (const auto secs = ParseDouble(Trim(std::string_view(line).substr(1, line.find(']') - 1)))) t = *secs + 0.001;
      return line;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, "[%12.6f] ", t);
    t += 0.001;
    return std::string(buf) + line;
  };
  for (const auto& part : parts) {
    std::string text;
    if (part["real"]) {
      text = ReadWhole(Source("real:" + part["real"].as<std::string>()));
    } else if (part["lines"]) {
      text = part["lines"].as<std::string>();
    }
    for (const auto& r : part["replace"]) {
      const std::string from = r.first.as<std::string>(), to = r.second.as<std::string>();
      for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
        text.replace(at, from.size(), to);
      }
    }
    const std::size_t repeat = part["repeat"] ? part["repeat"].as<std::size_t>() : 1;
    for (std::size_t i = 0; i < repeat; ++i) {
      std::istringstream in(text);
      std::string line;
      while (std::getline(in, line)) {
        if (line.rfind("[... ", 0) == 0) continue;  // an excerpt's marker, not the tool's output
        out += stamp(line) + "\n";
      }
    }
  }
  return out;
}

struct Label {
  std::string check, subject;
  std::set<std::string> statuses;  // any of these
  std::vector<std::string> reason, not_reason, fix;
};

struct Tally {
  std::size_t scenarios = 0, verdicts = 0, false_failures = 0, false_warnings = 0, missed = 0, wrong_reason = 0,
              absent = 0;
  std::vector<std::string> lines;
  std::size_t total() const { return false_failures + false_warnings + missed + wrong_reason + absent; }
};

// Compares one verdict with its label; an unlabelled verdict of a judged check must be quiet.
void Judge(const std::string& scenario, const VerdictView& v, const Label* label, Tally& tally) {
  const std::string got(VerdictName(v.verdict));
  if (std::getenv("RDMAHD_CORPUS_VERBOSE") != nullptr) {  // every verdict, to read the reasons an operator gets
    std::cout << scenario << "  " << v.check << " " << v.subject << ": " << got << ": " << v.reason << "\n      fix: "
              << v.fix << "\n";
  }
  const std::set<std::string> want = label ? label->statuses : std::set<std::string>{"ok", "unknown"};
  ++tally.verdicts;
  auto line = [&](const std::string& kind, const std::string& detail) {
    tally.lines.push_back(kind + "  " + scenario + "  " + std::string(v.check) + " " + std::string(v.subject) + ": " +
                          detail + "\n      reason: " + std::string(v.reason));
  };
  if (!want.contains(got)) {
    std::string wanted;
    for (const auto& w : want) wanted += (wanted.empty() ? "" : "|") + w;
    const std::string detail = "expected " + wanted + ", got " + got;
    if (got == "failed") {
      ++tally.false_failures;
      line("FALSE FAILURE", detail);
    } else if (got == "warning" && !want.contains("failed")) {
      ++tally.false_warnings;
      line("FALSE WARNING", detail);
    } else {
      ++tally.missed;
      line("MISSED FAULT ", detail);
    }
    return;
  }
  if (label == nullptr) return;
  for (const auto& s : label->reason) {
    if (v.reason.find(s) == std::string_view::npos) {
      ++tally.wrong_reason;
      line("WRONG REASON ", "the reason lacks \"" + s + "\"");
    }
  }
  for (const auto& s : label->not_reason) {
    if (v.reason.find(s) != std::string_view::npos) {
      ++tally.wrong_reason;
      line("WRONG REASON ", "the reason says \"" + s + "\"");
    }
  }
  for (const auto& s : label->fix) {
    if (v.fix.find(s) == std::string_view::npos) {
      ++tally.wrong_reason;
      line("WRONG FIX    ", "the fix lacks \"" + s + "\"; fix: " + std::string(v.fix));
    }
  }
}

void RunScenario(const fs::path& file, Tally& tally) {
  const std::string name = file.stem().string();
  const YAML::Node s = YAML::LoadFile(file.string());
  testing::TempDir tmp;
  const fs::path root = tmp.path();
  const fs::path sysfs = root / "sys";
  if (s["tree"]) {
    fs::copy(Source(s["tree"].as<std::string>()), sysfs, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  } else {
    fs::create_directories(sysfs / "class" / "infiniband");
  }
  std::vector<std::string> args = {"rdma-healthd", "check", "--path.sysfs=" + sysfs.string()};
  args.push_back("--path.procfs=" + (s["procfs"] ? Source(s["procfs"].as<std::string>()) : (root / "no-proc").string()));
  args.push_back("--path.dcb=" + Source(s["dcb"] ? s["dcb"].as<std::string>() : "fixtures:empty-dcb"));
  if (s["kmsg"]) {
    WriteInPlace(root / "kmsg.log", KernelLog(s["kmsg"]));
    args.push_back("--path.kmsg=" + (root / "kmsg.log").string());
  }
  if (s["config"]) {
    WriteInPlace(root / "config.yaml", s["config"].as<std::string>());
    args.push_back("--config.file=" + (root / "config.yaml").string());
  }
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  const Options options = ParseOptions(static_cast<int>(argv.size()), argv.data(), CollectorRegistry().Names());
  ASSERT_EQ(options.mode, Mode::kCheck) << name << ": " << options.exit_message;
  auto config = LoadEffectiveConfig(options);
  ASSERT_TRUE(config.ok()) << name << ": " << config.error().message;

  CollectionEngine engine(MakeNodeFs(options));
  std::shared_ptr<const Report> report;
  const YAML::Node samples = s["samples"];
  const std::size_t collections = samples ? std::max<std::size_t>(samples.size(), 1) : 1;
  for (std::size_t i = 0; i < collections; ++i) {
    if (samples) ApplySample(samples[i], sysfs);
    if (i > 0) std::this_thread::sleep_for((*config)->scrape_cache_window + std::chrono::milliseconds(20));
    report = engine.Collect(*config);
  }

  std::vector<Label> labels;
  for (const auto& e : s["expect"]) {
    Label l;
    l.check = e["check"].as<std::string>();
    l.subject = e["subject"].as<std::string>();
    for (const auto& st : Strings(e["status"])) l.statuses.insert(st);
    l.reason = Strings(e["reason"]);
    l.not_reason = Strings(e["not_reason"]);
    l.fix = Strings(e["fix"]);
    labels.push_back(std::move(l));
  }
  std::set<std::string> judged;
  for (const auto& c : Strings(s["judge"])) judged.insert(c);
  for (const Label& l : labels) judged.insert(l.check);

  std::vector<bool> found(labels.size(), false);
  for (const VerdictView& v : report->verdicts) {
    if (!judged.contains(std::string(v.check))) continue;
    const Label* label = nullptr;
    for (std::size_t i = 0; i < labels.size(); ++i) {
      if (labels[i].check == v.check && labels[i].subject == v.subject) {
        label = &labels[i];
        found[i] = true;
      }
    }
    Judge(name, v, label, tally);
  }
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (found[i]) continue;
    ++tally.absent;
    tally.lines.push_back("NO VERDICT     " + name + "  " + labels[i].check + " " + labels[i].subject);
  }
  ++tally.scenarios;
}

TEST(VerdictCorpusTest, EveryScenarioGetsTheVerdictsAnExpertGives) {
  // The corpus is built from the real captures: without them it cannot run, and that is a failure.
  ASSERT_TRUE(testing::RealFixturesAvailable()) << "../shared/fixtures/real is missing";
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(testing::SourceDir() + "/tests/corpus")) {
    if (e.path().extension() == ".yaml") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 20u) << "the corpus shrank";
  Tally tally;
  for (const fs::path& f : files) {
    SCOPED_TRACE(f.filename().string());
    try {
      RunScenario(f, tally);
    } catch (const std::exception& e) {
      ADD_FAILURE() << f.filename().string() << ": " << e.what();
    }
  }
  for (const auto& l : tally.lines) std::cout << l << "\n";
  std::cout << "verdict corpus: " << tally.scenarios << " scenarios, " << tally.verdicts << " verdicts judged: "
            << tally.false_failures << " false failures, " << tally.false_warnings << " false warnings, "
            << tally.missed << " missed faults, " << tally.wrong_reason << " wrong reasons or fixes, " << tally.absent
            << " verdicts missing\n";
  EXPECT_EQ(tally.total(), 0u) << "see the lines above";
}

}  // namespace
}  // namespace rdmahd
