#include "collectors/device_reader.h"

#include <sys/stat.h>

#include <cerrno>

#include "common/parse.h"

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

std::optional<std::string_view> DeviceReader::Read(HeldFile& file) {
  if (gone()) return std::nullopt;
  Result<std::string_view> r = file.Read(fs_, buf_);
  if (r.ok()) return *r;
  Fail(r.error());
  return std::nullopt;
}

void DeviceReader::Fail(const Error& e) {
  if (IsGoneErrno(e.errno_value) && DirInode(dir_) != std::optional<ino_t>(inode_)) {
    gone_ = e.message;
  } else {
    errors_.push_back(e.message);
  }
}

void DeviceReader::Unparseable(const std::string& path, std::string_view text) {
  errors_.push_back("parse " + path + ": unexpected value \"" + std::string(Trim(text)) + "\"");
}

}  // namespace rdmahd
