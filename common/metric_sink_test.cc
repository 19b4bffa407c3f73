#include "common/metric_sink.h"

#include <gtest/gtest.h>

#include <cmath>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "common/utf8.h"

namespace rdmahd {
namespace {

std::string Value(double v) {
  std::string s;
  MetricSink::AppendValue(s, v);
  return s;
}

TEST(MetricSinkTest, ValuesReadBackExactly) {
  EXPECT_EQ(Value(0), "0");
  EXPECT_EQ(Value(18527668), "18527668");
  EXPECT_EQ(Value(4294967295.0), "4294967295");
  EXPECT_EQ(Value(5e9), "5000000000");
  EXPECT_EQ(Value(-1), "-1");
  EXPECT_EQ(Value(0.25), "0.25");
  EXPECT_EQ(Value(1e300), "1e+300");
  EXPECT_EQ(Value(std::nan("")), "NaN");
  EXPECT_EQ(Value(std::numeric_limits<double>::infinity()), "+Inf");
  // Above 2^53 a double is no longer an exact integer: print its exact shortest form.
  EXPECT_EQ(std::stod(Value(18446744073709551615.0)), 18446744073709551615.0);
}

TEST(MetricSinkTest, FamiliesMergeAndEscape) {
  MetricSink sink;
  sink.Counter("rdma_x_total", "Help with \\ and\nnewline.").Add({{"device", "a\"b\\c\nd"}}, 1);
  sink.Gauge("rdma_y", "Y.").Add({}, 2.5);
  sink.Counter("rdma_x_total", "ignored second help").Add({{"device", "e"}}, 3);
  EXPECT_EQ(sink.Serialize(),
            "# HELP rdma_x_total Help with \\\\ and\\nnewline.\n"
            "# TYPE rdma_x_total counter\n"
            "rdma_x_total{device=\"a\\\"b\\\\c\\nd\"} 1\n"
            "rdma_x_total{device=\"e\"} 3\n"
            "# HELP rdma_y Y.\n"
            "# TYPE rdma_y gauge\n"
            "rdma_y 2.5\n");
  EXPECT_EQ(sink.sample_count(), 3u);
}

TEST(MetricSinkTest, LabelValuesAreValidUtf8) {
  // Prometheus drops the whole scrape over one invalid byte; a label value must never carry one.
  MetricSink sink;
  auto f = sink.Gauge("rdma_x", "X.");
  f.Add({{"fw_ver", "16.35.\xff"}, {"device", "mlx5_\xC3\xA9"}}, 1);     // 0xFF; valid 2-byte kept
  f.Add({{"counter", "rx_\xE2\x82"}, {"d", "\xED\xA0\x80\"\n"}}, 2);  // truncated; surrogate, escapes
  // Every byte invalid: the sample still fits the buffer (each byte becomes 3).
  f.Add({{"x", std::string(1000, '\x80')}}, 3);
  std::string expected_x;
  for (int i = 0; i < 1000; ++i) expected_x += "\xEF\xBF\xBD";
  EXPECT_EQ(sink.Serialize(),
            "# HELP rdma_x X.\n# TYPE rdma_x gauge\n"
            "rdma_x{fw_ver=\"16.35.\xEF\xBF\xBD\",device=\"mlx5_\xC3\xA9\"} 1\n"
            "rdma_x{counter=\"rx_\xEF\xBF\xBD\",d=\"\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\\\"\\n\"} 2\n"
            "rdma_x{x=\"" + expected_x + "\"} 3\n");
}

TEST(MetricSinkTest, HistogramSamplesShareTheFamilysHelpAndType) {
  MetricSink sink;
  auto h = sink.Family("rdma_x_seconds", "X.", MetricType::Histogram);
  h.AddSuffixed("_bucket", {{"peer", "a"}, {"le", "+Inf"}}, 3);
  h.AddSuffixed("_sum", {{"peer", "a"}}, 0.5);
  h.AddSuffixed("_count", {{"peer", "a"}}, 3);
  EXPECT_EQ(sink.Serialize(),
            "# HELP rdma_x_seconds X.\n# TYPE rdma_x_seconds histogram\n"
            "rdma_x_seconds_bucket{peer=\"a\",le=\"+Inf\"} 3\n"
            "rdma_x_seconds_sum{peer=\"a\"} 0.5\n"
            "rdma_x_seconds_count{peer=\"a\"} 3\n");
}

TEST(MetricSinkTest, BuffersAreKeptWhileSmallAndFreedAboveTheBoundWithTheSameTextAfter) {
  MetricSink sink;
  const auto fill = [&](int n) {
    auto f = sink.Counter("rdma_port_rcv_packets_total", "Packets.");
    for (int i = 0; i < n; ++i) f.Add({{"device", "mlx5_" + std::to_string(i)}, {"port", "1"}}, i);
  };
  fill(1000);
  const std::string first = sink.Serialize();
  const std::size_t kept = sink.buffer_bytes();
  ASSERT_GT(kept, 1000u * 30);

  EXPECT_FALSE(sink.ClearAndReleaseAbove(kept));  // not above: kept, emptied
  EXPECT_EQ(sink.buffer_bytes(), kept);
  EXPECT_EQ(sink.sample_count(), 0u);
  fill(1000);
  EXPECT_EQ(sink.Serialize(), first);

  EXPECT_TRUE(sink.ClearAndReleaseAbove(kept - 1));  // above: freed
  EXPECT_EQ(sink.buffer_bytes(), 0u);
  EXPECT_EQ(sink.sample_count(), 0u);
  fill(1000);
  EXPECT_EQ(sink.Serialize(), first);
  // Refilled at the size the samples took, not doubled up to it again.
  const std::size_t samples = first.size() - first.find("rdma_port_rcv_packets_total{");
  EXPECT_GE(sink.buffer_bytes(), samples);
  EXPECT_LE(sink.buffer_bytes(), samples + samples / 16);
  EXPECT_GT(kept, samples + samples / 16);  // which doubling gave
}

TEST(MetricSinkTest, EmptyFamiliesAreNotPrinted) {
  MetricSink sink;
  sink.Gauge("rdma_nothing", "No samples.");
  EXPECT_EQ(sink.Serialize(), "");
}

TEST(MetricSinkTest, ClearedSinkIsReusedWithoutStaleSamples) {
  MetricSink sink;
  sink.Counter("rdma_a_total", "A.").Add({{"device", "mlx5_0"}}, 1);
  sink.Gauge("rdma_b", "B.").Add({}, 2);
  std::string out;
  sink.SerializeTo(out);
  EXPECT_EQ(out, sink.Serialize());

  sink.Clear();
  EXPECT_EQ(sink.sample_count(), 0u);
  sink.Counter("rdma_a_total", "A.").Add({{"device", "mlx5_1"}}, 5);  // rdma_b has no sample now
  const char* previous_buffer = out.data();
  sink.SerializeTo(out);
  EXPECT_EQ(out,
            "# HELP rdma_a_total A.\n"
            "# TYPE rdma_a_total counter\n"
            "rdma_a_total{device=\"mlx5_1\"} 5\n");
  EXPECT_EQ(out.data(), previous_buffer);  // the shorter text fits in the buffer it already had
}

// The pieces a compressor reads are the text, in its order: a family's HELP and TYPE lines, then
// its samples; a family without samples gives no piece.
TEST(MetricSinkTest, PiecesAreTheTextInOrder) {
  MetricSink sink;
  sink.Counter("rdma_a_total", "A \\ with\nnewline.").Add({{"device", "mlx5_0"}}, 1);
  sink.Gauge("rdma_empty", "No samples.");
  sink.Gauge("rdma_b", "B.").Add({}, 2);
  sink.Counter("rdma_a_total", "ignored").Add({{"device", "mlx5_1"}}, 3);
  std::vector<std::string> pieces;
  sink.ForEachPiece([&pieces](std::string_view piece) { pieces.emplace_back(piece); });
  const std::vector<std::string> expected = {
      "# HELP rdma_a_total A \\\\ with\\nnewline.\n# TYPE rdma_a_total counter\n",
      "rdma_a_total{device=\"mlx5_0\"} 1\nrdma_a_total{device=\"mlx5_1\"} 3\n",
      "# HELP rdma_b B.\n# TYPE rdma_b gauge\n",
      "rdma_b 2\n",
  };
  EXPECT_EQ(pieces, expected);
  std::string joined;
  for (const std::string& piece : pieces) joined += piece;
  EXPECT_EQ(joined, sink.Serialize());
  EXPECT_GE(sink.SerializedSizeBound(), joined.size());
}

// A reused text buffer fits the text: it neither doubles when the text grows a little (what
// std::string::reserve would do) nor stays far larger than the text after it shrank.
TEST(MetricSinkTest, AReusedTextBufferStaysTheSizeOfTheText) {
  MetricSink sink;
  const auto fill = [&](int samples) {
    sink.Clear();
    auto family = sink.Gauge("rdma_x", "X.");
    for (int i = 0; i < samples; ++i) family.Add({{"device", "mlx5_" + std::to_string(i)}}, i);
  };
  std::string out;
  fill(20000);
  sink.SerializeTo(out);
  const std::size_t first = out.size();
  EXPECT_LE(out.capacity(), first + first / 16);
  const char* buffer = out.data();
  fill(20010);  // a little longer: the spare room takes it
  sink.SerializeTo(out);
  EXPECT_GT(out.size(), first);
  EXPECT_EQ(out.data(), buffer);
  EXPECT_LE(out.capacity(), first + first / 16);
  fill(30000);  // much longer: a buffer of its size, not twice the old one
  sink.SerializeTo(out);
  EXPECT_LE(out.capacity(), out.size() + out.size() / 16);
  fill(100);  // much shorter: the big buffer goes
  sink.SerializeTo(out);
  EXPECT_LE(out.capacity(), 4096u);
  EXPECT_EQ(out, sink.Serialize());
}

TEST(MetricSinkTest, EscapesAtEveryPositionOfLongValues) {
  // The special byte at each offset of a value, first and last included.
  for (char special : {'\\', '\n', '"'}) {
    for (std::size_t at = 0; at < 19; ++at) {
      std::string value(19, 'x');
      value[at] = special;
      MetricSink sink;
      sink.Gauge("g", "G.").Add({{"l", value}}, 1);
      std::string expected_value = value.substr(0, at) + (special == '\n' ? std::string("\\n") : std::string("\\") + special) +
                                   value.substr(at + 1);
      EXPECT_EQ(sink.Serialize(), "# HELP g G.\n# TYPE g gauge\ng{l=\"" + expected_value + "\"} 1\n")
          << "special byte " << int(special) << " at " << at;
    }
  }
  // Bytes that are only one bit away from the special ones are not escaped (\xdc\x8a is U+070A;
  // the lone continuation byte \xa2 is not UTF-8 and becomes U+FFFD).
  MetricSink sink;
  sink.Gauge("g", "G.").Add({{"l", "\x5d\x0b\x23\x5c\x7f\xdc\x8a\xa2" "zzzzzzzz"}}, 1);
  EXPECT_EQ(sink.Serialize(),
            "# HELP g G.\n# TYPE g gauge\ng{l=\"\x5d\x0b\x23\\\\\x7f\xdc\x8a\xEF\xBF\xBD" "zzzzzzzz\"} 1\n");
}

// The reference for a label value: ill-formed UTF-8 replaced first, then the three escapes (the
// replacement adds no byte that needs one).
std::string ReferenceLabelValue(std::string_view value) {
  std::string out;
  for (char c : ValidUtf8(value)) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

TEST(MetricSinkTest, LabelValuesMatchTheByteWiseReference) {
  // The word-at-a-time fast path must give what the byte-wise rules give, whatever the length and
  // wherever a special byte, a near miss (0x5b, 0x5d, 0x0b, 0x09, 0x23, 0x21, 0x7f, 0x00) or a
  // multi-byte sequence (possibly across a word boundary, possibly truncated) falls.
  const std::string alphabet[] = {"a", "Z", "_", "0", "\\", "\n", "\"", "[", "]", "\x0b", "\x09", "#", "!",
                                  std::string(1, '\0'), "\x7f", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80",
                                  "\xe2\x82", "\xa2", "\xff", "\xed\xa0\x80"};
  std::mt19937 rng(12345);
  for (int round = 0; round < 3000; ++round) {
    std::string value;
    const std::size_t pieces = rng() % 30;
    for (std::size_t k = 0; k < pieces; ++k) {
      // Mostly plain letters, as real values are, so long plain runs reach the fast path.
      value += rng() % 4 != 0 ? std::string(1, static_cast<char>('a' + rng() % 26))
                              : alphabet[rng() % std::size(alphabet)];
    }
    MetricSink sink;
    sink.Gauge("g", "G.").Add({{"l", value}}, 1);
    ASSERT_EQ(sink.Serialize(), "# HELP g G.\n# TYPE g gauge\ng{l=\"" + ReferenceLabelValue(value) + "\"} 1\n")
        << "value bytes: " << testing::PrintToString(value);
  }
}

TEST(MetricSinkTest, LabelNamesAndSuffixesOfEveryLength) {
  // Short strings are copied word-wise (overlapping words up to 16 bytes): every length, 0 to 24.
  const std::string letters = "abcdefghijklmnopqrstuvwxyz";
  for (std::size_t len = 0; len <= 24; ++len) {
    std::string name = "l";
    name += letters.substr(0, len);
    std::string suffix;
    if (len > 0) {
      suffix = "_";
      suffix += letters.substr(26 - len);
    }
    const std::string value = letters.substr(0, len);
    MetricSink sink;
    sink.Gauge("h", "H.").AddSuffixed(suffix, {{name, "v"}, {"x", value}}, 1);
    std::string expected = "# HELP h H.\n# TYPE h gauge\nh";
    expected += suffix;
    expected += '{';
    expected += name;
    expected += "=\"v\",x=\"";
    expected += value;
    expected += "\"} 1\n";
    EXPECT_EQ(sink.Serialize(), expected) << "length " << len;
  }
}

TEST(MetricSinkTest, LabelPrefixPrintsWhatTheSameLabelsPrint) {
  // Every split of a label list into a formatted prefix and the rest, with values that need
  // escaping or UTF-8 repair in either part, prints the very line the whole list prints.
  const std::vector<Label> labels = {
      {"device", "mlx5_0"}, {"port", "1"}, {"q", "a\"b\\c\nd"}, {"bad", "x\xff\xe2\x82y"}, {"counter", "rx_write_requests"}};
  for (std::size_t split = 0; split <= labels.size(); ++split) {
    MetricSink whole, prefixed;
    whole.Counter("c_total", "C.").Add(labels, 7);
    auto list = [&](std::size_t from, std::size_t to) {
      // Add() takes an initializer_list: build the variants that exist in the renderers.
      return std::vector<Label>(labels.begin() + static_cast<std::ptrdiff_t>(from),
                                labels.begin() + static_cast<std::ptrdiff_t>(to));
    };
    const std::vector<Label> head = list(0, split), tail = list(split, labels.size());
    MetricSink::LabelPrefix prefix;
    switch (head.size()) {
      case 0: break;
      case 1: prefix = MetricSink::LabelPrefix({head[0]}); break;
      case 2: prefix = MetricSink::LabelPrefix({head[0], head[1]}); break;
      case 3: prefix = MetricSink::LabelPrefix({head[0], head[1], head[2]}); break;
      case 4: prefix = MetricSink::LabelPrefix({head[0], head[1], head[2], head[3]}); break;
      default: prefix = MetricSink::LabelPrefix({head[0], head[1], head[2], head[3], head[4]}); break;
    }
    auto family = prefixed.Counter("c_total", "C.");
    switch (tail.size()) {
      case 0: family.Add(prefix, {}, 7); break;
      case 1: family.Add(prefix, {tail[0]}, 7); break;
      case 2: family.Add(prefix, {tail[0], tail[1]}, 7); break;
      case 3: family.Add(prefix, {tail[0], tail[1], tail[2]}, 7); break;
      case 4: family.Add(prefix, {tail[0], tail[1], tail[2], tail[3]}, 7); break;
      default: family.Add(prefix, {tail[0], tail[1], tail[2], tail[3], tail[4]}, 7); break;
    }
    EXPECT_EQ(prefixed.Serialize(), whole.Serialize()) << "split at " << split;
  }
  // An empty prefix and no labels: no braces at all.
  MetricSink bare;
  bare.Gauge("g", "G.").Add(MetricSink::LabelPrefix(), {}, 1);
  EXPECT_EQ(bare.Serialize(), "# HELP g G.\n# TYPE g gauge\ng 1\n");
}

}  // namespace
}  // namespace rdmahd
