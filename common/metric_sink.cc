#include "common/metric_sink.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "common/utf8.h"

namespace rdmahd {
namespace {

std::string_view TypeName(MetricType t) {
  switch (t) {
    case MetricType::Counter: return "counter";
    case MetricType::Gauge: return "gauge";
    case MetricType::Summary: return "summary";
    case MetricType::Histogram: return "histogram";
    case MetricType::Untyped: return "untyped";
  }
  return "untyped";
}

// True if `c` must be escaped: backslash and newline always, the double quote inside label values.
constexpr bool NeedsEscape(char c, bool quote) { return c == '\\' || c == '\n' || (quote && c == '"'); }

char* WriteRaw(char* p, std::string_view s) {
  std::memcpy(p, s.data(), s.size());
  return p + s.size();
}

// Writes `s` escaped at `p` (room for 2 * s.size() bytes) and returns the end.
char* WriteEscaped(char* p, std::string_view s, bool quote) {
  for (char c : s) {
    if (!NeedsEscape(c, quote)) [[likely]] {
      *p++ = c;
      continue;
    }
    *p++ = '\\';
    *p++ = c == '\n' ? 'n' : c;
  }
  return p;
}

// SWAR over a 4- or 8-byte word. True if no byte of `word` is zero (exact as a predicate over the
// whole word).
template <class Word>
constexpr bool NoZeroByte(Word word) {
  constexpr Word kOnes = static_cast<Word>(0x0101010101010101ULL);
  constexpr Word kHighs = static_cast<Word>(0x8080808080808080ULL);
  return static_cast<Word>((word - kOnes) & ~word & kHighs) == 0;
}

// True if no byte of `word` is a backslash, a newline, a double quote or >= 0x80: the bytes a
// label value copies unchanged.
template <class Word>
constexpr bool IsPlainWord(Word word) {
  constexpr Word kOnes = static_cast<Word>(0x0101010101010101ULL);
  constexpr Word kHighs = static_cast<Word>(0x8080808080808080ULL);
  return (word & kHighs) == 0 && NoZeroByte(static_cast<Word>(word ^ (kOnes * '\\'))) &&
         NoZeroByte(static_cast<Word>(word ^ (kOnes * '\n'))) && NoZeroByte(static_cast<Word>(word ^ (kOnes * '"')));
}
static_assert(IsPlainWord<std::uint64_t>(0x3736353433323130ULL) && !IsPlainWord<std::uint64_t>(0x373635345c323130ULL) &&
              !IsPlainWord<std::uint64_t>(0x3736353433320a30ULL) && !IsPlainWord<std::uint64_t>(0x2236353433323130ULL) &&
              !IsPlainWord<std::uint64_t>(0x37363534b3323130ULL) && IsPlainWord<std::uint32_t>(0x5d5b0b21U) &&
              !IsPlainWord<std::uint32_t>(0x5d5c0b21U));

template <class Word>
Word Load(const char* p) {
  Word w;
  std::memcpy(&w, p, sizeof w);
  return w;
}
template <class Word>
void Store(char* p, Word w) {
  std::memcpy(p, &w, sizeof w);
}

// The writers below run for every label of every sample: always inlined into AddRange (as
// out-of-line calls their set-up cost as much as the copying; measured with callgrind).

// WriteRaw for the short strings of every sample (label names, "_bucket"): up to 16 bytes are
// copied with two overlapping loads and stores instead of a call to memcpy.
[[gnu::always_inline]] inline char* WriteShort(char* p, std::string_view s) {
  const char* const data = s.data();
  const std::size_t n = s.size();
  if (n > 16) return WriteRaw(p, s);
  if (n >= 8) {
    Store(p, Load<std::uint64_t>(data));
    Store(p + n - 8, Load<std::uint64_t>(data + n - 8));
  } else if (n >= 4) {
    Store(p, Load<std::uint32_t>(data));
    Store(p + n - 4, Load<std::uint32_t>(data + n - 4));
  } else {
    for (std::size_t i = 0; i < n; ++i) p[i] = data[i];
  }
  return p + n;
}

// Room WriteLabelValue needs for `s`: escapes double a byte, and a single invalid byte becomes the
// 3-byte U+FFFD.
constexpr std::size_t LabelValueBound(std::string_view s) { return 3 * s.size(); }

// A label value, escaped, with ill-formed UTF-8 replaced by U+FFFD: Prometheus rejects the whole
// scrape over one invalid byte, and device names, counter file names and fw_ver come from files.
// ASCII (every byte of the usual label value) costs what plain escaping costs; only a byte >= 0x80
// is decoded.
[[gnu::always_inline]] inline char* WriteLabelValue(char* p, std::string_view s) {
  const char* const data = s.data();
  const std::size_t n = s.size();
  // Fast paths, whole words at a time: a word without a byte to escape and without a byte >= 0x80
  // is copied as it is. Most values (device and counter names, port numbers) are that through and
  // through. The last word may overlap the one before it (it is copied over the same bytes), and a
  // value of 4 to 7 bytes is two overlapping 4-byte words. The byte-wise loop below takes over at
  // the first word that is not plain, and for values under 4 bytes.
  std::size_t i = 0;
  if (n >= 8) {
    while (i + 8 <= n) {
      const auto word = Load<std::uint64_t>(data + i);
      if (!IsPlainWord(word)) break;
      Store(p, word);
      p += 8;
      i += 8;
    }
    if (i + 8 > n && i < n) {  // every byte so far was plain: out[k] == data[k] for k < i
      const auto last = Load<std::uint64_t>(data + n - 8);
      if (IsPlainWord(last)) {
        Store(p - (i + 8 - n), last);
        return p + (n - i);
      }
    }
  } else if (n >= 4) {
    const auto head = Load<std::uint32_t>(data);
    const auto tail = Load<std::uint32_t>(data + n - 4);
    if (IsPlainWord(head) && IsPlainWord(tail)) {
      Store(p, head);
      Store(p + n - 4, tail);
      return p + n;
    }
  }
  while (i < n) {
    const char c = data[i];
    if (static_cast<unsigned char>(c) < 0x80) [[likely]] {
      if (!NeedsEscape(c, /*quote=*/true)) [[likely]] {
        *p++ = c;
      } else {
        *p++ = '\\';
        *p++ = c == '\n' ? 'n' : c;
      }
      ++i;
      continue;
    }
    Utf8Step step = DecodeUtf8Step(s.substr(i));
    if (step.valid) {
      p = WriteRaw(p, s.substr(i, step.length));
    } else {
      p = WriteRaw(p, kUtf8Replacement);
    }
    i += step.length;
  }
  return p;
}

void AppendEscaped(std::string& out, std::string_view s, bool quote) {
  const std::size_t old = out.size();
  out.resize(old + 2 * s.size());
  out.resize(static_cast<std::size_t>(WriteEscaped(out.data() + old, s, quote) - out.data()));
}

// Room for any value AppendValue prints (the shortest round-trip double is at most 24 chars).
// Room WriteLabels needs for [begin, end): each name, `="`, its value at its longest, `"` and a comma.
constexpr std::size_t LabelsBound(const Label* begin, const Label* end) {
  std::size_t bound = 0;
  for (const Label* l = begin; l != end; ++l) bound += l->first.size() + LabelValueBound(l->second) + 4;
  return bound;
}

// `a="x",b="y"` for [begin, end); a comma before the first too when `after_others`. What a
// LabelPrefix holds and what every sample's braces hold, so the two always print alike.
[[gnu::always_inline]] inline char* WriteLabels(char* p, const Label* begin, const Label* end, bool after_others) {
  for (const Label* l = begin; l != end; ++l) {
    if (l != begin || after_others) *p++ = ',';
    p = WriteShort(p, l->first);
    *p++ = '=';
    *p++ = '"';
    p = WriteLabelValue(p, l->second);
    *p++ = '"';
  }
  return p;
}

constexpr std::size_t kMaxValueChars = 32;

// Writes `v` at `p` (room for kMaxValueChars) and returns the end.
[[gnu::always_inline]] inline char* WriteValue(char* p, double v) {
  if (std::isnan(v)) return WriteRaw(p, "NaN");
  if (std::isinf(v)) return WriteRaw(p, v > 0 ? "+Inf" : "-Inf");
  constexpr double kExactIntegers = 9007199254740992.0;  // 2^53
  if (v == std::trunc(v) && std::fabs(v) <= kExactIntegers) {
    return std::to_chars(p, p + kMaxValueChars, static_cast<long long>(v)).ptr;
  }
  return std::to_chars(p, p + kMaxValueChars, v).ptr;
}

}  // namespace

void MetricSink::AppendValue(std::string& out, double v) {
  char buf[kMaxValueChars];
  out.append(buf, WriteValue(buf, v));
}

MetricSink::FamilyRef MetricSink::Family(std::string_view name, std::string_view help,
                                         MetricType type) {
  auto [it, inserted] = index_.try_emplace(std::string(name), families_.size());
  if (inserted) families_.push_back({std::string(name), std::string(help), type, {}, 0, 0});
  return FamilyRef(this, it->second);
}

MetricSink::LabelPrefix::LabelPrefix(std::initializer_list<Label> labels) {
  text_.resize(LabelsBound(labels.begin(), labels.end()));
  char* const start = text_.data();
  text_.resize(static_cast<std::size_t>(WriteLabels(start, labels.begin(), labels.end(), false) - start));
}

void MetricSink::FamilyRef::Add(std::initializer_list<Label> labels, double value) const {
  AddRange({}, {}, labels.begin(), labels.end(), value);
}

void MetricSink::FamilyRef::Add(const LabelPrefix& prefix, std::initializer_list<Label> labels, double value) const {
  AddRange({}, prefix.text(), labels.begin(), labels.end(), value);
}

void MetricSink::FamilyRef::Add(const std::vector<Label>& labels, double value) const {
  AddRange({}, {}, labels.data(), labels.data() + labels.size(), value);
}

void MetricSink::FamilyRef::AddSuffixed(std::string_view suffix, const std::vector<Label>& labels,
                                        double value) const {
  AddRange(suffix, {}, labels.data(), labels.data() + labels.size(), value);
}

void MetricSink::FamilyRef::AddRange(std::string_view suffix, std::string_view prefix, const Label* begin,
                                     const Label* end, double value) const {
  // One size check per sample, then plain writes: this runs for every series of every scrape.
  FamilyData& f = sink_->families_[index_];
  const std::size_t bound =
      f.name.size() + suffix.size() + prefix.size() + 3 + LabelsBound(begin, end) + kMaxValueChars + 2;
  if (f.used + bound > f.samples.size()) {
    f.samples.resize(std::max({2 * f.samples.size(), f.used + bound, f.first_size}));
  }
  char* const start = f.samples.data() + f.used;
  char* p = WriteRaw(start, f.name);
  p = WriteShort(p, suffix);  // (an empty view may hold nullptr: WriteShort reads nothing then)
  if (!prefix.empty() || begin != end) {
    *p++ = '{';
    if (!prefix.empty()) p = WriteRaw(p, prefix);
    p = WriteLabels(p, begin, end, !prefix.empty());
    *p++ = '}';
  }
  *p++ = ' ';
  p = WriteValue(p, value);
  *p++ = '\n';
  f.used += static_cast<std::size_t>(p - start);
  ++f.count;
}

std::size_t MetricSink::sample_count() const {
  std::size_t n = 0;
  for (const auto& f : families_) n += f.count;
  return n;
}

void MetricSink::Clear() {
  for (auto& f : families_) {
    f.used = 0;
    f.count = 0;
  }
}

std::size_t MetricSink::buffer_bytes() const {
  std::size_t bytes = 0;
  for (const auto& f : families_) bytes += f.samples.size();
  return bytes;
}

bool MetricSink::ClearAndReleaseAbove(std::size_t bytes) {
  const bool release = buffer_bytes() > bytes;
  if (release) {
    for (auto& f : families_) {
      f.first_size = f.used + f.used / 32;  // room for the next scrape's values to grow a little
      std::string().swap(f.samples);
    }
  }
  Clear();
  return release;
}

std::string MetricSink::Serialize() const {
  std::string out;
  SerializeTo(out);
  return out;
}

std::size_t MetricSink::SerializedSizeBound() const {
  std::size_t size = 0;
  for (const auto& f : families_) size += f.used + 2 * f.help.size() + 2 * f.name.size() + 32;
  return size;
}

void MetricSink::AppendHeader(const FamilyData& f, std::string& out) {
  out += "# HELP ";
  out += f.name;
  out += ' ';
  AppendEscaped(out, f.help, /*quote=*/false);
  out += "\n# TYPE ";
  out += f.name;
  out += ' ';
  out += TypeName(f.type);
  out += '\n';
}

void MetricSink::SerializeTo(std::string& out) const {
  const std::size_t size = SerializedSizeBound();
  // Asked for a little more than it has, std::string::reserve takes twice its capacity: a reused
  // buffer would double whenever the text grew by a byte (an 18 MiB buffer for a 9 MiB text). A
  // buffer too small, or more than twice too big, is replaced by one of the size needed, with
  // 1/32 to spare for the next text's growth.
  const std::size_t want = size + size / 32;
  if (out.capacity() < size || out.capacity() / 2 > want) {
    std::string fresh;
    fresh.reserve(want);
    out.swap(fresh);
  }
  out.clear();
  ForEachPiece([&out](std::string_view piece) { out.append(piece); });
}

}  // namespace rdmahd
