// Response bodies and their gzip: GzipStream and Gzip compress (zlib level 1, a gzip wrapper),
// and SharedBody holds one body (the /metrics exposition, a JSON API document) for every request
// that asks for it while it is current, in the encodings asked for. Bodies under kMinGzipBytes go
// out as they are. Thread-safe where a class says so; the HTTP server encodes with them
// (http_server.h).
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/mutex.h"

namespace rdmahd {

// Below this a body goes out as is: gzip would save a few bytes at the cost of a header.
inline constexpr std::size_t kMinGzipBytes = 1024;

// Gzip-compresses a body given in pieces: the bytes Gzip() gives for the pieces joined, without
// the joined text ever being made.
class GzipStream {
 public:
  // `expected_size`: about the bytes that will be written (sizes the first output buffer).
  explicit GzipStream(std::size_t expected_size = 0);
  ~GzipStream();
  GzipStream(const GzipStream&) = delete;
  GzipStream& operator=(const GzipStream&) = delete;

  void Write(std::string_view bytes);
  // The compressed body, or nullopt when zlib failed. Nothing may be written after.
  std::optional<std::string> Finish();
  // Bytes written so far.
  std::size_t size_in() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// `body` gzip-compressed (zlib level 1), or nullopt when zlib failed.
std::optional<std::string> Gzip(std::string_view body);

// A body shared by every request that asks for it while it is current (the /metrics exposition),
// held in the encodings that were asked for. One made from its text keeps the text and makes the
// gzip copy at the first request that accepts gzip. One made compressed keeps only the gzip
// bytes: a request that does not accept gzip gets them decompressed, into a text that is shared
// while any request still sends it and freed after. Thread-safe.
class SharedBody {
 public:
  static std::shared_ptr<SharedBody> FromText(std::shared_ptr<const std::string> text);
  // `gzip`: a gzip stream (GzipStream) of a `text_size`-byte text.
  // Bytes of kGivenBackFrom or more are given back to the system (malloc_trim) when freed.
  static std::shared_ptr<SharedBody> FromGzip(std::string gzip, std::size_t text_size);
  static constexpr std::size_t kGivenBackFrom = 256u << 10;

  // The text; nullptr when the gzip bytes do not decompress to `text_size` bytes (served as a 500).
  std::shared_ptr<const std::string> Text();
  // The gzip-compressed body, or nullptr when it is not worth compressing (a body under 1 KiB
  // goes out as it is) or zlib failed.
  std::shared_ptr<const std::string> Gzipped();

  std::size_t text_size() const { return text_size_; }
  // Whether a text of the body is in memory: held here, or decompressed and still being sent.
  bool text_in_memory() const;

 private:
  SharedBody(std::shared_ptr<const std::string> text, std::shared_ptr<const std::string> gzip,
             std::size_t text_size);

  const std::size_t text_size_;
  mutable Mutex mu_;  // one compression or decompression at once, shared by all who wait
  std::shared_ptr<const std::string> text_ GUARDED_BY(mu_);
  std::weak_ptr<const std::string> decompressed_ GUARDED_BY(mu_);
  std::shared_ptr<const std::string> gzip_ GUARDED_BY(mu_);
  bool gzip_failed_ GUARDED_BY(mu_) = false;
};

}  // namespace rdmahd
