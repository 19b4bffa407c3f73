// MetricSink: what collectors and checks render into at scrape time. It produces prometheus-cpp
// MetricFamily values (serialised by prometheus::TextSerializer), merging samples that different
// renderers add to the same family name so the exposition never repeats a family.
#pragma once

#include <prometheus/metric_family.h>

#include <initializer_list>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace rdmahd {

using Label = std::pair<std::string_view, std::string_view>;

class MetricSink {
 public:
  // Handle of one family inside this sink; cheap to copy, valid for the sink's lifetime.
  class FamilyRef {
   public:
    // Appends one sample. Labels are copied.
    void Add(std::initializer_list<Label> labels, double value) const;
    void Add(const std::vector<Label>& labels, double value) const;

   private:
    friend class MetricSink;
    FamilyRef(MetricSink* sink, std::size_t index) : sink_(sink), index_(index) {}
    MetricSink* sink_;
    std::size_t index_;
  };

  // Gets or creates the family `name`. Help and type are taken from the first call.
  FamilyRef Family(std::string_view name, std::string_view help, prometheus::MetricType type);
  FamilyRef Counter(std::string_view name, std::string_view help) {
    return Family(name, help, prometheus::MetricType::Counter);
  }
  FamilyRef Gauge(std::string_view name, std::string_view help) {
    return Family(name, help, prometheus::MetricType::Gauge);
  }

  const std::vector<prometheus::MetricFamily>& families() const { return families_; }
  std::vector<prometheus::MetricFamily> Take() { index_.clear(); return std::move(families_); }

  // Prometheus text exposition format 0.0.4.
  std::string Serialize() const;

 private:
  std::vector<prometheus::MetricFamily> families_;
  std::unordered_map<std::string, std::size_t> index_;
};

}  // namespace rdmahd
