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

struct PortPolicy {
  bool require_active = true;               // port state ACTIVE and phys_state LinkUp
  std::optional<double> min_rate_gbps;      // unset: rate check reports "not configured"
  bool require_roce_v2_gid = true;          // Ethernet ports must have a RoCE v2 GID
  std::optional<int> min_active_mtu;        // 256..4096, a power of two; verbs active_mtu minimum
};

// Minimum device limits (ibv_query_device) a job on this node needs. Unset: not judged.
struct DeviceLimitsPolicy {
  std::optional<std::uint64_t> min_max_qp;
  std::optional<std::uint64_t> min_max_cq;
  std::optional<std::uint64_t> min_max_cqe;
  std::optional<std::uint64_t> min_max_mr;
  std::optional<std::uint64_t> min_max_mr_size;  // bytes

  bool any() const { return min_max_qp || min_max_cq || min_max_cqe || min_max_mr || min_max_mr_size; }
};

// Minimum firmware for devices matching hca_type and/or board_id (a rule with both set needs both
// to match; the first matching rule wins).
struct FirmwareRule {
  std::string hca_type;   // e.g. MT4119; empty = any
  std::string board_id;   // e.g. MT_0000000008; empty = any
  std::string min_version;  // dotted numeric, e.g. 16.35.2000
};

enum class TrustMode { kPcp, kDscp };

// The RoCE lossless-fabric policy. Unset priority => the fabric checks report "not configured"
// (facts are still exported).
struct RocePolicy {
  std::optional<int> priority;           // 0..7, the priority RoCE traffic uses
  std::optional<int> dscp;               // 0..63, the DSCP RoCE traffic is marked with
  std::optional<TrustMode> trust;        // expected trust mode
  bool require_ecn = true;               // ECN (DCQCN) enabled for NP and RP on the priority
  std::optional<int> min_mtu;            // netdev MTU minimum, e.g. 4200 for 4096 RoCE MTU
  // Driver statistics (ethtool -S names, RE2 regexes, whole-name match) exported besides
  // the built-in pause/discard set. mlx5 has 750+; export only what you need.
  std::vector<std::string> extra_ethtool_stats;
};

// ---- host: device side (issue #10 items 4-7; the "pcie", "roce_tos", "plumbing" and
// "link_flaps" collectors and their checks). The PCIe and ToS checks need no keys of their own (a
// degraded link always fails; the ToS is judged against roce.dscp and roce.priority).

// Who must be able to open /dev/infiniband/uverbsN and rdma_cm (the account RDMA jobs run as).
// A name or a numeric id. Unset: the devices must be open to everyone (mode 0666, what the kernel
// creates them with).
struct HostDeviceAccessPolicy {
  std::optional<std::string> user;
  std::optional<std::string> group;
};

// Link-flap windows. A port that leaves ACTIVE and is back within drop_window has flapped; one
// down longer is a drop. `threshold` flaps within `window` make the port flapping; a flapping or
// dropped port stays flagged until `recovery` has passed without a new flap or drop.
struct HostLinkFlapPolicy {
  std::chrono::milliseconds drop_window{30'000};
  std::chrono::milliseconds window{600'000};
  std::uint32_t threshold = 1;
  std::chrono::milliseconds recovery{900'000};
};

struct HostDevicePolicy {
  HostDeviceAccessPolicy device_access;
  // Required scaling_governor of the CPUs local to each RDMA device (e.g. "performance"). Unset:
  // the cpu_governor check reports "not configured" (the governors are still exported).
  std::optional<std::string> cpu_governor;
  HostLinkFlapPolicy link_flaps;
};

struct Config {
  // Where this config came from: a file path, or "<built-in defaults>".
  std::string source = "<built-in defaults>";

  // Plug-in name -> enabled, per kind. Names absent here are enabled.
  std::map<std::string, bool> collectors;
  std::map<std::string, bool> checks;
  std::map<std::string, bool> probes;

  DeviceFilter devices;

  // Concurrent scrapes within this window share one collection. Never above 250 ms.
  std::chrono::milliseconds scrape_cache_window{200};
  // A scrape (or `check`) waits at most this long for a collection; see CollectionEngine.
  std::chrono::milliseconds collection_timeout{5000};

  PortPolicy ports;
  DeviceLimitsPolicy limits;
  std::vector<FirmwareRule> firmware;
  RocePolicy roce;
  // `host:` keys of the device side (ParseHostDevice); the memory side adds its own sub-struct.
  HostDevicePolicy host_dev;

  bool CollectorEnabled(const std::string& name) const;
  bool CheckEnabled(const std::string& name) const;
  bool ProbeEnabled(const std::string& name) const;
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

// Parses and validates YAML text (the in-memory entry point: LoadConfigFile reads the file and
// calls it). `source_name` is used in error messages ("FILE:LINE:COL: ...").
// `known` are the names accepted under `collectors:`, `checks:` and `probes:`. Errors name the file, line,
// column and key; unknown keys are rejected with the closest valid key suggested.
Result<Config> ParseConfig(const std::string& yaml_text, const std::string& source_name,
                           const PluginNames& known);

// Reads and parses a file (an unreadable file is an Error naming the path and errno). Only a
// regular file of at most kMaxConfigBytes is read; it is opened non-blocking, so a FIFO, a device
// or a directory is refused at once and never blocks the caller (SIGHUP reload included).
Result<Config> LoadConfigFile(const std::string& path,
                              const PluginNames& known);

}  // namespace rdmahd
