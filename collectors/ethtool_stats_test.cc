#include "collectors/ethtool_stats.h"

#include <gtest/gtest.h>
#include <linux/ethtool.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace rdmahd {
namespace {

// ---- ioctl path with byte-exact kernel buffers -----------------------------------------------------
// Plays a driver: answers each SIOCETHTOOL command by filling the caller's buffer exactly as the
// kernel's ethtool core does.
class FakeDriver : public EthtoolIoctl {
 public:
  std::vector<DriverStat> stats;
  std::optional<PauseParam> pause;
  bool change_count_before_gstats = false;
  bool no_stats_set = false;

  Status Call(const std::string& ifname, std::span<std::uint8_t> buf) override {
    if (ifname != "ens1") return Error::FromErrno("SIOCETHTOOL", ENODEV);
    std::uint32_t cmd;
    std::memcpy(&cmd, buf.data(), sizeof(cmd));
    switch (cmd) {
      case ETHTOOL_GSSET_INFO: {
        ethtool_sset_info info;
        std::memcpy(&info, buf.data(), sizeof(info));
        if (no_stats_set) info.sset_mask = 0;
        std::memcpy(buf.data(), &info, sizeof(info));
        std::uint32_t n = static_cast<std::uint32_t>(stats.size());
        std::memcpy(buf.data() + sizeof(info), &n, sizeof(n));
        return Status::Ok();
      }
      case ETHTOOL_GSTRINGS: {
        ethtool_gstrings gs;
        std::memcpy(&gs, buf.data(), sizeof(gs));
        if (gs.len != stats.size()) return Error::FromErrno("SIOCETHTOOL", EINVAL);
        for (std::size_t i = 0; i < stats.size(); ++i) {
          char name[ETH_GSTRING_LEN] = {};
          std::memcpy(name, stats[i].name.data(), std::min<std::size_t>(stats[i].name.size(), ETH_GSTRING_LEN));
          std::memcpy(buf.data() + sizeof(gs) + i * ETH_GSTRING_LEN, name, ETH_GSTRING_LEN);
        }
        return Status::Ok();
      }
      case ETHTOOL_GSTATS: {
        ethtool_stats es;
        std::memcpy(&es, buf.data(), sizeof(es));
        if (change_count_before_gstats) es.n_stats = es.n_stats + 1;  // the driver's set grew
        std::memcpy(buf.data(), &es, sizeof(es));
        for (std::size_t i = 0; i < stats.size() && !change_count_before_gstats; ++i) {
          std::memcpy(buf.data() + sizeof(es) + i * 8, &stats[i].value, 8);
        }
        return Status::Ok();
      }
      case ETHTOOL_GPAUSEPARAM: {
        if (!pause) return Error::FromErrno("SIOCETHTOOL", EOPNOTSUPP);
        ethtool_pauseparam pp{};
        pp.cmd = cmd;
        pp.autoneg = pause->autoneg;
        pp.rx_pause = pause->rx;
        pp.tx_pause = pause->tx;
        std::memcpy(buf.data(), &pp, sizeof(pp));
        return Status::Ok();
      }
      default:
        return Error::FromErrno("SIOCETHTOOL", EOPNOTSUPP);
    }
  }
};

TEST(EthtoolReaderTest, PairsNamesAndValuesIncludingA32CharacterName) {
  auto driver = std::make_unique<FakeDriver>();
  const std::string long_name(ETH_GSTRING_LEN, 'x');  // fills the slot, no NUL
  driver->stats = {{"rx_prio3_pause", 17}, {long_name, 5}, {"tx_prio3_pause_duration", 123456}};
  driver->pause = PauseParam{false, true, false};
  EthtoolReader reader(std::move(driver));
  auto stats = reader.ReadStats("ens1");
  ASSERT_TRUE(stats.ok()) << stats.error().message;
  ASSERT_EQ(stats->size(), 3u);
  EXPECT_EQ((*stats)[0], (DriverStat{"rx_prio3_pause", 17}));
  EXPECT_EQ((*stats)[1], (DriverStat{long_name, 5}));
  EXPECT_EQ((*stats)[2].value, 123456u);
  auto pause = reader.ReadPause("ens1");
  ASSERT_TRUE(pause.ok());
  ASSERT_TRUE(pause->has_value());
  EXPECT_TRUE((*pause)->rx);
  EXPECT_FALSE((*pause)->tx);
}

TEST(EthtoolReaderTest, UnsupportedPauseIsUnknownAndOtherErrorsNameTheNetdev) {
  auto driver = std::make_unique<FakeDriver>();
  EthtoolReader reader(std::move(driver));
  auto pause = reader.ReadPause("ens1");
  ASSERT_TRUE(pause.ok());
  EXPECT_FALSE(pause->has_value());
  auto missing = reader.ReadStats("nope0");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().errno_value, ENODEV);
  EXPECT_NE(missing.error().message.find("nope0: ETHTOOL_GSSET_INFO"), std::string::npos) << missing.error().message;
}

TEST(EthtoolReaderTest, StatSetChangingBetweenCallsIsAnError) {
  auto driver = std::make_unique<FakeDriver>();
  driver->stats = {{"a", 1}, {"b", 2}};
  driver->change_count_before_gstats = true;
  EthtoolReader reader(std::move(driver));
  auto stats = reader.ReadStats("ens1");
  ASSERT_FALSE(stats.ok());
  EXPECT_EQ(stats.error().errno_value, EAGAIN);
}

TEST(EthtoolReaderTest, DriverWithoutStatsStringSet) {
  auto driver = std::make_unique<FakeDriver>();
  driver->no_stats_set = true;
  EthtoolReader reader(std::move(driver));
  auto stats = reader.ReadStats("ens1");
  ASSERT_FALSE(stats.ok());
  EXPECT_EQ(stats.error().errno_value, EOPNOTSUPP);
}

}  // namespace
}  // namespace rdmahd
