#include "common/held_files.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <optional>

#include "common/pread_all.h"

namespace rdmahd {

// ---------------------------------------------------------------------------------------------
// HeldFdBudget

std::size_t HeldFdBudget::ForLimit(std::uint64_t soft_limit) {
  if (soft_limit <= kReserve) return 0;
  const std::uint64_t b = soft_limit - kReserve;
  return b >= kUnset ? kUnset - 1 : static_cast<std::size_t>(b);
}

HeldFdBudget& HeldFdBudget::Process() {
  // Constant-initialized atomics, trivially destructible: usable from any static destructor.
  static constinit HeldFdBudget budget;
  return budget;
}

void HeldFdBudget::SetLimit(std::size_t limit) { limit_.store(std::min(limit, kUnset - 1)); }

std::size_t HeldFdBudget::limit() const {
  std::size_t l = limit_.load(std::memory_order_relaxed);
  if (l != kUnset) return l;
  rlimit rl{};
  l = ::getrlimit(RLIMIT_NOFILE, &rl) == 0 ? ForLimit(rl.rlim_cur) : 0;
  std::size_t expected = kUnset;
  if (!limit_.compare_exchange_strong(expected, l)) l = expected;  // set meanwhile: keep that
  return l;
}

bool HeldFdBudget::TryHold() {
  const std::size_t l = limit();
  std::size_t h = held_.load(std::memory_order_relaxed);
  while (h < l) {
    if (held_.compare_exchange_weak(h, h + 1, std::memory_order_relaxed)) return true;
  }
  exhausted_.store(true, std::memory_order_relaxed);
  return false;
}

void HeldFdBudget::Release() { held_.fetch_sub(1, std::memory_order_relaxed); }

void HeldFdBudget::CountUnheldRead() { unheld_reads_.fetch_add(1, std::memory_order_relaxed); }

bool HeldFdBudget::TakeExhaustedNotice() {
  return exhausted_.load(std::memory_order_relaxed) && !notice_taken_.exchange(true);
}

void HeldFdBudget::ResetForTest() {
  limit_.store(kUnset);
  unheld_reads_.store(0);
  exhausted_.store(false);
  notice_taken_.store(false);
}

// ---------------------------------------------------------------------------------------------
// HeldFile, HeldFiles

Result<std::string_view> HeldFiles::Read(const NodeFs& fs, const std::string& path) {
  Result<std::string_view> r = std::string_view();
  auto open = [&]() -> Result<HeldFile> { return HeldFile(path); };  // opened by its first Read
  auto fits = [](const HeldFile&) { return true; };
  auto read = [&](HeldFile& f) -> std::optional<std::string> {
    r = f.Read(fs, buf_);
    return std::nullopt;  // a failure is the caller's error, not a retry
  };
  (void)files_.Read(path, {}, open, fits, read);
  if (!r.ok()) files_.Erase(path);  // a later call opens it afresh
  return r;
}

void HeldFiles::ForgetPrefix(std::string_view prefix) {
  files_.Retain([&](const std::string& path, const HeldFile&) { return !path.starts_with(prefix); });
}

HeldFile::HeldFile(HeldFile&& other) noexcept
    : folder_(std::move(other.folder_)), index_(other.index_), fd_(other.fd_) {
  other.fd_ = -1;
}

HeldFile& HeldFile::operator=(HeldFile&& other) noexcept {
  if (this != &other) {
    Close();
    folder_ = std::move(other.folder_);
    index_ = other.index_;
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

void HeldFile::CloseDescriptor(int& fd) {
  if (fd >= 0) {
    ::close(fd);
    HeldFdBudget::Process().Release();
  }
  fd = -1;
}

void HeldFile::Close() { CloseDescriptor(fd_); }

template <class Path>
Result<std::string_view> HeldFile::ReadThrough(int& fd, const Path& path, const NodeFs& fs, std::string& buf) {
  std::size_t used = 0;
  if (FsFaults* faults = fs.faults()) {
    const std::string p = path();
    if (int err = faults->BeforeRead(p)) {
      CloseDescriptor(fd);  // as after any failed read
      return Error::FromErrno("read " + p, err);
    }
  }
  if (fd >= 0) {  // the steady state: one pread
    Status st = PreadAll(fd, buf, used, /*stop_on_short_read=*/true, kMaxAttributeBytes);
    if (!st.ok()) {
      CloseDescriptor(fd);
      return ReadError(path(), st.error());
    }
    return std::string_view(buf.data(), used);
  }
  const std::string p = path();
  Result<int> opened = fs.OpenRegular(p);
  if (!opened.ok()) return opened.error();
  Status st = PreadAll(*opened, buf, used, /*stop_on_short_read=*/true, kMaxAttributeBytes);
  HeldFdBudget& budget = HeldFdBudget::Process();
  if (st.ok() && budget.TryHold()) {
    fd = *opened;
  } else {
    ::close(*opened);
    if (st.ok()) budget.CountUnheldRead();
  }
  if (!st.ok()) return ReadError(p, st.error());
  return std::string_view(buf.data(), used);
}

Result<std::string_view> HeldFile::Read(const NodeFs& fs, std::string& buf) {
  return ReadThrough(fd_, [this] { return path(); }, fs, buf);
}

HeldFolder::HeldFolder(std::shared_ptr<const HeldFile::Folder> folder) : folder_(std::move(folder)) {
  const std::size_t n = size();
  if (n == 0) return;
  fds_ = std::make_unique_for_overwrite<int[]>(n);
  std::fill_n(fds_.get(), n, -1);
}

HeldFolder& HeldFolder::operator=(HeldFolder&& other) noexcept {
  if (this != &other) {
    Close();
    folder_ = std::move(other.folder_);
    fds_ = std::move(other.fds_);
  }
  return *this;
}

const std::shared_ptr<const NameList>& HeldFolder::names() const {
  static const std::shared_ptr<const NameList> kNone;
  return folder_ ? folder_->names : kNone;
}

Result<std::string_view> HeldFolder::Read(std::size_t i, const NodeFs& fs, std::string& buf) {
  return HeldFile::ReadThrough(fds_[i], [this, i] { return path(i); }, fs, buf);
}

std::size_t HeldFolder::open_count() const {
  std::size_t n = 0;
  for (std::size_t i = 0; i < size(); ++i) n += is_open(i);
  return n;
}

void HeldFolder::Skip(std::size_t i) {
  HeldFile::CloseDescriptor(fds_[i]);
  fds_[i] = kSkipped;
}

void HeldFolder::Close() {
  if (!fds_) return;
  for (std::size_t i = 0; i < size(); ++i) {
    if (fds_[i] != kSkipped) HeldFile::CloseDescriptor(fds_[i]);
  }
}

std::uint64_t RaiseOpenFileLimit() {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return 0;
  if (rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &rl);
    ::getrlimit(RLIMIT_NOFILE, &rl);
  }
  HeldFdBudget::Process().SetLimit(HeldFdBudget::ForLimit(rl.rlim_cur));
  return rl.rlim_cur;
}

}  // namespace rdmahd
