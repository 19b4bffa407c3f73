// libFuzzer target: the kernel log decoders and the built-in event rules. The input is read as one
// /dev/kmsg record, and as a saved log (format detected, every line parsed, kmsg KEY=VALUE lines
// folded in), each record classified.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "parsers/kernel_event_rules.h"
#include "parsers/kernel_log_record.h"

namespace {

const rdmahd::KernelEventClassifier& Classifier() {
  static const rdmahd::KernelEventClassifier* classifier = [] {
    auto c = rdmahd::KernelEventClassifier::Create(rdmahd::BuiltinKernelEventRules());
    if (!c.ok()) std::abort();  // the built-in rules always compile: a failure here is a bug
    return new rdmahd::KernelEventClassifier(std::move(*c));
  }();
  return *classifier;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto r = rdmahd::ParseKmsgRecord(text); r.ok()) (void)Classifier().Classify(*r);

  const rdmahd::SavedLogFormat format = rdmahd::DetectSavedLogFormat(text);
  std::optional<rdmahd::KernelLogRecord> last;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    const std::string_view line = text.substr(start, nl - start);
    if (last && format == rdmahd::SavedLogFormat::kKmsg && rdmahd::AddKmsgDictLine(line, *last)) {
      // folded into the record before
    } else if (auto r = rdmahd::ParseSavedLogLine(line, format)) {
      if (last) (void)Classifier().Classify(*last);
      last = std::move(r);
    }
    start = nl + 1;
  }
  if (last) (void)Classifier().Classify(*last);
  return 0;
}
