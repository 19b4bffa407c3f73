// MetricSink: what collectors and checks render into at scrape time, written straight into
// Prometheus text format 0.0.4. Each sample is formatted once, when it is added, into its family's
// buffer; Serialize() concatenates. (prometheus-cpp's MetricFamily + TextSerializer build an object
// per sample and then format it, which cost more than the whole collection; formatting once, into
// the family's text, skips the objects. bench/engine_bench.cc measures rendering and serialisation
// per scrape.)
// Samples added to the same family name by different renderers are merged under one HELP/TYPE;
// families that end up with no sample are not printed.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace rdmahd {

// The exposition format's metric types (the TYPE line).
enum class MetricType { Counter, Gauge, Summary, Histogram, Untyped };

using Label = std::pair<std::string_view, std::string_view>;

class MetricSink {
 public:
  // The leading labels of many samples (a port's device and port, a netdev's name), escaped and
  // formatted once: `a="x",b="y"`. Adding with it prints exactly what adding the same labels one
  // by one prints.
  class LabelPrefix {
   public:
    LabelPrefix() = default;
    explicit LabelPrefix(std::initializer_list<Label> labels);
    std::string_view text() const { return text_; }

   private:
    std::string text_;
  };

  // Handle of one family inside this sink; cheap to copy, valid for the sink's lifetime.
  class FamilyRef {
   public:
    void Add(std::initializer_list<Label> labels, double value) const;
    // The labels of `prefix`, then `labels`.
    void Add(const LabelPrefix& prefix, std::initializer_list<Label> labels, double value) const;
    void Add(const std::vector<Label>& labels, double value) const;
    // A sample named family name + `suffix`: the _bucket, _sum and _count lines of a histogram
    // (or summary) family, which share its HELP and TYPE.
    void AddSuffixed(std::string_view suffix, const std::vector<Label>& labels, double value) const;

   private:
    friend class MetricSink;
    FamilyRef(MetricSink* sink, std::size_t index) : sink_(sink), index_(index) {}
    void AddRange(std::string_view suffix, std::string_view prefix, const Label* begin, const Label* end,
                  double value) const;
    MetricSink* sink_;
    std::size_t index_;
  };

  // Gets or creates the family `name`. Help and type are taken from the first call.
  FamilyRef Family(std::string_view name, std::string_view help, MetricType type);
  FamilyRef Counter(std::string_view name, std::string_view help) {
    return Family(name, help, MetricType::Counter);
  }
  FamilyRef Gauge(std::string_view name, std::string_view help) {
    return Family(name, help, MetricType::Gauge);
  }

  std::size_t sample_count() const;

  // Drops every sample but keeps the families and their buffers' capacity, so a sink reused for
  // the next scrape formats into memory it already has (no allocation, no fresh pages to fault in).
  void Clear();
  // Clear(), and when the sample buffers hold more than `bytes` together, frees them as well: a
  // node whose exposition is tens of megabytes (a thousand devices) should not keep a second copy
  // of it resident between scrapes for the sake of formatting without allocating. A freed buffer
  // comes back at the size its samples took (a little more), not regrown by doubling. True when
  // the buffers were freed.
  bool ClearAndReleaseAbove(std::size_t bytes);
  // Bytes the sample buffers hold (their capacity, resident once written).
  std::size_t buffer_bytes() const;

  // Prometheus text exposition format 0.0.4.
  std::string Serialize() const;
  // The same into `out` (replacing its content, reusing its capacity).
  void SerializeTo(std::string& out) const;
  // The same text as consecutive pieces, passed to `piece` in order (each family's HELP and TYPE
  // lines, then its samples): for a consumer that does not need the text in one buffer, such as a
  // compressor. A piece is valid only during the call.
  template <class F>
  void ForEachPiece(F&& piece) const {
    std::string header;
    for (const FamilyData& f : families_) {
      if (f.count == 0) continue;
      header.clear();
      AppendHeader(f, header);
      piece(std::string_view(header));
      piece(std::string_view(f.samples.data(), f.used));
    }
  }
  // At least the size of the text (a little more).
  std::size_t SerializedSizeBound() const;

  // Value formatting, exposed for tests: integral values up to 2^53 print as integers, others in
  // the shortest form that reads back exactly; NaN and infinities as Prometheus spells them.
  static void AppendValue(std::string& out, double value);

 private:
  struct FamilyData {
    std::string name;
    std::string help;
    MetricType type;
    // Formatted lines: the first `used` bytes of `samples`. The string's size is its capacity, so
    // a cleared family refills memory it already has without zero-filling it again.
    std::string samples;
    std::size_t used = 0;
    std::size_t count = 0;
    // The size the buffer starts at once freed: doubling up to the samples' size again would take
    // up to twice their bytes, all of them resident while the exposition is made.
    std::size_t first_size = 0;
  };
  // The family's HELP and TYPE lines.
  static void AppendHeader(const FamilyData& f, std::string& out);

  std::vector<FamilyData> families_;
  std::unordered_map<std::string, std::size_t> index_;
};

}  // namespace rdmahd
