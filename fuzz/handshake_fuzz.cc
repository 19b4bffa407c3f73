// libFuzzer target: the probe handshake decoders (probes/handshake.h), which read private data
// from any host that can reach the responder's port. Invariants: a decoder never crashes, and
// whatever decodes re-encodes to the same leading bytes (the rest being zero padding), so no
// decoder accepts two spellings of one message.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "probes/handshake.h"

namespace {

void CheckCanonical(const std::vector<std::uint8_t>& encoded, std::span<const std::uint8_t> input) {
  if (encoded.size() > input.size()) __builtin_trap();
  for (std::size_t i = 0; i < input.size(); ++i) {
    const std::uint8_t want = i < encoded.size() ? encoded[i] : 0;
    if (input[i] != want) __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> in(data, size);
  if (auto h = rdmahd::DecodeHello(in); h.ok()) CheckCanonical(rdmahd::EncodeHello(*h), in);
  if (auto a = rdmahd::DecodeAccept(in); a.ok()) CheckCanonical(rdmahd::EncodeAccept(*a), in);
  if (auto r = rdmahd::DecodeReject(in); r.ok()) CheckCanonical(rdmahd::EncodeReject(*r), in);
  return 0;
}
