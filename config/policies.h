// The policy sections of the config that more than one plug-in reads: data only. Each is
// registered (its keys, defaults and validation) by the plug-in that owns it, next to its factory
// (config/config_section.h), and read typed: config.Section<RocePolicy>(). A section only one
// plug-in reads is declared in that plug-in's own .cc file instead.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/cpulist.h"

namespace rdmahd {

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

// The firmware rules, in order (the first matching rule wins).
struct FirmwarePolicy {
  std::vector<FirmwareRule> rules;
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

// The peer-probe responder: answers other nodes' probes. Off unless configured.
struct PeerResponderPolicy {
  bool enabled = false;
  std::string listen_address;           // local IP; empty = every address
  std::uint16_t port = 18600;           // rdma_cm port (perftest's 18515 stays free for it)
  std::vector<std::string> allow;       // peers allowed to connect: IPs or CIDRs; empty = nobody
  std::uint32_t max_sessions = 8;
  std::uint32_t max_message_size = 1u << 20;         // bytes, per probe
  std::uint64_t max_registered_bytes = 64ull << 20;  // all sessions' memory regions together
  CpuList cpus;                         // CPUs the session threads run on; empty = any
};

// Fleet discovery: DNS names whose every A/AAAA record is a peer, e.g. a Kubernetes
// headless Service of the rdma-healthd DaemonSet, re-resolved every dns_interval.
struct PeerDiscoveryPolicy {
  std::vector<std::string> dns;                     // names; each address they resolve to is a peer
  std::string dns_server;                           // "IP" or "IP:PORT"; empty = /etc/resolv.conf
  std::chrono::milliseconds dns_interval{60000};
};

// Which of the targets this node probes when there are more than max_peers (probes/peer_selection.h).
struct PeerSelectionPolicy {
  std::uint32_t max_peers = 32;
  std::uint32_t same_tor_cap = 8;
  std::string tor_label = "tor";                    // targets-file label naming a peer's ToR/rack
  std::chrono::milliseconds rotation{3600000};      // how often this node's own picks rotate
  std::string self;                                 // this node's name among the targets; empty = a local address found there
};

// Peer probes: whom to probe (static list, DNS names, a file re-read on change), how, and what is
// healthy. The probe kind is "peers" (probes: peers: false turns it off).
struct PeersPolicy {
  std::vector<std::string> targets;     // IPs or DNS names
  std::string file;                     // file_sd-like list of targets (and labels); empty = none
  std::uint16_t port = 18600;           // the peers' responder port
  std::string source_address;           // local IP probes leave from; empty = rdma_cm chooses
  std::optional<std::uint8_t> tos;      // IP ToS of probe traffic (DSCP << 2); unset = kernel default
  std::chrono::milliseconds interval{10000};       // between latency rounds to one peer
  std::chrono::milliseconds step_timeout{1000};    // every connect step and the handshake
  std::uint32_t latency_message_size = 2;
  std::uint32_t latency_iterations = 1000;
  bool bandwidth = false;                          // RDMA WRITE streams (one at a time per node)
  std::chrono::milliseconds bandwidth_interval{600000};
  std::chrono::milliseconds bandwidth_duration{1000};
  std::uint32_t bandwidth_message_size = 65536;
  std::uint32_t bandwidth_queue_depth = 128;
  std::optional<double> max_latency_p99_us;        // check policy; unset = not judged
  std::optional<double> min_bandwidth_gbps;        // check policy; unset = not judged
  CpuList cpus;                                    // CPUs the probe thread runs on; empty = any
  PeerResponderPolicy responder;
  PeerDiscoveryPolicy discovery;
  PeerSelectionPolicy selection;
};

// ---- host: device side (the "pcie", "roce_tos", "plumbing" and
// "link_flaps" collectors and their checks). The PCIe and ToS checks need no keys of their own (a
// degraded link always fails; the ToS is judged against roce.dscp and roce.priority).

// Who must be able to open /dev/infiniband/uverbsN and rdma_cm (the account RDMA jobs run as).
// A name or a numeric id. Unset: the devices must be open to everyone (mode 0666, what the kernel
// creates them with).
struct HostDeviceAccessPolicy {
  std::optional<std::string> user;
  std::optional<std::string> group;
};

// The cpufreq governor every CPU local to an RDMA device must run. Unset: the cpu_governor check
// reports "not configured".
struct CpuGovernorPolicy {
  std::optional<std::string> governor;
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

// ---- host: memory readiness (hugepages, locked memory, workload NUMA placement) -------------
// Free hugepages the workloads need on each RDMA device's NUMA node. Unset min_free: the
// hugepages_free check reports "not configured".
struct HugepagesPolicy {
  std::optional<std::uint64_t> page_size_bytes;  // unset: the kernel's default size (Hugepagesize)
  std::optional<std::uint64_t> min_free;         // pages of that size
};

// Locked-memory limit (RLIMIT_MEMLOCK, soft) of the daemon and of every configured workload:
// RDMA memory registration pins pages against it.
struct MemlockPolicy {
  bool require_unlimited = false;                   // only "unlimited" passes
  std::uint64_t min_bytes = std::uint64_t{64} << 20;  // else unlimited or at least this
};

// A process (or group) doing RDMA on this node, found by exactly one of: its process name (the
// kernel's comm, at most 15 bytes), a pid file, or a systemd unit (the pids of its cgroup).
struct WorkloadSpec {
  std::string name;          // label value: [A-Za-z0-9_.-], unique
  std::string process;
  std::string pid_file;      // absolute path
  std::string systemd_unit;  // e.g. trainer.service
  std::optional<std::string> device;  // the RDMA device it uses; unset: every RDMA device's node
};

// The workloads (host.workloads), read by the workloads collector and the host memory checks.
struct WorkloadsPolicy {
  std::vector<WorkloadSpec> workloads;
};

struct WorkloadNumaPolicy {
  // Share of a workload's resident memory that must be on the NIC's node for "ok"; below it (but
  // above 0) is a warning, none is a failure.
  double min_local_memory_share = 0.9;
};

}  // namespace rdmahd
