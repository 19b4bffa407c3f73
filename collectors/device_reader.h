// DeviceReader: held reads of one RDMA device's sysfs files that tell "this value is unreadable"
// from "the device is gone". A device is gone only when its own directory is (or was re-created:
// a new inode); ENOENT/ENODEV on one file while the directory stands (a dangling symlink in
// counters/, an attribute the driver removed) costs that value only, or one bad file would hide
// the whole device and its failing verdicts. Used by the topology stage and the devices collector.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/node_fs.h"
#include "common/result.h"

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

class DeviceReader {
 public:
  // `dir` is the device's directory as discovered, with inode `inode`. Problems with single
  // values go to `errors`; `buf` is reused across reads.
  DeviceReader(const NodeFs& fs, std::string& buf, std::vector<std::string>& errors, const std::string& dir,
               ino_t inode)
      : fs_(fs), buf_(buf), errors_(errors), dir_(dir), inode_(inode) {}

  const NodeFs& fs() const { return fs_; }

  // Once set, every later Read returns nullopt: stop reading this device.
  bool gone() const { return gone_.has_value(); }
  const std::string& gone_message() const { return *gone_; }

  // Held read; nullopt when the value is unavailable (error recorded) or the device is gone.
  std::optional<std::string_view> Read(HeldFile& file);
  // Records a failed read: the device is gone, or this one value is.
  void Fail(const Error& e);
  void Unparseable(const std::string& path, std::string_view text);

 private:
  const NodeFs& fs_;
  std::string& buf_;
  std::vector<std::string>& errors_;
  const std::string& dir_;
  ino_t inode_;
  std::optional<std::string> gone_;
};

}  // namespace rdmahd
