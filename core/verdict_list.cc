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
// A text's place is its block's number and an offset into it, in 16 bits each.
constexpr std::size_t kMaxBlocks = 0xffff;
static_assert(kBlockBytes <= 0x10000);

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
  checks_.clear();
  blocks_.clear();
  block_sizes_.clear();
  open_ = SIZE_MAX;
  open_used_ = 0;
  index_.clear();
}

std::uint32_t VerdictList::Intern(std::string_view s) {
  if (auto it = index_.find(s); it != index_.end()) return it->second;
  if (texts_.size() >= UINT32_MAX) throw std::length_error("verdict list: too many texts");
  Text text{0, static_cast<std::uint32_t>(s.size())};
  if (!s.empty()) {
    if (s.size() > UINT32_MAX) throw std::length_error("verdict list: a text of 4 GiB or more");
    const bool own_block = s.size() > kBlockBytes / 4;
    if (own_block || open_ == SIZE_MAX || kBlockBytes - open_used_ < s.size()) {
      if (blocks_.size() > kMaxBlocks) throw std::length_error("verdict list: too many texts");
      const std::size_t bytes = own_block ? s.size() : kBlockBytes;
      blocks_.push_back(std::make_unique_for_overwrite<char[]>(bytes));
      block_sizes_.push_back(bytes);
      if (!own_block) {
        open_ = blocks_.size() - 1;
        open_used_ = 0;
      }
    }
    const std::size_t block = own_block ? blocks_.size() - 1 : open_;
    const std::size_t offset = own_block ? 0 : open_used_;
    if (!own_block) open_used_ += s.size();
    std::memcpy(blocks_[block].get() + offset, s.data(), s.size());
    text.at = static_cast<std::uint32_t>(block << 16 | offset);
  }
  const auto number = static_cast<std::uint32_t>(texts_.size());
  texts_.push_back(text);
  index_.emplace(TextAt(number), number);
  return number;
}

std::string_view VerdictList::TextAt(std::uint32_t number) const {
  const Text& t = texts_[number];
  if (t.size == 0) return {};
  return {blocks_[t.at >> 16].get() + (t.at & 0xffff), t.size};
}

std::uint16_t VerdictList::CheckOf(std::string_view check) {
  const std::uint32_t text = Intern(check);
  // A report has a few dozen checks, added one check at a time: the last is the likely one.
  for (std::size_t i = checks_.size(); i-- > 0;) {
    if (checks_[i] == text) return static_cast<std::uint16_t>(i);
  }
  if (checks_.size() > UINT16_MAX) throw std::length_error("verdict list: too many checks");
  checks_.push_back(text);
  return static_cast<std::uint16_t>(checks_.size() - 1);
}

void VerdictList::Add(const VerdictView& r) {
  const std::uint16_t check = CheckOf(r.check);
  records_.push_back(
      Record{Intern(r.subject), Intern(r.reason), Intern(r.fix), check, static_cast<std::uint8_t>(r.verdict)});
}

void VerdictList::push_back(const CheckResult& r) {
  Add(VerdictView{r.check, r.subject, r.verdict, r.reason, r.fix});
}

void VerdictList::ShrinkToFit() {
  index_ = decltype(index_)();  // its buckets too (= {} would keep them)
  records_.shrink_to_fit();
  texts_.shrink_to_fit();
  checks_.shrink_to_fit();
  // The open block's unused room: its texts move to a block of their exact size (at the same place,
  // so their numbers still find them).
  if (open_ != SIZE_MAX && open_used_ < block_sizes_[open_]) {
    const std::size_t used = std::max<std::size_t>(open_used_, 1);
    auto exact = std::make_unique_for_overwrite<char[]>(used);
    std::memcpy(exact.get(), blocks_[open_].get(), open_used_);
    blocks_[open_] = std::move(exact);
    block_sizes_[open_] = used;
  }
  open_ = SIZE_MAX;
  open_used_ = 0;
}

VerdictView VerdictList::operator[](std::size_t i) const {
  const Record& r = records_[i];
  return VerdictView{TextAt(checks_[r.check]), TextAt(r.subject), static_cast<Verdict>(r.verdict), TextAt(r.reason),
                     TextAt(r.fix)};
}

VerdictView VerdictList::at(std::size_t i) const {
  if (i >= size()) throw std::out_of_range("verdict list: no verdict " + std::to_string(i));
  return (*this)[i];
}

std::size_t VerdictList::MemoryBytes() const {
  std::size_t bytes = 0;
  if (records_.capacity() > 0) bytes += HeapBlock(records_.capacity() * sizeof(Record));
  if (texts_.capacity() > 0) bytes += HeapBlock(texts_.capacity() * sizeof(Text));
  if (checks_.capacity() > 0) bytes += HeapBlock(checks_.capacity() * sizeof(std::uint32_t));
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
