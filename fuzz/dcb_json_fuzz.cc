// libFuzzer target: the `dcb -j pfc/app show` JSON parsers (captured input from support bundles is
// untrusted too).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "parsers/dcb_json.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)rdmahd::ParseDcbPfcJson(text);
  (void)rdmahd::ParseDcbAppJson(text);
  return 0;
}
