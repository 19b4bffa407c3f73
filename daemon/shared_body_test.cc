#include "daemon/shared_body.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>

#include "tests/support/test_trees.h"

namespace rdmahd {
namespace {

// zlib's one-shot compression as the server did it before bodies could be compressed in pieces:
// what a body split into pieces must still compress to, byte for byte.
std::string OneShotGzip(const std::string& in) {
  z_stream z{};
  deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, in.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return rc == Z_STREAM_END ? out : "<deflate failed>";
}

TEST(HttpGzipTest, PiecesCompressToTheBytesOfTheWholeText) {
  const std::string text = testing::MetricsText(40000);  // ~2.6 MB: several output growths
  const std::string reference = OneShotGzip(text);
  EXPECT_EQ(Gzip(text), reference);
  std::mt19937 random(7);
  for (std::size_t most : {std::size_t{1}, std::size_t{100}, std::size_t{70000}, std::size_t{1} << 20}) {
    GzipStream stream(most == 1 ? 0 : text.size());  // also from the smallest first buffer
    std::size_t at = 0;
    while (at < text.size()) {
      const std::size_t n = std::min(text.size() - at, std::uniform_int_distribution<std::size_t>(0, most)(random));
      stream.Write(std::string_view(text).substr(at, n));
      at += n;
    }
    EXPECT_EQ(stream.size_in(), text.size());
    std::optional<std::string> gz = stream.Finish();
    ASSERT_TRUE(gz.has_value());
    EXPECT_EQ(*gz, reference) << "pieces of at most " << most << " bytes";
  }
  EXPECT_EQ(testing::Gunzip(*Gzip("")), "");
}

TEST(HttpGzipTest, ABodyMadeCompressedHoldsATextOnlyWhileItIsSent) {
  const std::string text = testing::MetricsText(5000);
  std::shared_ptr<SharedBody> body = SharedBody::FromGzip(*Gzip(text), text.size());
  EXPECT_FALSE(body->text_in_memory());
  EXPECT_EQ(*body->Gzipped(), *Gzip(text));
  EXPECT_FALSE(body->text_in_memory());

  std::shared_ptr<const std::string> sent = body->Text();
  ASSERT_NE(sent, nullptr);
  EXPECT_EQ(*sent, text);
  EXPECT_TRUE(body->text_in_memory());
  EXPECT_EQ(body->Text().get(), sent.get());  // requests at once share one text
  sent.reset();
  EXPECT_FALSE(body->text_in_memory());
  EXPECT_EQ(*body->Text(), text);  // and a later one gets the same bytes again

  // Bytes that do not decompress to the size given: no text (the server answers 500).
  EXPECT_EQ(SharedBody::FromGzip(*Gzip(text), text.size() + 1)->Text(), nullptr);
  EXPECT_EQ(SharedBody::FromGzip(*Gzip(text), text.size() - 1)->Text(), nullptr);
  EXPECT_EQ(SharedBody::FromGzip("not gzip", text.size())->Text(), nullptr);
}

}  // namespace
}  // namespace rdmahd
