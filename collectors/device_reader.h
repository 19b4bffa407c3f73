// DeviceReader: held reads of one RDMA device's sysfs files that tell "this value is unreadable"
// from "the device is gone". A device is gone only when its own directory is (or was re-created:
// a new inode); ENOENT/ENODEV on one file while the directory stands (a dangling symlink in
// counters/, an attribute the driver removed) costs that value only, or one bad file would hide
// the whole device and its failing verdicts. Used by the topology stage and the devices collector.
//
// RdmaDeviceFiles: the files of one device that the devices collector reads on every collection.
// The topology stage discovers them with the device (collectors/topology_discovery.h), once per
// device object, and hands them over in TopologyDevice::files; the devices collector reads
// through them and discovers nothing itself.
#pragma once

#include <sys/types.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/held_files.h"
#include "common/node_fs.h"
#include "common/result.h"
#include "facts/rdma_device_facts.h"

namespace rdmahd {

// The kernel object behind a path or held descriptor is gone (device unregistered or re-created).
bool IsGoneErrno(int err);
// The inode of a directory (to notice a device re-created under the same name); nullopt if absent.
std::optional<ino_t> DirInode(const std::string& path);

// Whether an attribute file is there to hold: false only when it does not exist (ENOENT, ENOTDIR).
// A file that cannot be looked at (EACCES on its folder), a dangling symlink or one leaving a
// captured tree is held, so that its reads fail with an error naming it on every collection
// instead of the value vanishing without a word.
bool AttributePresent(const NodeFs& fs, const std::string& path);

// Reads that fail in a way that does not pass by itself (EINVAL: a port in switch mode answers it
// to every read; EIO, EOPNOTSUPP, EPERM: a restricted PF refuses its counters, and on mlx5 every
// such read makes the kernel log an ACCESS_REG failure) are not tried on every collection: a file
// that failed so is read again 1 minute later, then after 2, 4, ... up to 1 hour between reads,
// until a read succeeds. Meanwhile its value is absent. Kept per device object (RdmaDeviceFiles)
// by the devices collector, keyed by the held file's address, or its folder's and its index
// (stable: the files never move once discovered).
class ReadBackoff {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr Clock::duration kFirstWait = std::chrono::minutes(1);
  static constexpr Clock::duration kLongestWait = std::chrono::hours(1);
  // The errnos backed off, in the order of read_errors().
  static constexpr std::array<int, 4> kErrnos = {EINVAL, EIO, EOPNOTSUPP, EPERM};
  static constexpr std::array<std::string_view, 4> kErrnoNames = {"EINVAL", "EIO", "EOPNOTSUPP", "EPERM"};
  // Index of `err` in kErrnos, or -1: not backed off.
  static int ErrnoIndex(int err);

  // A file: a HeldFile (index 0), or file `index` of a HeldFolder.
  struct Key {
    const void* holder;
    std::size_t index;
    bool operator==(const Key&) const = default;
  };
  static Key KeyOf(const HeldFile& file) { return {&file, 0}; }
  static Key KeyOf(const HeldFolder& folder, std::size_t i) { return {&folder, i}; }

  struct Entry {
    Key file;
    int errno_value;
    Clock::duration wait;     // until the next read, doubled on each failure
    Clock::time_point next;   // the next read is due then
    std::string message;      // the first failure's error, reported on every collection meanwhile
  };

  // The entry of `file`, or null.
  const Entry* Find(Key file) const;
  // A read of `file` failed at `now` with `e` (an errno of kErrnos): starts or doubles its wait.
  const Entry& Failed(Key file, const Error& e, Clock::time_point now);
  // A read of `file` succeeded: it is read on every collection again.
  void Succeeded(Key file);

  bool empty() const { return entries_.empty(); }
  const std::vector<Entry>& entries() const { return entries_; }
  // Failed reads so far by kErrnos index (every attempt, retries included).
  const std::array<std::uint64_t, 4>& read_errors() const { return read_errors_; }

