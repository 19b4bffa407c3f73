// NodeFs: every read of the node's kernel state goes through here, relative to configurable roots
// (--path.sysfs, --path.procfs), so every collector runs unchanged against a fixture tree. Files
// kept open and re-read across scrapes are common/held_files.h's, opened through NodeFs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace rdmahd {

// Attribute reads are capped: sysfs attributes are at most one page (4 KiB), so anything bigger is
// not an attribute and is refused rather than read without bound. Readers of bigger procfs files
// (e.g. /proc/PID/numa_maps) pass their own cap.
inline constexpr std::size_t kMaxAttributeBytes = 64 * 1024;

// A file system layer between NodeFs and the files, for tests: makes reads fail as a kernel does
// (EINVAL from a port in switch mode, EIO from a restricted PF's counters) and counts them.
class FsFaults {
 public:
  virtual ~FsFaults() = default;
  // Called before every read of `path` through a NodeFs that carries this layer: ReadFile, and
  // each HeldFile::Read (an open and read, or a pread of a held descriptor). 0 lets the read go
  // on; an errno fails it with that errno. Called from the collection's thread.
  virtual int BeforeRead(const std::string& path) = 0;
};

class NodeFs {
 public:
  // `dcb_dir`: when non-empty, DCB state is read from captured `dcb -j` JSON files in this folder
  // (--path.dcb) instead of netlink, so a captured node can be analysed elsewhere.
  // `dev_root`: where device nodes are looked up (--path.dev: /dev/infiniband/uverbsN, rdma_cm).
  // Empty: DefaultDevRoot(sysfs_root).
  NodeFs(std::string sysfs_root, std::string procfs_root, std::string dcb_dir = "", std::string dev_root = "");

  // "/dev" for the live /sys; for a captured tree whose sysfs folder is named "sys", the folder
  // "dev" beside it (capture/sys -> capture/dev), else "<sysfs root>/dev": analysing a capture
  // never looks at this machine's /dev.
  static std::string DefaultDevRoot(const std::string& sysfs_root);
  // Device nodes are only stat()ed (lstat: never followed), not read, so this root needs no
  // containment.
  const std::string& dev_root() const { return dev_; }
  std::string Dev(std::string_view rel) const;

  const std::string& sysfs_root() const { return sysfs_; }
  // True when the sysfs root is the running kernel's own /sys. False for captured or generated trees.
  static bool IsLiveSysfsRoot(const std::string& root);
  // True when the procfs root is the running kernel's own /proc (so /proc/self is this process).
  static bool IsLiveProcfsRoot(const std::string& root);
  // Whether collectors may ask the running kernel directly (DCB and RDMA netlink, the SIOCETHTOOL
  // ioctl, libibverbs): only when that describes the node these files show, which is exactly when
  // the sysfs root is the live /sys. On any other tree the kernel is never asked, whatever names
  // the tree holds (a captured "eth0" is not this machine's eth0): a fact only the kernel gives is
  // then read from --path.dcb or is unknown, "not captured". The one place this is decided.
  bool asks_kernel() const { return asks_kernel_; }
  // Tests and benchmarks: this same tree, standing for a kernel they control (a fake transport, a
  // network namespace of their own), which collectors then ask as on the live /sys.
  NodeFs AskingKernelForTest() const;
  // Tests: this same tree, every read going through `faults` first (FsFaults above).
  NodeFs WithFaultsForTest(std::shared_ptr<FsFaults> faults) const;
  FsFaults* faults() const { return faults_.get(); }
  const std::string& procfs_root() const { return procfs_; }
  const std::string& dcb_dir() const { return dcb_; }
  // A saved kernel log (--path.kmsg: dmesg, dmesg -r, journalctl -k -o short-monotonic, a copy of
  // /dev/kmsg) read instead of the live /dev/kmsg; empty: the live one where asks_kernel().
  const std::string& kernel_log() const { return kernel_log_; }
  void set_kernel_log(std::string path) { kernel_log_ = std::move(path); }

  // Absolute paths under the roots. `rel` is relative to the root ("class/infiniband").
  std::string Sys(std::string_view rel) const;
  std::string Proc(std::string_view rel) const;

  // Every function below takes a path made by Sys()/Proc() (or under dcb_dir()). On a captured
  // tree (a root that is not the live /sys or /proc, and the DCB folder) the path is resolved
  // inside its root: symlinks are followed as if the root were "/" (relative ones as usual,
  // absolute ones from the root), ".." stops at the root, and a path whose resolution would leave
  // the root fails with EXDEV and a message saying so. A captured tree must not turn the daemon
  // into a reader of the host's files (a symlinked fw_ver once exported a private file as a label).
  // The live /sys and /proc are read directly. Paths under no root are read directly.

  // Whole-file read (open/read/close) of a regular file, at most `max_bytes`. Content is returned
  // as read (no trimming). A FIFO, device, socket or directory is refused ("not a regular file")
  // without blocking, and a bigger file is refused naming the cap.
  Result<std::string> ReadFile(const std::string& path, std::size_t max_bytes = kMaxAttributeBytes) const;
  // Directory entries, sorted, without "." and "..". Symlinks are listed like any entry.
  Result<std::vector<std::string>> ListDir(const std::string& path) const;
  // readlink(2); relative targets are returned as stored.
  Result<std::string> ReadLink(const std::string& path) const;
  bool Exists(const std::string& path) const;
  bool IsDir(const std::string& path) const;

  // Opens a regular file for reading: O_NONBLOCK (a FIFO must not block the collection), checked
  // with fstat, contained as above. The caller owns the descriptor.
  Result<int> OpenRegular(const std::string& path) const;

  // Test hook: behave as on a kernel without openat2 (< 5.6), where containment is checked in user
  // space (realpath of the target within realpath of the root). Process-wide, as the kernel's
  // answer is. Absolute symlinks then resolve on the host (and are refused when they leave).
  static void SetOpenat2UnavailableForTest(bool unavailable);

  struct Root;  // a captured root: its path and a directory descriptor (node_fs.cc)

 private:
  // The contained root `path` is under, or null (live root, or under no root).
  const Root* RootOf(std::string_view path, std::string_view& rel) const;

  std::string sysfs_;
  std::string procfs_;
  std::string dcb_;
  std::string kernel_log_;
  std::string dev_;
  bool asks_kernel_ = false;
  std::shared_ptr<FsFaults> faults_;  // tests only; null: reads go to the files
  // Shared so NodeFs stays cheap to copy; immutable after construction.
  std::vector<std::shared_ptr<const Root>> roots_;
};

// Why ReadRegularFile refused a file, for a caller that words it its own way (the config loader).
struct RegularFileRefusal {
  const char* not_regular = nullptr;       // what the path is instead: "a FIFO", "a directory", ...
  std::optional<std::uint64_t> too_large;  // over max_bytes: its size by fstat, 0 when it grew while read
};

// Whole-file read of a path under no NodeFs root (configuration files, test data): regular files
// only, O_NONBLOCK, at most `max_bytes` (a larger size by fstat is refused before reading). The
// Error says why in words; `refusal`, when given, says it as data too.
Result<std::string> ReadRegularFile(const std::string& path, std::size_t max_bytes,
                                    RegularFileRefusal* refusal = nullptr);

}  // namespace rdmahd
