// ParseConfig / LoadConfigFile: YAML text -> validated Config.
//
// The loader: the size cap, the text and flow pre-scans, one YAML document, then the sections. Its
// own sections (collectors, checks, probes, devices, scrape) are here; every other section is a
// plug-in's (config/config_section.h), walked with the same ConfigWalker (config/config_walker.h)
// so that unknown keys, duplicate keys, wrong node types and positions are handled in one place.
// Every message starts with "SOURCE:LINE:COLUMN:" (1-based) so an editor can jump to it. yaml-cpp
// throws; nothing here lets an exception out of ParseConfig (the edge catches them all).
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <exception>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/excerpt.h"
#include "common/node_fs.h"
#include "config/config.h"
#include "config/config_section.h"
#include "config/config_walker.h"
#include "config/yaml_document.h"
#include "config/yaml_scan.h"

namespace rdmahd {
namespace {

using std::chrono::milliseconds;

// Longer would serve stale data to a scrape that arrives just before the window closes.
constexpr milliseconds kMaxScrapeCacheWindow{250};
// Below 100ms a busy node would fail healthy collectors; above 60s a scrape would outlast
// Prometheus' usual scrape timeout many times over.
constexpr milliseconds kMinCollectionTimeout{100};
constexpr milliseconds kMaxCollectionTimeout{60'000};

using Field = ConfigWalker::Field;

// The registered sections under `parent` ("" for the top level), as walker fields; a group's
// field walks its own sections.
void AppendRegisteredFields(const ConfigWalker& walker, const std::string& parent, Config& config,
                            std::vector<Field>& fields) {
  for (const ConfigSectionEntry& section : ConfigSections()) {
    const std::size_t dot = section.path.rfind('.');
    const std::string section_parent = dot == std::string::npos ? "" : section.path.substr(0, dot);
    if (section_parent != parent) continue;
    const std::string key = dot == std::string::npos ? section.path : section.path.substr(dot + 1);
    if (section.parse) {
      fields.push_back({key, [&walker, &section, &config](const ConfigNode& v) {
                          return section.parse(walker, v, config);
                        }});
    } else {
      fields.push_back({key, [&walker, &section, &config](const ConfigNode& v) {
                          std::vector<Field> group;
                          AppendRegisteredFields(walker, section.path, config, group);
                          return walker.VisitMap(v, group);
                        }});
    }
  }
}

// The loader's own sections (collectors, checks, probes, devices, scrape), then the plug-ins'.
class ConfigParser {
 public:
  // `text` is what `root` was loaded from; it must outlive the parser.
  ConfigParser(std::string source, std::string_view text, const PluginNames& known)
      : walker_(std::move(source), text), known_(known) {}

  Status Parse(const YAML::Node& root, Config& config) const {
    ConfigNode top{root, "", root.Mark()};
    std::vector<Field> fields = {
        {"collectors", [&](const ConfigNode& v) { return ParseSwitches(v, known_.collectors, "collector", config.collectors); }},
        {"checks", [&](const ConfigNode& v) { return ParseSwitches(v, known_.checks, "check", config.checks); }},
        {"probes", [&](const ConfigNode& v) { return ParseSwitches(v, known_.probes, "probe", config.probes); }},
        {"devices", [&](const ConfigNode& v) { return ParseDevices(v, config.devices); }},
        {"scrape", [&](const ConfigNode& v) { return ParseScrape(v, config); }},
    };
    AppendRegisteredFields(walker_, "", config, fields);
    if (!root.IsMap()) {
      std::string names;
      for (const Field& f : fields) {
        if (!names.empty()) names.append(", ");
        names.append(f.key);
      }
      const std::string sections = "the top level must be a map of sections (" + names + ")";
      if (root.IsScalar()) {
        // The whole file is one scalar (a PEM key, /etc/passwd): none of it is shown.
        return walker_.Fail(top.mark, "not a YAML mapping: the file is one scalar of " +
                                          std::to_string(root.Scalar().size()) + " bytes (not shown); " + sections);
      }
      return walker_.Fail(top.mark, sections + ", got " + ConfigWalker::Describe(root));
    }
    return walker_.VisitMap(top, fields);
  }

 private:
  // `kind:` maps a plug-in name to true/false.
  Status ParseSwitches(const ConfigNode& v, const std::vector<std::string>& known, const char* kind,
                       std::map<std::string, bool>& out) const {
    std::vector<Field> fields;
    for (const auto& name : known) {
      fields.push_back({name, [&out, name, this](const ConfigNode& f) {
                          bool enabled = true;
                          Status st = walker_.ReadBool(f, enabled);
                          if (st.ok() && !f.node.IsNull()) out[name] = enabled;
                          return st;
                        }});
    }
    return walker_.VisitMap(v, fields, kind);
  }

  Status ParseDevices(const ConfigNode& v, DeviceFilter& out) const {
    Status st = walker_.VisitMap(v, {
        {"include", [&](const ConfigNode& f) { return walker_.ReadRegexList(f, out.include); }},
        {"exclude", [&](const ConfigNode& f) { return walker_.ReadRegexList(f, out.exclude); }},
    });
    if (st.ok()) out.Compile();  // every pattern was just checked to compile
    return st;
  }

  Status ParseScrape(const ConfigNode& v, Config& out) const {
    return walker_.VisitMap(v, {
        {"cache_window",
         [&](const ConfigNode& f) {
           return walker_.ReadDuration(f, milliseconds{0}, kMaxScrapeCacheWindow, out.scrape_cache_window);
         }},
        {"collection_timeout",
         [&](const ConfigNode& f) {
           return walker_.ReadDuration(f, kMinCollectionTimeout, kMaxCollectionTimeout, out.collection_timeout);
         }},
    });
  }

  ConfigWalker walker_;
  const PluginNames& known_;
};

// yaml-cpp's mark for an error found at end of input lies past the text (the line after the last
// one); DeepRecursion's has line and column 0. Recomputed from the offset where it is usable, then
// clamped so that every position printed is 1-based and inside the file.
YAML::Mark MarkInText(YAML::Mark mark, std::string_view text) {
  if (mark.is_null()) return mark;
  if (mark.pos >= 0 && static_cast<std::size_t>(mark.pos) <= text.size()) {
    std::size_t pos = static_cast<std::size_t>(mark.pos);
    // At the very end after a final newline: the end of the last line, not a line that is not there.
    while (pos > 0 && pos == text.size() && (text[pos - 1] == '\n' || text[pos - 1] == '\r')) --pos;
    mark.line = 0;
    mark.column = 0;
    for (std::size_t i = 0; i < pos; ++i) {
      if (text[i] == '\n') {
        ++mark.line;
        mark.column = 0;
      } else {
        ++mark.column;
      }
    }
    return mark;
  }
  // No usable offset: clamp line and column to the text.
  std::vector<std::string_view> lines;
  for (std::size_t start = 0;;) {
    std::size_t end = text.find('\n', start);
    lines.push_back(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  if (lines.size() > 1 && lines.back().empty()) lines.pop_back();  // the final newline ends a line
  if (mark.line < 0) mark.line = 0;
  if (static_cast<std::size_t>(mark.line) >= lines.size()) {
    mark.line = static_cast<int>(lines.size()) - 1;
    mark.column = static_cast<int>(lines.back().size());
  }
  const int width = static_cast<int>(lines[static_cast<std::size_t>(mark.line)].size());
  mark.column = std::clamp(mark.column, 0, width);
  return mark;
}

std::string FlowName(const FlowOpening& f) {
  return f.bracket == '[' ? "flow sequence '['" : "flow map '{'";
}

std::string OpeningPosition(const std::string& source, const FlowOpening& f) {
  return source + ":" + std::to_string(f.line) + ":" + std::to_string(f.column);
}

// yaml-cpp's message for a parse error, pointing at where an unclosed flow opened when that is
// what yaml-cpp ran into at the end of the input.
std::string YamlErrorMessage(const std::string& source, std::string_view text, const FlowScan& scan,
                             const YAML::ParserException& e) {
  const bool flow_end = e.msg == YAML::ErrorMsg::END_OF_SEQ_FLOW || e.msg == YAML::ErrorMsg::END_OF_MAP_FLOW;
  std::size_t significant = text.find_last_not_of(" \t\r\n");
  significant = significant == std::string_view::npos ? 0 : significant + 1;
  const bool at_end = e.mark.pos >= 0 && static_cast<std::size_t>(e.mark.pos) >= significant;
  if (scan.unclosed && (flow_end || at_end)) {
    const FlowOpening& f = *scan.unclosed;
    return OpeningPosition(source, f) + ": invalid YAML: this " + FlowName(f) +
           " is never closed (the file ends first)";
  }
  if (const auto* deep = dynamic_cast<const YAML::DeepRecursion*>(&e)) {
    return ConfigPosition(source, MarkInText(e.mark, text)) + ": invalid YAML: nested more than " +
           std::to_string(deep->depth() - 1) + " levels deep";
  }
  return ConfigPosition(source, MarkInText(e.mark, text)) + ": invalid YAML: " + e.msg;
}

// Counts documents from parser events, building nothing. YAML::LoadAll is not used: yaml-cpp 0.7
// returns an empty document without consuming a stray ',' at document level ("," or "[1], x"), so
// LoadAll loops forever, allocating (found by fuzz/config_fuzz.cc).
class DocumentCounter : public YAML::EventHandler {
 public:
  struct Document {
    YAML::Mark start;              // where the parser stood when the document began
    std::optional<YAML::Mark> node;  // its first node
  };
  std::vector<Document> documents;

  void OnDocumentStart(const YAML::Mark& mark) override { documents.push_back({mark, std::nullopt}); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { Node(mark); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { Node(mark); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t, const std::string&) override {
    Node(mark);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    Node(mark);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    Node(mark);
  }
  void OnMapEnd() override {}

 private:
  void Node(const YAML::Mark& mark) {
    if (!documents.empty() && !documents.back().node) documents.back().node = mark;
  }
};

// An error message when the text is not exactly one YAML document (zero is fine: defaults). Reads
// at most three documents, so a parser that stops advancing cannot keep it busy.
std::optional<std::string> CheckOneDocument(const std::string& source, const std::string& text) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentCounter counter;
  while (counter.documents.size() < 3 && parser.HandleNextDocument(counter)) {
    const auto& docs = counter.documents;
    if (docs.size() >= 2 && docs[docs.size() - 1].start.pos == docs[docs.size() - 2].start.pos) {
      // No progress: the parser is stuck on a token no document can start with.
      const YAML::Mark at = MarkInText(docs.back().start, text);
      const std::size_t pos = static_cast<std::size_t>(std::max(0, docs.back().start.pos));
      std::string what = "text";
      if (pos < text.size()) what = std::string{'\'', text[pos], '\''};
      return ConfigPosition(source, at) + ": invalid YAML: unexpected " + what +
             (what == "','" ? " outside a flow collection ('[...]' or '{...}')" : "");
    }
  }
  if (counter.documents.size() > 1) {
    const auto& second = counter.documents[1];
    return ConfigPosition(source, MarkInText(second.node.value_or(second.start), text)) +
           ": a second YAML document; a config file holds exactly one";
  }
  return std::nullopt;
}

}  // namespace

std::vector<ConfigKeyDoc> ConfigKeys() {
  std::vector<ConfigKeyDoc> keys = {
      {"collectors.<name>", "`true` (enabled)"},
      {"checks.<name>", "`true` (enabled)"},
      {"probes.<name>", "`true` (enabled)"},
      {"devices.include", "`[]` = every device"},
      {"devices.exclude", "`[]`"},
      {"scrape.cache_window", "`200ms`"},
      {"scrape.collection_timeout", "`5s`"},
  };
  // Depth first, in the loader's order: a group's sections where the group sits.
  std::function<void(const std::string&)> append = [&](const std::string& parent) {
    for (const ConfigSectionEntry& section : ConfigSections()) {
      const std::size_t dot = section.path.rfind('.');
      if ((dot == std::string::npos ? "" : section.path.substr(0, dot)) != parent) continue;
      keys.insert(keys.end(), section.keys.begin(), section.keys.end());
      if (!section.parse) append(section.path);
    }
  };
  append("");
  return keys;
}

std::optional<std::string> YamlTextProblem(std::string_view text, const std::string& source) {
  if (std::optional<TextProblem> problem = FindTextProblem(text)) {
    return source + ":" + std::to_string(problem->at.line) + ":" + std::to_string(problem->at.column) + ": " +
           problem->what;
  }
  const FlowScan scan = ScanFlows(text, kMaxFlowDepth);
  if (scan.tab_indentation) {
    return source + ":" + std::to_string(scan.tab_indentation->line) + ":" +
           std::to_string(scan.tab_indentation->column) +
           ": a tab in the indentation: YAML indents with spaces only";
  }
  return std::nullopt;
}

namespace {

Result<YAML::Node> LoadSingleYamlDocumentUncapped(const std::string& text, const std::string& source) {
  if (std::optional<std::string> problem = YamlTextProblem(text, source)) return Error{*problem};
  const FlowScan scan = ScanFlows(text, kMaxFlowDepth);
  if (scan.too_deep) {
    return Error{OpeningPosition(source, *scan.too_deep) + ": invalid YAML: flow collections ('[', '{') "
                 "nested more than " + std::to_string(kMaxFlowDepth) + " deep"};
  }
  try {
    try {
      if (std::optional<std::string> problem = CheckOneDocument(source, text)) return Error{*problem};
      return YAML::Load(text);
    } catch (const YAML::ParserException& e) {
      return Error{YamlErrorMessage(source, text, scan, e)};
    }
  } catch (const YAML::Exception& e) {
    return Error{ConfigPosition(source, MarkInText(e.mark, text)) + ": " + e.msg};
  } catch (const std::exception& e) {
    return Error{source + ": " + e.what()};
  }
}

// "a/./b/../c" -> "a/c": the components of a path relative to a root, with "." and ".." resolved
// lexically and ".." never above the root.
std::string NormalizeBeneath(std::string_view rel) {
  std::vector<std::string_view> parts;
  while (!rel.empty()) {
    const std::size_t slash = rel.find('/');
    const std::string_view part = rel.substr(0, slash);
    rel = slash == std::string_view::npos ? std::string_view() : rel.substr(slash + 1);
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
      continue;
    }
    parts.push_back(part);
  }
  std::string out;
  for (const std::string_view part : parts) {
    if (!out.empty()) out += '/';
    out += part;
  }
  return out;
}

// ConfigReadOptions::captured_root: every path-valued key re-rooted under `root` (an absolute
// folder, no trailing '/').
Status RerootCapturedPaths(const std::string& source, const std::string& root, Config& config) {
  const auto reroot = [&](std::string& path, const std::string& key) -> Status {
    const std::string_view p = path;
    const std::string_view inside = p.starts_with(root + "/") ? p.substr(root.size() + 1) : p;
    const std::string rel = NormalizeBeneath(inside);
    if (rel.empty()) {
      return Error{source + ": " + key + ": " + ConfigWalker::Quote(path) + " names no file (this config is data "
                   "about a captured node: its paths are read under the bundle's folder)"};
    }
    path = root + "/" + rel;
    return Status::Ok();
  };
  // Section<T>() const first: a section the file does not set stays shared with the defaults.
  const Config& parsed = config;
  const auto& workloads = parsed.Section<WorkloadsPolicy>().workloads;
  for (std::size_t i = 0; i < workloads.size(); ++i) {
    if (workloads[i].pid_file.empty()) continue;
    std::string& path = config.Section<WorkloadsPolicy>().workloads[i].pid_file;
    if (Status st = reroot(path, "host.workloads[" + std::to_string(i) + "].pid_file"); !st.ok()) return st;
  }
  if (!parsed.Section<PeersPolicy>().file.empty()) {
    if (Status st = reroot(config.Section<PeersPolicy>().file, "peers.file"); !st.ok()) return st;
  }
  config.captured_root = root;
  return Status::Ok();
}

Result<Config> ParseConfigUncapped(const std::string& yaml_text, const std::string& source_name,
                                   const PluginNames& known, const ConfigReadOptions& read_options) {
  const std::string source = source_name.empty() ? "<config>" : source_name;
  if (yaml_text.size() > kMaxConfigBytes) {
    return Error{source + ": " + std::to_string(yaml_text.size()) + " bytes, more than the " +
                     std::to_string(kMaxConfigBytes >> 20) + " MiB a config file may hold",
                 EFBIG};
  }
  std::string root = read_options.captured_root;
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  if (!read_options.captured_root.empty() && (root.front() != '/' || root == "/")) {
    return Error{source + ": the folder a captured node's config is read under must be an absolute path "
                 "other than /, got " + ConfigWalker::Quote(read_options.captured_root), EINVAL};
  }
  Result<YAML::Node> loaded = LoadSingleYamlDocument(yaml_text, source);
  if (!loaded.ok()) return loaded.error();
  try {
    const YAML::Node& document = *loaded;
    Config config;
    config.source = source;
    // Empty text or only comments: no document, or a null one. Built-in defaults, marked as such.
    if (!document.IsDefined() || document.IsNull()) {
      config.no_settings = true;
      config.captured_root = root;
      return config;
    }
    Status st = ConfigParser(source, yaml_text, known).Parse(document, config);
    if (st.ok() && !root.empty()) st = RerootCapturedPaths(source, root, config);
    if (!st.ok()) return st.error();
    return config;
  } catch (const YAML::Exception& e) {
    return Error{ConfigPosition(source, MarkInText(e.mark, yaml_text)) + ": " + e.msg};
  } catch (const std::exception& e) {
    return Error{source + ": " + e.what()};
  }
}

}  // namespace

Result<YAML::Node> LoadSingleYamlDocument(const std::string& text, const std::string& source) {
  Result<YAML::Node> loaded = LoadSingleYamlDocumentUncapped(text, source);
  if (!loaded.ok()) return Error{CapMessage(loaded.error().message), loaded.error().errno_value};
  return loaded;
}

const std::vector<std::string>& CapturedPathKeys() {
  static const std::vector<std::string> keys = {"host.workloads[i].pid_file", "peers.file"};
  return keys;
}

Result<Config> ParseConfig(const std::string& yaml_text, const std::string& source_name,
                           const PluginNames& known, const ConfigReadOptions& read_options) {
  Result<Config> parsed = ParseConfigUncapped(yaml_text, source_name, known, read_options);
  if (!parsed.ok()) return Error{CapMessage(parsed.error().message), parsed.error().errno_value};
  return parsed;
}

namespace {

// The whole of a config file, read so that no path can block or exhaust the reader (ReadRegularFile:
// opened non-blocking, only a regular file, at most kMaxConfigBytes), with the loader's words for
// a refusal.
Result<std::string> ReadConfigText(const std::string& path) {
  if (path.empty()) return Error{"name is empty: give the path of a YAML file"};
  RegularFileRefusal refusal;
  Result<std::string> text = ReadRegularFile(path, kMaxConfigBytes, &refusal);
  if (text.ok()) return text;
  if (refusal.not_regular != nullptr) {
    return Error{path + ": is " + std::string(refusal.not_regular) + ", not a regular file", text.error().errno_value};
  }
  const std::string too_big = " a config file may hold at most " + std::to_string(kMaxConfigBytes >> 20) +
                              " MiB (" + std::to_string(kMaxConfigBytes) + " bytes)";
  if (refusal.too_large && *refusal.too_large > 0) {
    return Error{path + ": is " + std::to_string(*refusal.too_large) + " bytes;" + too_big, EFBIG};
  }
  if (refusal.too_large) return Error{path + ": grew past the limit while being read;" + too_big, EFBIG};
  return text.error();
}

}  // namespace

Result<Config> LoadConfigFile(const std::string& path, const PluginNames& known, const ConfigReadOptions& read_options) {
  Result<std::string> text = ReadConfigText(path);
  if (!text.ok()) {
    return Error{CapMessage("config file " + text.error().message), text.error().errno_value};
  }
  return ParseConfig(*text, path, known, read_options);
}

}  // namespace rdmahd
