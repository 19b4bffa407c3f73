// Config: the validated, immutable configuration. Built-in defaults make every field meaningful
// without a file; a YAML file (see config/example.yaml and docs/configuration.md) overrides them.
// A Config is shared read-only (std::shared_ptr<const Config>) and swapped whole on reload.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/pattern.h"
#include "common/result.h"
#include "config/policies.h"

namespace rdmahd {

// Which RDMA devices (by name, e.g. mlx5_0) the collectors look at. Patterns are RE2 regular
// expressions (common/pattern.h) matched against the whole name. Empty include = all; exclude wins over include.
// Matches() runs per device in every collection, so the config loader calls Compile() once;
// a hand-built filter (tests), or one whose patterns changed after Compile(), compiles per call.
struct DeviceFilter {
  std::vector<std::string> include;
  std::vector<std::string> exclude;

  bool Matches(const std::string& device) const;
  void Compile();  // the loader checked every pattern; one that does not compile matches nothing

 private:
  struct Compiled {
    std::vector<std::string> include, exclude;  // the patterns these were compiled from
    std::vector<Pattern> include_re, exclude_re;
  };
  std::shared_ptr<const Compiled> compiled_;  // shared: a Config is copied on reload
};

namespace internal {
std::size_t NextConfigSlot();
// A small number per section type, the same for every Config.
template <class T>
std::size_t ConfigSlot() {
  static const std::size_t slot = NextConfigSlot();
  return slot;
}
}  // namespace internal

struct Config {
  // Where this config came from: a file path, or "<built-in defaults>".
  std::string source = "<built-in defaults>";
  // The text held no settings at all: empty, blank, only comments, or a null document ("---",
  // "~"). It still parses (to the built-in defaults), but a reload refuses it (an emptied file
  // would silently drop every policy) and check-config warns. "{}" is the way to ask for the
  // defaults on purpose.
  bool no_settings = false;
  // Not empty: this config was read as data about a captured node (ConfigReadOptions), and every
  // path-valued key (CapturedPathKeys) names a file under this folder.
  std::string captured_root;

  // Plug-in name -> enabled, per kind. Names absent here are enabled.
  std::map<std::string, bool> collectors;
  std::map<std::string, bool> checks;
  std::map<std::string, bool> probes;

  DeviceFilter devices;

  // Concurrent scrapes within this window share one collection. Never above 250 ms.
  std::chrono::milliseconds scrape_cache_window{200};
  // A scrape (or `check`) waits at most this long for a collection; see CollectionEngine.
  std::chrono::milliseconds collection_timeout{5000};

  // A plug-in's section (config/config_section.h): the registered parse's result, or the
  // section's built-in defaults when the file does not set it. A vector index, no lookup by name.
  template <class T>
  const T& Section() const {
    const std::size_t slot = internal::ConfigSlot<T>();
    if (slot < sections_.size() && sections_[slot]) return *static_cast<const T*>(sections_[slot].get());
    static const T kDefaults{};
    return kDefaults;
  }
  // The same, to change (the parser; tests building a Config). Copies a section this Config shares
  // with a copy of it first.
  template <class T>
  T& Section() {
    const std::size_t slot = internal::ConfigSlot<T>();
    if (slot >= sections_.size()) sections_.resize(slot + 1);
    std::shared_ptr<const void>& s = sections_[slot];
    if (!s) {
      s = std::make_shared<T>();
    } else if (s.use_count() > 1) {
      s = std::make_shared<T>(*static_cast<const T*>(s.get()));
    }
    return *static_cast<T*>(const_cast<void*>(s.get()));
  }

  bool CollectorEnabled(const std::string& name) const;
  bool CheckEnabled(const std::string& name) const;
  bool ProbeEnabled(const std::string& name) const;

 private:
  std::vector<std::shared_ptr<const void>> sections_;  // by internal::ConfigSlot<T>()
};

// The plug-in names a config may enable or disable (the binary's registries; tests pass their own).
struct PluginNames {
  std::vector<std::string> collectors, checks, probes;

  PluginNames() = default;
  PluginNames(std::vector<std::string> c) : collectors(std::move(c)) {}  // NOLINT: collectors only
  PluginNames(std::vector<std::string> c, std::vector<std::string> k, std::vector<std::string> p)
      : collectors(std::move(c)), checks(std::move(k)), probes(std::move(p)) {}
};

// A config file holds a few hundred bytes; the cap keeps a wrong path (a log, a disk image) from
// being read whole. ParseConfig refuses longer text too.
inline constexpr std::size_t kMaxConfigBytes = std::size_t{1} << 20;
// Real configs nest flows one or two deep; the bound keeps hostile text from the recursive parser.
inline constexpr std::size_t kMaxFlowDepth = 64;

// Whose config a file is.
struct ConfigReadOptions {
  // Empty (the default): this node's own config; its paths are files of this machine.
  //
  // Not empty: the config is data about a captured node (`check --capture` applying a bundle's
  // own config/config.yaml), and this is the absolute folder the bundle was extracted to. Nothing
  // in such a config may name a file of the machine that judges the bundle, so every path-valued
  // key (CapturedPathKeys()) is taken as a path on the captured node and re-rooted under this
  // folder: "/run/spdk.pid" -> "ROOT/run/spdk.pid". "." and ".." are resolved lexically and ".."
  // never climbs above ROOT ("/../../etc/shadow" -> "ROOT/etc/shadow"); a relative peers.file,
  // already resolved from the config file's folder, stays where that is if it is under ROOT. A
  // path that names ROOT itself ("/", "/..") is refused, naming the key. The containment is
  // lexical: whoever opens the result must not follow links out of ROOT (the extraction refuses
  // them; openat2 RESOLVE_BENEATH or O_NOFOLLOW per component makes sure).
  std::string captured_root;
};

// The keys whose values are paths of files the loaded config makes the daemon read, as
// docs/configuration.md names them ("host.workloads[i].pid_file", "peers.file"): what
// ConfigReadOptions::captured_root re-roots. config_docs_test checks that every documented key of
// type path, or described as a path, is here.
const std::vector<std::string>& CapturedPathKeys();

// Parses and validates YAML text (the in-memory entry point: LoadConfigFile reads the file and
// calls it). `source_name` is used in error messages ("FILE:LINE:COL: ...").
// `known` are the names accepted under `collectors:`, `checks:` and `probes:`. Errors name the file, line,
// column and key; unknown keys are rejected with the closest valid key suggested.
Result<Config> ParseConfig(const std::string& yaml_text, const std::string& source_name,
                           const PluginNames& known, const ConfigReadOptions& read_options = {});

// Reads and parses a file (an unreadable file is an Error naming the path and errno). Only a
// regular file of at most kMaxConfigBytes is read; it is opened non-blocking, so a FIFO, a device
// or a directory is refused at once and never blocks the caller (SIGHUP reload included).
Result<Config> LoadConfigFile(const std::string& path,
                              const PluginNames& known, const ConfigReadOptions& read_options = {});

}  // namespace rdmahd
