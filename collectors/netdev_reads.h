// What the "netdev" (netdev_collector.h) and "roce" (roce_qos.h) collectors share to read the
// files of the netdevs behind RDMA ports: held reads that count their work and notice a netdev
// that went away, the capture files of a --path.dcb folder, the root layouts are made for, and
// the note for a fact a captured tree cannot give. Each collector holds its own layouts; nothing
// here holds state between calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/device_reader.h"
#include "collectors/rdma_netdevs.h"
#include "common/node_fs.h"
#include "common/result.h"
#include "common/shared_names.h"

namespace rdmahd {

// A priority as a label value.
std::string Priority(int p);

// Whether `name` is among the topology's netdevs (Topology::Netdevs(): sorted, unique), for
// dropping what a netdev that left it held, without a set of copies per collection.
bool IsListed(const std::vector<std::string>& netdevs, const std::string& name);

// Held reads for one collection: counts (re)opens, and remembers when a read said the object is
// gone. The returned view is valid until the next Read.
class HeldReader {
 public:
  HeldReader(const NodeFs& fs, std::string& buf, FsWork& work) : fs_(fs), buf_(buf), work_(work) {}
  std::optional<std::string_view> Read(HeldFile& f) {
    if (!f.is_open()) ++work_.opens;
    return Take(f.Read(fs_, buf_));
  }
  std::optional<std::string_view> Read(HeldFolder& folder, std::size_t i) {
    if (!folder.is_open(i)) ++work_.opens;
    return Take(folder.Read(i, fs_, buf_));
  }
  bool gone() const { return gone_; }
  const std::string& error() const { return error_; }  // of the last failed read

 private:
  std::optional<std::string_view> Take(Result<std::string_view> r) {
    if (r.ok()) return *r;
    if (IsGoneErrno(r.error().errno_value)) gone_ = true;
    error_ = r.error().message;
    return std::nullopt;
  }
  const NodeFs& fs_;
  std::string& buf_;
  FsWork& work_;
  bool gone_ = false;
  std::string error_;
};

// File `i` of `folder`, held if it exists.
std::optional<HeldFile> HeldIfExists(const NodeFs& fs, const std::shared_ptr<const HeldFile::Folder>& folder,
                                     std::uint32_t i, FsWork& work);

// The files of a netdev's capture folder (<dcb>/<netdev>/), shared by every netdev's folders:
// 0 ethtool-S.txt and 1 ethtool-a.txt (the netdev collector's), 2 pfc.json and 3 app.json (the
// roce collector's).
const std::shared_ptr<const NameList>& CaptureFileNames();

// The sysfs tree and capture folder layouts were made for: another one invalidates them all.
std::string LayoutRoot(const NodeFs& fs);

// Why a fact only the kernel (or a --path.dcb capture) gives is unknown on a tree that is not the
// live /sys, without --path.dcb: the kernel here describes this machine, whose netdev of the same
// name is another one. `what_comes` ("driver statistics come"); `capture`: the commands that
// capture it on the node into DIR.
std::string NotCaptured(std::string_view what_comes, std::string_view capture);

}  // namespace rdmahd
