// `rdma-healthd capture`: the support bundle, one .tar.gz holding what the daemon reads and judges,
// laid out so that `rdma-healthd check --capture FILE` (daemon/capture_check.h) judges it on another
// machine through the same --path.* flags a manual capture uses (README "Analysing a captured
// node", docs/capture.md):
//
//   sys/...            the sysfs subsets the collectors read, symlinks kept as the kernel made them
//   proc/...           meminfo, cmdline, cpuinfo, version, sys/kernel/numa_balancing, self/{status,
//                      limits}, every PID's comm and the configured workloads' status, limits, numa_maps
//   dcb/NETDEV/        pfc.json, app.json (`dcb -j` layout, from DCB netlink), ethtool-S.txt,
//                      ethtool-a.txt (`ethtool -S`/`-a` text), module-eeprom.bin (`ethtool -m raw`)
//   kernel-log.txt     the kernel's records of the daemon's look-back that its NIC rules match, in
//                      /dev/kmsg format, ending in a marker record at the capture's time
//   kernel-log-rdma.txt  for people: every RDMA driver line the ring holds (not judged)
//   metrics.txt        the /metrics exposition of the same collection
//   check.json         `check --output=json` of that collection (the node's own verdicts)
//   config/            config.yaml and web-config.yaml with secrets redacted
//   manifest.json      versions, what was captured, what was skipped and why, the limits
//
// Reads never follow a link out of the sysfs/procfs root (the resolved target is checked), never
// block on a FIFO, and are capped per file, in total and in time (CaptureLimits).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "core/collection_engine.h"
#include "daemon/capture_archive.h"
#include "daemon/options.h"

namespace rdmahd {

struct CaptureLimits {
  std::size_t sysfs_file_bytes = 64 * 1024;     // kMaxAttributeBytes, as the collectors read
  std::size_t proc_file_bytes = 1u << 20;       // numa_maps of a big process is cut here
  std::size_t kernel_log_bytes = 8u << 20;
  std::size_t document_bytes = 16u << 20;       // metrics.txt, check.json, a config file
  std::uint64_t total_bytes = 64u << 20;        // all files, uncompressed
  std::uint64_t entries = 100000;               // archive members: files, folders and links
  int tree_depth = 10;                          // folders below a followed link or a seed
  std::size_t manifest_skips = 200;             // skipped paths listed one by one (the rest counted)
};

// Runs the command with `engine` (over the options' paths, as for `check`): one collection, then
// the files; writes options.capture_output and prints where and a one-line summary on `out`.
// Exit code 0 written, 2 could not write a bundle.
int RunCaptureCommand(const Options& options, CollectionEngine& engine, std::ostream& out, std::ostream& err);

// The default --output: rdma-healthd-capture-HOST-YYYYMMDDTHHMMSSZ.tar.gz in the current folder.
std::string DefaultCaptureName();

// A YAML document with secrets replaced by "<redacted>": every value under basic_auth_users (the
// password hashes), and the value of any key named key_file, password, password_file, secret,
// token, bearer_token or credentials (any case). An Error (and nothing of the text) when it is not
// YAML: a file that cannot be read as YAML cannot be redacted, so it is left out of the bundle.
Result<std::string> RedactConfigYaml(std::string_view text);

// Whether `path` (lexically under `root_real`, a realpath) resolves, links followed, to `root_real`
// or below it. A path that does not resolve (dangling link, gone) is outside.
bool ResolvesInside(const std::string& root_real, const std::string& path);

}  // namespace rdmahd
