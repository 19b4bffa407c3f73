// VerdictList: one collection's verdicts as the report keeps them until the next collection.
//
// A node of thousands of ports has tens of thousands of verdicts, and their text repeats: a check's
// name in every verdict of that check, the same reason on every port in the same state ("no PCI
// function"), an empty fix on every ok. A vector of CheckResult keeps four strings per verdict
// (136 bytes, plus a heap block for each text past 15 characters). The list keeps each distinct
// text once, in large blocks, and per verdict four 32-bit text numbers and its verdict: 20 bytes.
//
// Verdicts are read back as VerdictView: string_views into the list, valid while the list lives
// (and across a move of it). Texts are shared through an index kept only while the list is being
// filled: ShrinkToFit() drops it once the last verdict is in.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/check.h"

namespace rdmahd {

// One verdict of a VerdictList: CheckResult's fields, borrowed from the list.
struct VerdictView {
  std::string_view check;
  std::string_view subject;
  Verdict verdict = Verdict::kUnknown;
  std::string_view reason;
  std::string_view fix;

  CheckResult ToResult() const;
};

class VerdictList {
 public:
  class const_iterator {
   public:
    using iterator_category = std::random_access_iterator_tag;
    using value_type = VerdictView;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = VerdictView;

    const_iterator() = default;
    const_iterator(const VerdictList* list, std::size_t i) : list_(list), i_(i) {}
    VerdictView operator*() const { return (*list_)[i_]; }
    VerdictView operator[](difference_type n) const { return (*list_)[i_ + static_cast<std::size_t>(n)]; }
    const_iterator& operator++() { ++i_; return *this; }
    const_iterator operator++(int) { const_iterator t = *this; ++i_; return t; }
    const_iterator& operator--() { --i_; return *this; }
    const_iterator operator--(int) { const_iterator t = *this; --i_; return t; }
    const_iterator& operator+=(difference_type n) { i_ += static_cast<std::size_t>(n); return *this; }
    const_iterator& operator-=(difference_type n) { i_ -= static_cast<std::size_t>(n); return *this; }
    friend const_iterator operator+(const_iterator it, difference_type n) { return it += n; }
    friend const_iterator operator+(difference_type n, const_iterator it) { return it += n; }
    friend const_iterator operator-(const_iterator it, difference_type n) { return it -= n; }
    friend difference_type operator-(const const_iterator& a, const const_iterator& b) {
      return static_cast<difference_type>(a.i_) - static_cast<difference_type>(b.i_);
    }
    friend bool operator==(const const_iterator& a, const const_iterator& b) { return a.i_ == b.i_; }
    friend auto operator<=>(const const_iterator& a, const const_iterator& b) { return a.i_ <=> b.i_; }

   private:
    const VerdictList* list_ = nullptr;
    std::size_t i_ = 0;
  };
  using value_type = VerdictView;
  using iterator = const_iterator;

  VerdictList();
  VerdictList(std::initializer_list<CheckResult> verdicts);
  explicit VerdictList(const std::vector<CheckResult>& verdicts);
  VerdictList(const VerdictList& other);
  VerdictList& operator=(const VerdictList& other);
  VerdictList(VerdictList&&) noexcept;
  VerdictList& operator=(VerdictList&&) noexcept;
  ~VerdictList();

  // Appends a copy of `r`.
  void push_back(const CheckResult& r);
  void Add(const VerdictView& r);
  // Room for `n` verdicts in all.
  void reserve(std::size_t n) { records_.reserve(n); }
  // The list is complete: drops what only filling it needs (the index of texts) and spare room.
  void ShrinkToFit();

  std::size_t size() const { return records_.size(); }
  bool empty() const { return records_.empty(); }
  VerdictView operator[](std::size_t i) const;
  VerdictView at(std::size_t i) const;  // throws std::out_of_range
  VerdictView front() const { return (*this)[0]; }
  VerdictView back() const { return (*this)[size() - 1]; }
  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, size()}; }

  // Distinct texts held, and the heap the list holds (records, texts, index).
  std::size_t texts() const { return texts_.size(); }
  std::size_t MemoryBytes() const;

 private:
  // A verdict: its texts by number, its check by its place among the list's few check names.
  struct Record {
    std::uint32_t subject, reason, fix;  // numbers of texts_
    std::uint16_t check;                 // place in checks_
    std::uint8_t verdict;
  };
  static_assert(sizeof(Record) == 16);
  // Where a text's bytes are: block `at >> 16`, from byte `at & 0xffff`.
  struct Text {
    std::uint32_t at, size;
  };
  // The number of text `s`, stored first if the list does not hold it yet.
  std::uint32_t Intern(std::string_view s);
  std::uint16_t CheckOf(std::string_view check);
  std::string_view TextAt(std::uint32_t number) const;
  void Clear();

  std::vector<Record> records_;
  std::vector<Text> texts_;                      // each distinct text, in the blocks below
  std::vector<std::uint32_t> checks_;            // the check names' text numbers
  std::vector<std::unique_ptr<char[]>> blocks_;  // the texts' bytes
  std::vector<std::size_t> block_sizes_;
  std::size_t open_ = SIZE_MAX;                  // the block texts are added to (SIZE_MAX: none)
  std::size_t open_used_ = 0;                    // its bytes in use
  std::unordered_map<std::string_view, std::uint32_t> index_;  // text -> number, while filling
};

}  // namespace rdmahd
