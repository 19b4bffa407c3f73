#include "common/metric_sink.h"

#include <prometheus/text_serializer.h>

namespace rdmahd {

MetricSink::FamilyRef MetricSink::Family(std::string_view name, std::string_view help,
                                         prometheus::MetricType type) {
  auto [it, inserted] = index_.try_emplace(std::string(name), families_.size());
  if (inserted) {
    prometheus::MetricFamily f;
    f.name = std::string(name);
    f.help = std::string(help);
    f.type = type;
    families_.push_back(std::move(f));
  }
  return FamilyRef(this, it->second);
}

void MetricSink::FamilyRef::Add(std::initializer_list<Label> labels, double value) const {
  Add(std::vector<Label>(labels), value);
}

void MetricSink::FamilyRef::Add(const std::vector<Label>& labels, double value) const {
  prometheus::MetricFamily& f = sink_->families_[index_];
  prometheus::ClientMetric& m = f.metric.emplace_back();
  m.label.reserve(labels.size());
  for (const auto& [k, v] : labels) m.label.push_back({std::string(k), std::string(v)});
  switch (f.type) {
    case prometheus::MetricType::Counter: m.counter.value = value; break;
    case prometheus::MetricType::Gauge: m.gauge.value = value; break;
    default: m.untyped.value = value; break;
  }
}

std::string MetricSink::Serialize() const {
  return prometheus::TextSerializer().Serialize(families_);
}

}  // namespace rdmahd
