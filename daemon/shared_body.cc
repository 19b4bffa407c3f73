#include "daemon/shared_body.h"

#include <malloc.h>
#include <zlib.h>

#include <algorithm>

namespace rdmahd {
namespace {

// zlib counts in 32 bits: longer input is fed, and output room given, at most this much at a time.
constexpr std::size_t kZlibChunk = std::size_t{1} << 30;

// `gzip` decompressed, when it is one gzip stream of exactly `size` bytes.
std::optional<std::string> Gunzip(std::string_view gzip, std::size_t size) {
  if (gzip.size() > kZlibChunk || size > kZlibChunk) return std::nullopt;
  z_stream z{};
  if (inflateInit2(&z, 15 + 16) != Z_OK) return std::nullopt;
  std::string out(size, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gzip.data()));
  z.avail_in = static_cast<uInt>(gzip.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = inflate(&z, Z_FINISH);
  const bool whole = rc == Z_STREAM_END && z.total_out == size && z.avail_in == 0;
  inflateEnd(&z);
  if (!whole) return std::nullopt;
  return out;
}

// Runs deflate with `flush` until it has taken all of z.next_in (Z_FINISH: until the stream is
// complete), doubling `out` whenever it is full.
bool Deflate(z_stream& z, std::string& out, int flush) {
  for (;;) {
    if (z.total_out == out.size()) out.resize(2 * out.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data()) + z.total_out;
    z.avail_out = static_cast<uInt>(std::min(out.size() - z.total_out, kZlibChunk));
    const int rc = deflate(&z, flush);
    if (rc == Z_STREAM_END) return true;
    if (rc != Z_OK && rc != Z_BUF_ERROR) return false;
    if (z.avail_out == 0) continue;  // more room, and on
    // Stopped with room to spare: all the input is taken, or (finishing short of the stream's end)
    // it cannot go on.
    return flush != Z_FINISH && z.avail_in == 0;
  }
}

}  // namespace

struct GzipStream::State {
  z_stream z{};
  std::string out;
  bool ok = false;
};

GzipStream::GzipStream(std::size_t expected_size) : state_(std::make_unique<State>()) {
  // 15 + 16: a gzip wrapper; level 1: metric text compresses ~10x even so, at a fraction of the CPU.
  state_->ok = deflateInit2(&state_->z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK;
  // Sized for that ratio and grown when short, not sized to deflateBound(): the bound is the input's
  // size, and a string resized to it is zero-filled, so all of it would be resident for as long as
  // the compressed copy is kept.
  state_->out.resize(std::max<std::size_t>(expected_size / 8, 4096));
}

GzipStream::~GzipStream() { deflateEnd(&state_->z); }  // a no-op once ended, or never started

std::size_t GzipStream::size_in() const { return state_->z.total_in; }

void GzipStream::Write(std::string_view bytes) {
  State& s = *state_;
  while (s.ok && !bytes.empty()) {
    const std::size_t n = std::min(bytes.size(), kZlibChunk);
    s.z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
    s.z.avail_in = static_cast<uInt>(n);
    s.ok = Deflate(s.z, s.out, Z_NO_FLUSH);
    bytes.remove_prefix(n);
  }
}

std::optional<std::string> GzipStream::Finish() {
  State& s = *state_;
  if (s.ok) s.ok = Deflate(s.z, s.out, Z_FINISH);
  const std::size_t size = s.z.total_out;
  deflateEnd(&s.z);
  if (!s.ok) return std::nullopt;
  s.ok = false;
  s.out.resize(size);
  s.out.shrink_to_fit();
  return std::move(s.out);
}

std::optional<std::string> Gzip(std::string_view body) {
  GzipStream stream(body.size());
  stream.Write(body);
  return stream.Finish();
}

SharedBody::SharedBody(std::shared_ptr<const std::string> text, std::shared_ptr<const std::string> gzip,
                       std::size_t text_size)
    : text_size_(text_size), text_(std::move(text)), gzip_(std::move(gzip)) {}

std::shared_ptr<SharedBody> SharedBody::FromText(std::shared_ptr<const std::string> text) {
  const std::size_t size = text->size();
  return std::shared_ptr<SharedBody>(new SharedBody(std::move(text), nullptr, size));
}

std::shared_ptr<SharedBody> SharedBody::FromGzip(std::string gzip, std::size_t text_size) {
  std::shared_ptr<const std::string> bytes;
  if (gzip.capacity() >= kGivenBackFrom) {
    // glibc returns a freed block inside its heap only when trimmed; a big exposition's pages would
    // otherwise stay resident until the next scrape lands on them.
    bytes = std::shared_ptr<const std::string>(new std::string(std::move(gzip)), [](const std::string* b) {
      delete b;
      malloc_trim(0);
    });
  } else {
    bytes = std::make_shared<const std::string>(std::move(gzip));
  }
  return std::shared_ptr<SharedBody>(new SharedBody(nullptr, std::move(bytes), text_size));
}

std::shared_ptr<const std::string> SharedBody::Text() {
  MutexLock lock(mu_);
  if (text_) return text_;
  if (auto text = decompressed_.lock()) return text;
  std::optional<std::string> text = Gunzip(*gzip_, text_size_);
  if (!text) return nullptr;
  auto shared = std::make_shared<const std::string>(std::move(*text));
  decompressed_ = shared;
  return shared;
}

std::shared_ptr<const std::string> SharedBody::Gzipped() {
  MutexLock lock(mu_);
  if (text_size_ < kMinGzipBytes) return nullptr;
  if (gzip_ || gzip_failed_) return gzip_;
  if (auto gzip = Gzip(*text_)) {
    gzip_ = std::make_shared<const std::string>(std::move(*gzip));
  } else {
    gzip_failed_ = true;
  }
  return gzip_;
}

bool SharedBody::text_in_memory() const {
  MutexLock lock(mu_);
  return text_ != nullptr || !decompressed_.expired();
}

}  // namespace rdmahd