 private:
  std::vector<Entry> entries_;  // few: a device's failing files
  std::array<std::uint64_t, 4> read_errors_{};
};

// A device's attribute files, in the order the info metric lists them.
inline constexpr std::array<std::string_view, 6> kRdmaDeviceAttributeFiles = {
    "fw_ver", "board_id", "hca_type", "node_guid", "sys_image_guid", "node_type"};

// One counter directory (ports/P/counters/, counters_ext/ or hw_counters/): a held file per name,
// the names shared with every snapshot's CounterValues (names() null: no such directory).
using RdmaCounterFiles = HeldFolder;

struct RdmaPortFiles {
  std::uint32_t port = 0;
  std::optional<HeldFile> state, phys_state, rate;  // nullopt: file absent
  RdmaCounterFiles counters, counters_ext, hw_counters;
  bool hw_counters_from_files = false;  // the devices collector's: RDMA netlink failed for this port
};

// Made by the topology stage and never changed by it once handed out (it makes a new one instead),
// so the devices collector, which alone reads through it, may change it without locking: held
// descriptors open on first read, stable attributes kept once read. A Snapshot's copy of the
// Topology keeps it alive and never reads it.
struct RdmaDeviceFiles {
  std::string dir;  // class/infiniband/<device>, as discovered
  ino_t inode = 0;  // of `dir`
  // nullopt: the file is absent, or (stable attributes) already read into stable_values.
  std::array<std::optional<HeldFile>, kRdmaDeviceAttributeFiles.size()> attrs;
  std::array<std::optional<std::string>, kRdmaDeviceAttributeFiles.size()> stable_values;
  std::vector<RdmaPortFiles> ports;  // the Topology's ports of the device, in order
  // A counter directory could not be listed (not: does not exist). The topology stage discovers
  // the files again on its next collection; the devices collector reports these as its errors.
  std::vector<std::string> discovery_errors;
  ReadBackoff backoff;  // the devices collector's

  std::size_t HeldDescriptors() const;
};

// Lists the files of the device whose directory is `dir` (inode `inode`) for its `ports`. Ports of
// one driver list the same counter files: equal name lists are one list (ShareNames), so the
// renderer maps named counters once per distinct list and a thousand ports hold the names once.
RdmaDeviceFiles DiscoverRdmaDeviceFiles(const NodeFs& fs, const std::string& dir, ino_t inode,
                                        const std::vector<std::uint32_t>& ports);

class DeviceReader {
 public:
  // `dir` is the device's directory as discovered, with inode `inode`. Problems with single
  // values go to `errors`; `buf` is reused across reads.
  DeviceReader(const NodeFs& fs, std::string& buf, std::vector<std::string>& errors, const std::string& dir,
               ino_t inode)
      : fs_(fs), buf_(buf), errors_(errors), dir_(dir), inode_(inode) {}
  // Reads `backoff` says to leave for now are skipped (value absent, its first error reported
  // again), and reads failing with one of ReadBackoff::kErrnos go into it, as of `now`.
  void UseBackoff(ReadBackoff& backoff, ReadBackoff::Clock::time_point now) {
    backoff_ = &backoff;
    now_ = now;
  }

  const NodeFs& fs() const { return fs_; }

  // Once set, every later Read returns nullopt: stop reading this device.
  bool gone() const { return gone_.has_value(); }
  const std::string& gone_message() const { return *gone_; }

  // Held read; nullopt when the value is unavailable (error recorded) or the device is gone.
  std::optional<std::string_view> Read(HeldFile& file);
  // The same for file `i` of `folder`.
  std::optional<std::string_view> Read(HeldFolder& folder, std::size_t i);
  // Records a failed read: the device is gone, or this one value is.
  void Fail(const Error& e);
  // The last Read failed outright: not skipped for a backoff, not a device that is gone, but this
  // one file unreadable (over the read cap, a dangling link, EACCES). Its error is recorded.
  bool last_read_failed() const { return last_read_failed_; }
  // Records a value that `path` holds but that is not one (its size named, its text never shown).
  void Unparseable(const std::string& path, std::string_view text);

 private:
  template <class ReadFile>
  std::optional<std::string_view> ReadHeld(ReadBackoff::Key key, const ReadFile& read);

  const NodeFs& fs_;
  std::string& buf_;
  std::vector<std::string>& errors_;
  const std::string& dir_;
  ino_t inode_;
  ReadBackoff* backoff_ = nullptr;
  ReadBackoff::Clock::time_point now_{};
  std::optional<std::string> gone_;
  bool last_read_failed_ = false;
};

}  // namespace rdmahd
