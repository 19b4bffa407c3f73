#include "probes/handshake.h"

#include <gtest/gtest.h>

#include <vector>

namespace rdmahd {
namespace {

std::vector<std::uint8_t> Padded(std::vector<std::uint8_t> b, std::size_t to) {
  b.resize(to, 0);
  return b;
}

TEST(Handshake, HelloRoundTripsWithAndWithoutTransportPadding) {
  const ProbeHello lat{ProbeKind::kLatency, 2, 1000, 0, 0};
  const ProbeHello bw{ProbeKind::kBandwidth, 65536, 0, 1000, 128};
  for (const ProbeHello& h : {lat, bw}) {
    std::vector<std::uint8_t> bytes = EncodeHello(h);
    ASSERT_EQ(bytes.size(), kHelloBytes);
    Result<ProbeHello> plain = DecodeHello(bytes);
    ASSERT_TRUE(plain.ok()) << plain.error().message;
    EXPECT_EQ(*plain, h);
    // rdma_cm hands the passive side the whole 56-byte REQ private data, zero-padded.
    Result<ProbeHello> padded = DecodeHello(Padded(bytes, 56));
    ASSERT_TRUE(padded.ok()) << padded.error().message;
    EXPECT_EQ(*padded, h);
  }
}

TEST(Handshake, HelloIsBigEndianOnTheWire) {
  std::vector<std::uint8_t> b = EncodeHello({ProbeKind::kLatency, 0x01020304, 5, 0, 0});
  EXPECT_EQ((std::vector<std::uint8_t>(b.begin(), b.begin() + 12)),
            (std::vector<std::uint8_t>{'R', 'H', 'P', 'B', 1, 1, 1, 0, 1, 2, 3, 4}));
}

TEST(Handshake, AcceptAndRejectRoundTrip) {
  const ProbeAccept a{ProbeKind::kBandwidth, 65536, 0xdeadbeef, 0x00007f0012345000ull};
  Result<ProbeAccept> got = DecodeAccept(Padded(EncodeAccept(a), 196));
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(*got, a);

  const ProbeReject r{RejectCode::kBusy, "sessions at the cap (8)"};
  Result<ProbeReject> rj = DecodeReject(Padded(EncodeReject(r), 148));
  ASSERT_TRUE(rj.ok()) << rj.error().message;
  EXPECT_EQ(*rj, r);
}

TEST(Handshake, RejectTextIsCutAndMadePrintable) {
  ProbeReject r{RejectCode::kInternal, std::string(300, 'x')};
  r.text[0] = '\n';
  std::vector<std::uint8_t> b = EncodeReject(r);
  EXPECT_LE(b.size(), 148u);  // fits an IB REJ's private data
  Result<ProbeReject> got = DecodeReject(b);
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(got->text.size(), kMaxRejectText);
  EXPECT_EQ(got->text[0], '?');
}

// Each malformed input is refused, and the reason names what is wrong.
TEST(Handshake, MalformedHellosAreRefusedWithAReason) {
  const std::vector<std::uint8_t> good = EncodeHello({ProbeKind::kLatency, 2, 1000, 0, 0});
  struct Case {
    const char* name;
    std::vector<std::uint8_t> bytes;
    const char* reason;
  };
  auto with = [&](std::size_t at, std::uint8_t v) {
    std::vector<std::uint8_t> b = good;
    b[at] = v;
    return b;
  };
  std::vector<Case> cases = {
      {"empty", {}, "too short"},
      {"header only", std::vector<std::uint8_t>(good.begin(), good.begin() + 8), "truncated"},
      {"one byte short", std::vector<std::uint8_t>(good.begin(), good.end() - 1), "truncated"},
      {"magic", with(0, 'X'), "bad magic"},
      {"version 2", with(4, 2), "unsupported version 2"},
      {"accept type", with(5, 2), "unexpected message type"},
      {"kind 3", with(6, 3), "unknown probe kind 3"},
      {"reserved", with(7, 1), "reserved byte"},
      {"size 0", [&] { auto b = good; b[8] = b[9] = b[10] = b[11] = 0; return b; }(), "message size 0"},
      {"1 iteration", [&] { auto b = good; b[12] = b[13] = b[14] = 0; b[15] = 1; return b; }(), "iterations 1"},
      {"bandwidth fields in latency", with(19, 5), "bandwidth fields"},
      {"trailing garbage", [&] { auto b = Padded(good, 56); b[40] = 7; return b; }(), "non-zero bytes"},
      // What ib_send_lat -R puts in its connect request: not ours at all.
      {"foreign", std::vector<std::uint8_t>(56, 0xab), "bad magic"},
  };
  for (const Case& c : cases) {
    Result<ProbeHello> got = DecodeHello(c.bytes);
    ASSERT_FALSE(got.ok()) << c.name;
    EXPECT_NE(got.error().message.find(c.reason), std::string::npos) << c.name << ": " << got.error().message;
  }
}

TEST(Handshake, BandwidthHelloBoundsAreEnforced) {
  EXPECT_FALSE(DecodeHello(EncodeHello({ProbeKind::kBandwidth, 65536, 0, 0, 128})).ok());       // no duration
  EXPECT_FALSE(DecodeHello(EncodeHello({ProbeKind::kBandwidth, 65536, 0, 60001, 128})).ok());   // too long
  EXPECT_FALSE(DecodeHello(EncodeHello({ProbeKind::kBandwidth, 65536, 0, 1000, 0})).ok());      // no depth
  EXPECT_FALSE(DecodeHello(EncodeHello({ProbeKind::kBandwidth, 65536, 0, 1000, 4097})).ok());   // too deep
  EXPECT_FALSE(DecodeHello(EncodeHello({ProbeKind::kBandwidth, 65536, 10, 1000, 128})).ok());   // iterations set
  EXPECT_TRUE(DecodeHello(EncodeHello({ProbeKind::kBandwidth, 65536, 0, 60000, 4096})).ok());
}

TEST(Handshake, MalformedAcceptsAndRejectsAreRefused) {
  // A latency accept never carries a remote buffer; a bandwidth one always does.
  EXPECT_FALSE(DecodeAccept(EncodeAccept({ProbeKind::kLatency, 2, 5, 0})).ok());
  EXPECT_FALSE(DecodeAccept(EncodeAccept({ProbeKind::kBandwidth, 65536, 5, 0})).ok());
  EXPECT_FALSE(DecodeAccept(EncodeHello({ProbeKind::kLatency, 2, 1000, 0, 0})).ok());  // a hello
  std::vector<std::uint8_t> r = EncodeReject({RejectCode::kBusy, "abc"});
  r[6] = 99;
  EXPECT_FALSE(DecodeReject(r).ok());  // unknown code
  r = EncodeReject({RejectCode::kBusy, "abc"});
  r[7] = 10;  // says 10 bytes of text, has 3
  EXPECT_FALSE(DecodeReject(r).ok());
  r = EncodeReject({RejectCode::kBusy, "abc"});
  r[9] = 0x07;
  EXPECT_FALSE(DecodeReject(r).ok());  // non-printable
  EXPECT_FALSE(DecodeReject(std::vector<std::uint8_t>(148, 0)).ok());  // a CM reject without our data
}

}  // namespace
}  // namespace rdmahd
