#include "core/verdict_list.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

namespace rdmahd {
namespace {

// Texts are stored in blocks of this size; a text longer than a quarter of it gets a block of its
// own, so that a block is never left mostly empty for one long text.
constexpr std::size_t kBlockBytes = 64 * 1024;

// A heap block as glibc's malloc hands it out: a size word in front, rounded up to 16 bytes.
std::size_t HeapBlock(std::size_t bytes) { return (bytes + sizeof(std::size_t) + 15) / 16 * 16; }

}  // namespace

CheckResult VerdictView::ToResult() const {
  return CheckResult{std::string(check), std::string(subject), verdict, std::string(reason), std::string(fix)};
}

VerdictList::VerdictList() = default;
VerdictList::~VerdictList() = default;
VerdictList::VerdictList(VerdictList&&) noexcept = default;
VerdictList& VerdictList::operator=(VerdictList&&) noexcept = default;

VerdictList::VerdictList(std::initializer_list<CheckResult> verdicts) {
  reserve(verdicts.size());
  for (const CheckResult& r : verdicts) push_back(r);
}

VerdictList::VerdictList(const std::vector<CheckResult>& verdicts) {
  reserve(verdicts.size());
  for (const CheckResult& r : verdicts) push_back(r);
}

// The texts are views into blocks the copy must own: it is filled again, verdict by verdict.
VerdictList::VerdictList(const VerdictList& other) {
  reserve(other.size());
  for (VerdictView v : other) Add(v);
}

VerdictList& VerdictList::operator=(const VerdictList& other) {
  if (this != &other) {
    VerdictList copy(other);
    *this = std::move(copy);
  }
  return *this;
}

void VerdictList::Clear() {
  records_.clear();
  texts_.clear();
  blocks_.clear();
  block_sizes_.clear();
  free_ = nullptr;
  free_bytes_ = 0;
  index_.clear();
}

std::uint32_t VerdictList::Intern(std::string_view s) {
  if (auto it = index_.find(s); it != index_.end()) return it->second;
  if (texts_.size() >= UINT32_MAX) throw std::length_error("verdict list: too many texts");
  std::string_view stored;
  if (!s.empty()) {
    char* at = nullptr;
    if (s.size() > kBlockBytes / 4) {
      blocks_.push_back(std::make_unique_for_overwrite<char[]>(s.size()));
      block_sizes_.push_back(s.size());
      at = blocks_.back().get();
      // A block of its own goes before the last one, so that the last block's free room stays usable.
      if (blocks_.size() > 1) {
        std::swap(blocks_[blocks_.size() - 1], blocks_[blocks_.size() - 2]);
        std::swap(block_sizes_[block_sizes_.size() - 1], block_sizes_[block_sizes_.size() - 2]);
      }
    } else {
      if (free_bytes_ < s.size()) {
        blocks_.push_back(std::make_unique_for_overwrite<char[]>(kBlockBytes));
        block_sizes_.push_back(kBlockBytes);
        free_ = blocks_.back().get();
        free_bytes_ = kBlockBytes;
      }
      at = free_;
      free_ += s.size();
      free_bytes_ -= s.size();
    }
    std::memcpy(at, s.data(), s.size());
    stored = std::string_view(at, s.size());
  }
  const auto number = static_cast<std::uint32_t>(texts_.size());
  texts_.push_back(stored);
  index_.emplace(stored, number);
  return number;
}

void VerdictList::Add(const VerdictView& r) {
  records_.push_back(Record{Intern(r.check), Intern(r.subject), Intern(r.reason), Intern(r.fix), r.verdict});
}

void VerdictList::push_back(const CheckResult& r) {
  Add(VerdictView{r.check, r.subject, r.verdict, r.reason, r.fix});
}

void VerdictList::ShrinkToFit() {
  index_ = {};
  records_.shrink_to_fit();
  texts_.shrink_to_fit();
  // The last block's unused room: its texts move to a block of their exact size.
  if (free_ != nullptr && !blocks_.empty() && free_bytes_ > 0) {
    char* const old = blocks_.back().get();
    const std::size_t used = block_sizes_.back() - free_bytes_;
    auto exact = std::make_unique_for_overwrite<char[]>(std::max<std::size_t>(used, 1));
    std::memcpy(exact.get(), old, used);
    for (std::string_view& t : texts_) {
      if (!t.empty() && t.data() >= old && t.data() < old + used) t = std::string_view(exact.get() + (t.data() - old), t.size());
    }
    blocks_.back() = std::move(exact);
    block_sizes_.back() = std::max<std::size_t>(used, 1);
    free_ = nullptr;
    free_bytes_ = 0;
  }
}

VerdictView VerdictList::operator[](std::size_t i) const {
  const Record& r = records_[i];
  return VerdictView{texts_[r.check], texts_[r.subject], r.verdict, texts_[r.reason], texts_[r.fix]};
}

VerdictView VerdictList::at(std::size_t i) const {
  if (i >= size()) throw std::out_of_range("verdict list: no verdict " + std::to_string(i));
  return (*this)[i];
}

std::size_t VerdictList::MemoryBytes() const {
  std::size_t bytes = 0;
  if (records_.capacity() > 0) bytes += HeapBlock(records_.capacity() * sizeof(Record));
  if (texts_.capacity() > 0) bytes += HeapBlock(texts_.capacity() * sizeof(std::string_view));
  if (blocks_.capacity() > 0) bytes += HeapBlock(blocks_.capacity() * sizeof(blocks_[0]));
  if (block_sizes_.capacity() > 0) bytes += HeapBlock(block_sizes_.capacity() * sizeof(std::size_t));
  for (std::size_t b : block_sizes_) bytes += HeapBlock(b);
  // An unordered_map node holds the pair and the next pointer (and, for string keys, the hash).
  bytes += index_.size() * HeapBlock(sizeof(void*) + sizeof(std::pair<const std::string_view, std::uint32_t>) +
                                     sizeof(std::size_t));
  if (index_.bucket_count() > 1) bytes += HeapBlock(index_.bucket_count() * sizeof(void*));
  return bytes;
}

}  // namespace rdmahd
