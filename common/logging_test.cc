#include "common/logging.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace rdmahd::log {
namespace {

TEST(LoggingTest, TextIsLogfmtWithQuotingWhereNeeded) {
  std::string line = FormatText("2026-11-30T10:00:00.000Z", spdlog::level::warn, "port down",
                                {{"subject", "mlx5_0/1"}, {"reason", "state is \"1: DOWN\""}, {"fix", ""}});
  EXPECT_EQ(line,
            "ts=2026-11-30T10:00:00.000Z level=warn msg=\"port down\" subject=mlx5_0/1 "
            "reason=\"state is \\\"1: DOWN\\\"\" fix=\"\"");
}

TEST(LoggingTest, TextEscapesControlCharactersSoAValueCannotRewriteOrForgeALine) {
  // A device named from a hostile capture: CR back to the line start, an erase-line sequence, a
  // forged second record.
  std::string line = FormatText("t", spdlog::level::warn, "port down",
                                {{"subject", "mlx5_2\rFAKE\x1b[2K"}, {"reason", "a\nts=t level=info\tb\x7f"}});
  EXPECT_EQ(line,
            "ts=t level=warn msg=\"port down\" subject=\"mlx5_2\\rFAKE\\x1b[2K\" "
            "reason=\"a\\nts=t level=info\\tb\\x7f\"");
  for (char c : line) EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20 || c == 0x7f) << line;
}

TEST(LoggingTest, TextReplacesInvalidUtf8) {
  std::string line = FormatText("t", spdlog::level::info, "fw \xff", {{"fw_ver", "16.35.\xC3"}});
  EXPECT_EQ(line, "ts=t level=info msg=\"fw \xEF\xBF\xBD\" fw_ver=16.35.\xEF\xBF\xBD");
}

TEST(LoggingTest, JsonIsOneParseableObjectPerLine) {
  std::string line = FormatJson("t", spdlog::level::err, "bad \"config\"\nline2", {{"file", "/etc/x.yaml"}});
  EXPECT_EQ(line.find('\n'), std::string::npos);
  auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j["level"], "error");
  EXPECT_EQ(j["msg"], "bad \"config\"\nline2");
  EXPECT_EQ(j["file"], "/etc/x.yaml");
}

TEST(LoggingTest, ParsersRejectUnknownNames) {
  EXPECT_TRUE(ParseFormat("json").ok());
  EXPECT_FALSE(ParseFormat("xml").ok());
  EXPECT_EQ(*ParseLevel("warn"), spdlog::level::warn);
  auto bad = ParseLevel("loud");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("loud"), std::string::npos);
}

}  // namespace
}  // namespace rdmahd::log
