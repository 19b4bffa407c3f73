// Config sections owned by plug-ins. A check, collector or probe that has settings declares them
// next to its factory:
//
//   struct PfcPolicy { std::optional<int> priority; };   // its defaults are the built-in ones
//   RDMAHD_REGISTER_CONFIG_SECTION(PfcPolicy, "pfc", 100,
//       {{"pfc.priority", "unset"}},                      // every key and its documented default
//       [](const ConfigWalker& w, const ConfigNode& v, PfcPolicy& out) {
//         return w.VisitMap(v, {{"priority", [&](const ConfigNode& f) { return w.ReadInt(f, 0, 7, out.priority); }}});
//       });
//
// and reads them typed wherever it has the Config: config.Section<PfcPolicy>() (a vector index).
// The loader (config_parser.cc) keeps the hardening, the walker and the loader's own sections
// (collectors, checks, probes, devices, scrape); it hands each registered section its node, and
// every message keeps the walker's "FILE:LINE:COL: path: ..." form and did-you-mean suggestions.
// docs/configuration.md documents every registered key with its default (config/config_docs_test.cc).
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "config/config.h"
#include "config/config_walker.h"

namespace rdmahd {

// One key of a section, as docs/configuration.md's tables name it ("roce.priority",
// "firmware[i].min_version") with what its "default" column says ("unset", "`true`").
struct ConfigKeyDoc {
  std::string key;
  std::string default_text;
};

struct ConfigSectionEntry {
  // Where the section sits: a top-level key ("roce") or a key of a group ("host.hugepages"). A
  // group is registered with an empty `parse`; its keys are the sections registered under it.
  std::string path;
  // Its place among its siblings where messages list the valid keys (the top level: after the
  // loader's own sections). Existing: ports 10, limits 20, firmware 30, roce 40, host 50,
  // peers 60; under host: hugepages 10, memlock 20, workload_numa 30, workloads 40,
  // device_access 50, cpu_governor 60, link_flaps 70. A new section takes a free number.
  int order = 100;
  std::vector<ConfigKeyDoc> keys;
  // Reads the section's node (null when the file has the key with nothing under it) into the
  // Config. Never called for a key the file does not have.
  std::function<Status(const ConfigWalker&, const ConfigNode&, Config&)> parse;
};

// Every registered section, groups included, ordered by (order, path) within each parent.
const std::vector<ConfigSectionEntry>& ConfigSections();

// Every key a config file may set, with its documented default: the loader's own (collectors,
// checks, probes, devices, scrape; plug-in names as "collectors.<name>") and the registered
// sections' keys, in the order the loader lists them.
std::vector<ConfigKeyDoc> ConfigKeys();

template <class T>
struct ConfigSectionSpec {
  std::string path;
  int order = 100;
  std::vector<ConfigKeyDoc> keys;
  std::function<Status(const ConfigWalker&, const ConfigNode&, T&)> parse;
};

namespace internal {
// A second registration of a path, or a path whose group is not registered first... is a bug in
// the build: the binary refuses to start, naming the path.
bool AddConfigSection(ConfigSectionEntry entry);

template <class T>
bool RegisterConfigSection(ConfigSectionSpec<T> spec) {
  auto parse = std::move(spec.parse);
  ConfigSectionEntry entry{std::move(spec.path), spec.order, std::move(spec.keys), nullptr};
  if (parse) {
    entry.parse = [parse = std::move(parse)](const ConfigWalker& w, const ConfigNode& v, Config& config) {
      return parse(w, v, config.Section<T>());
    };
  }
  return AddConfigSection(std::move(entry));
}
}  // namespace internal

// Use once per section, at namespace scope in the owning plug-in's .cc file. The arguments after
// Type are ConfigSectionSpec<Type>'s: path, order, keys, parse.
#define RDMAHD_REGISTER_CONFIG_SECTION(Type, ...)                               \
  [[maybe_unused]] static const bool rdmahd_config_section_registered_##Type = \
      ::rdmahd::internal::RegisterConfigSection<Type>(::rdmahd::ConfigSectionSpec<Type>{__VA_ARGS__})

// A group of sections (a key whose map holds other plug-ins' sections, e.g. "host").
#define RDMAHD_REGISTER_CONFIG_GROUP(name, path, order, keys)                          \
  [[maybe_unused]] static const bool rdmahd_config_group_registered_##name =           \
      ::rdmahd::internal::AddConfigSection(::rdmahd::ConfigSectionEntry{path, order, keys, nullptr})

}  // namespace rdmahd
