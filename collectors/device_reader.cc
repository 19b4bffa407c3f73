#include "collectors/device_reader.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>

#include "common/layout_cache.h"
#include "common/parse.h"
#include "common/shared_names.h"

namespace rdmahd {

bool IsGoneErrno(int err) { return err == ENODEV || err == ENOENT || err == ENXIO; }

std::optional<ino_t> DirInode(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return st.st_ino;
}

bool AttributePresent(const NodeFs& fs, const std::string& path) {
  auto link = fs.ReadLink(path);  // lstat-like: a dangling symlink is there
  if (link.ok()) return true;
  const int err = link.error().errno_value;
  return err != ENOENT && err != ENOTDIR;  // EINVAL: there, and not a symlink
}

namespace {

// A missing directory is normal (bnxt_re and rxe have no counters/); other failures are reported.
RdmaCounterFiles DiscoverCounterFiles(const NodeFs& fs, const std::string& dir, std::vector<std::string>& errors) {
  auto names = fs.ListDir(dir);  // sorted, unique
  if (!names.ok()) {
    if (names.error().errno_value != ENOENT) errors.push_back(names.error().message);
    return {};
  }
  return RdmaCounterFiles(HeldFile::MakeFolder(dir, ShareNames(std::move(*names))));
}

}  // namespace

std::size_t RdmaDeviceFiles::HeldDescriptors() const {
  std::size_t n = 0;
  for (const auto& f : attrs) n += CountOpen(f);
  for (const RdmaPortFiles& p : ports) {
    n += CountOpen(p.state) + CountOpen(p.phys_state) + CountOpen(p.rate);
    for (const RdmaCounterFiles* counters : {&p.counters, &p.counters_ext, &p.hw_counters}) {
      n += counters->open_count();
    }
  }
  return n;
}

RdmaDeviceFiles DiscoverRdmaDeviceFiles(const NodeFs& fs, const std::string& dir, ino_t inode,
                                        const std::vector<std::uint32_t>& ports) {
  RdmaDeviceFiles d;
  d.dir = dir;
  d.inode = inode;
  const std::string prefix = dir + "/";
  // The attribute files of every device and port, by name: one Folder per folder, not per file.
  static const auto kDeviceAttrs =
      std::make_shared<const NameList>(kRdmaDeviceAttributeFiles.begin(), kRdmaDeviceAttributeFiles.end());
  static const auto kPortAttrs = std::make_shared<const NameList>(NameList{"state", "phys_state", "rate"});
  auto held_if_present = [&fs](const std::shared_ptr<const HeldFile::Folder>& folder,
                               std::uint32_t i) -> std::optional<HeldFile> {
    HeldFile file(folder, i);
    if (!AttributePresent(fs, file.path())) return std::nullopt;
    return file;
  };
  const auto device_folder = HeldFile::MakeFolder(dir, kDeviceAttrs);
  for (std::uint32_t i = 0; i < kRdmaDeviceAttributeFiles.size(); ++i) d.attrs[i] = held_if_present(device_folder, i);
  d.ports.reserve(ports.size());
  for (std::uint32_t port : ports) {
    RdmaPortFiles& p = d.ports.emplace_back();
    p.port = port;
    const std::string port_dir = prefix + "ports/" + std::to_string(port);
    const auto port_folder = HeldFile::MakeFolder(port_dir, kPortAttrs);
    p.state = held_if_present(port_folder, 0);
    p.phys_state = held_if_present(port_folder, 1);
    p.rate = held_if_present(port_folder, 2);
    p.counters = DiscoverCounterFiles(fs, port_dir + "/counters", d.discovery_errors);
    p.counters_ext = DiscoverCounterFiles(fs, port_dir + "/counters_ext", d.discovery_errors);
    p.hw_counters = DiscoverCounterFiles(fs, port_dir + "/hw_counters", d.discovery_errors);
  }
  return d;
}

int ReadBackoff::ErrnoIndex(int err) {
  for (std::size_t i = 0; i < kErrnos.size(); ++i) {
    if (kErrnos[i] == err) return static_cast<int>(i);
  }
  return -1;
}

const ReadBackoff::Entry* ReadBackoff::Find(Key file) const {
  for (const Entry& e : entries_) {
    if (e.file == file) return &e;
  }
  return nullptr;
}

const ReadBackoff::Entry& ReadBackoff::Failed(Key file, const Error& e, Clock::time_point now) {
  ++read_errors_[static_cast<std::size_t>(ErrnoIndex(e.errno_value))];
  for (Entry& entry : entries_) {
    if (entry.file != file) continue;
    entry.errno_value = e.errno_value;
    entry.wait = std::min<Clock::duration>(entry.wait * 2, kLongestWait);
    entry.next = now + entry.wait;
    return entry;
  }
  return entries_.emplace_back(Entry{file, e.errno_value, kFirstWait, now + kFirstWait,
                                     e.message + "; read again after 1 min, doubling up to 1 h, until it reads"});
}

void ReadBackoff::Succeeded(Key file) {
  std::erase_if(entries_, [&](const Entry& e) { return e.file == file; });
}

template <class ReadFile>
std::optional<std::string_view> DeviceReader::ReadHeld(ReadBackoff::Key key, const ReadFile& read) {
  last_read_failed_ = false;
  if (gone()) return std::nullopt;
  if (backoff_ != nullptr && !backoff_->empty()) {
    if (const ReadBackoff::Entry* e = backoff_->Find(key); e != nullptr && now_ < e->next) {
      errors_.push_back(e->message);  // the same words every collection: logged once
      return std::nullopt;
    }
  }
  Result<std::string_view> r = read();
  if (r.ok()) {
    if (backoff_ != nullptr && !backoff_->empty()) backoff_->Succeeded(key);
    return *r;
  }
  if (backoff_ != nullptr && ReadBackoff::ErrnoIndex(r.error().errno_value) >= 0) {
    errors_.push_back(backoff_->Failed(key, r.error(), now_).message);
    return std::nullopt;
  }
  Fail(r.error());
  return std::nullopt;
}

std::optional<std::string_view> DeviceReader::Read(HeldFile& file) {
  return ReadHeld(ReadBackoff::KeyOf(file), [&] { return file.Read(fs_, buf_); });
}

std::optional<std::string_view> DeviceReader::Read(HeldFolder& folder, std::size_t i) {
  return ReadHeld(ReadBackoff::KeyOf(folder, i), [&] { return folder.Read(i, fs_, buf_); });
}

void DeviceReader::Fail(const Error& e) {
  if (IsGoneErrno(e.errno_value) && DirInode(dir_) != std::optional<ino_t>(inode_)) {
    gone_ = e.message;
  } else {
    errors_.push_back(e.message);
    last_read_failed_ = true;
  }
}

void DeviceReader::Unparseable(const std::string& path, std::string_view text) {
  // The file's text is never echoed: it is whatever the file holds (kilobytes of it, or bytes a
  // terminal or a log reader would act on).
  errors_.push_back("parse " + path + ": not a value of this file (" + std::to_string(Trim(text).size()) +
                    " bytes, not shown)");
}

}  // namespace rdmahd
