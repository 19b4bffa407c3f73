#include "common/metric_sink.h"

#include <charconv>
#include <cmath>

namespace rdmahd {
namespace {

std::string_view TypeName(prometheus::MetricType t) {
  switch (t) {
    case prometheus::MetricType::Counter: return "counter";
    case prometheus::MetricType::Gauge: return "gauge";
    case prometheus::MetricType::Summary: return "summary";
    case prometheus::MetricType::Histogram: return "histogram";
    default: return "untyped";
  }
}

void AppendEscaped(std::string& out, std::string_view s, bool quote) {
  // Label values are almost never in need of escaping: append them whole.
  if (s.find_first_of(quote ? std::string_view("\\\n\"") : std::string_view("\\\n")) ==
      std::string_view::npos) {
    out += s;
    return;
  }
  for (char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (quote && c == '"') out += "\\\"";
    else out += c;
  }
}

}  // namespace

void MetricSink::AppendValue(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "NaN";
    return;
  }
  if (std::isinf(v)) {
    out += v > 0 ? "+Inf" : "-Inf";
    return;
  }
  char buf[32];
  std::to_chars_result r;
  constexpr double kExactIntegers = 9007199254740992.0;  // 2^53
  if (v == std::trunc(v) && std::fabs(v) <= kExactIntegers) {
    r = std::to_chars(buf, buf + sizeof buf, static_cast<long long>(v));
  } else {
    r = std::to_chars(buf, buf + sizeof buf, v);
  }
  out.append(buf, r.ptr);
}

MetricSink::FamilyRef MetricSink::Family(std::string_view name, std::string_view help,
                                         prometheus::MetricType type) {
  auto [it, inserted] = index_.try_emplace(std::string(name), families_.size());
  if (inserted) families_.push_back({std::string(name), std::string(help), type, {}, 0});
  return FamilyRef(this, it->second);
}

void MetricSink::FamilyRef::Add(std::initializer_list<Label> labels, double value) const {
  AddRange(labels.begin(), labels.end(), value);
}

void MetricSink::FamilyRef::Add(const std::vector<Label>& labels, double value) const {
  AddRange(labels.data(), labels.data() + labels.size(), value);
}

void MetricSink::FamilyRef::AddRange(const Label* begin, const Label* end, double value) const {
  FamilyData& f = sink_->families_[index_];
  std::string& out = f.samples;
  out += f.name;
  if (begin != end) {
    out += '{';
    for (const Label* l = begin; l != end; ++l) {
      if (l != begin) out += ',';
      out += l->first;
      out += "=\"";
      AppendEscaped(out, l->second, /*quote=*/true);
      out += '"';
    }
    out += '}';
  }
  out += ' ';
  AppendValue(out, value);
  out += '\n';
  ++f.count;
}

std::size_t MetricSink::sample_count() const {
  std::size_t n = 0;
  for (const auto& f : families_) n += f.count;
  return n;
}

std::string MetricSink::Serialize() const {
  std::size_t size = 0;
  for (const auto& f : families_) size += f.samples.size() + f.help.size() + 2 * f.name.size() + 32;
  std::string out;
  out.reserve(size);
  for (const auto& f : families_) {
    if (f.count == 0) continue;
    out += "# HELP ";
    out += f.name;
    out += ' ';
    AppendEscaped(out, f.help, /*quote=*/false);
    out += "\n# TYPE ";
    out += f.name;
    out += ' ';
    out += TypeName(f.type);
    out += '\n';
    out += f.samples;
  }
  return out;
}

}  // namespace rdmahd
