#include "daemon/query.h"

#include <gtest/gtest.h>

#include "tests/support/big_node_report.h"

namespace rdmahd {
namespace {

TEST(QueryTest, QuotedArgumentCannotOpenATagLeaveAStringOrRunLong) {
  EXPECT_EQ(QuotedArgument("mlx5_0"), "\"mlx5_0\"");
  EXPECT_EQ(QuotedArgument("<script>\"'&\\\n\xff"), "\"\\x3cscript\\x3e\\x22\\x27\\x26\\x5c\\x0a\\xff\"");
  const std::string q = QuotedArgument(std::string(1000, 'a'));
  EXPECT_EQ(q.size(), 64u + 5u);  // 64 bytes, "...", the quotes
  EXPECT_TRUE(q.ends_with("...\""));
}

TEST(QueryTest, UnknownAndRepeatedParametersAreNamed) {
  auto ok = QueryArguments({{"status", "failed"}, {"check", "x"}}, {"status", "check"});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->at("check"), "x");
  auto unknown = QueryArguments({{"<b>x", "1"}}, {"status"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().message, "unknown parameter \"\\x3cb\\x3ex\" (this address takes: status)");
  auto twice = QueryArguments({{"status", "ok"}, {"status", "failed"}}, {"status"});
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.error().message, "parameter \"status\" given twice");
}

TEST(QueryTest, VerdictFilterParsesAndNamesTheBadParameter) {
  auto f = ParseVerdictFilter({{"status", "failed,warning"}, {"device", "mlx5_3"}, {"offset", "10"}, {"limit", "5"}}, 100);
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(f->statuses, (std::set<Verdict>{Verdict::kFailed, Verdict::kWarning}));
  EXPECT_EQ(f->device, "mlx5_3");
  EXPECT_EQ(f->offset, 10u);
  EXPECT_EQ(f->limit, 5u);
  EXPECT_TRUE(f->Any());
  EXPECT_FALSE(ParseVerdictFilter({}, 100)->Any());
  const std::map<std::string, std::string> bad[] = {
      {{"status", "failed,<b>"}}, {{"status", ""}},     {{"limit", "0"}},       {{"limit", "101"}},
      {{"offset", "-1"}},         {{"offset", "1e3"}},  {{"offset", "9999999999"}}, {{"device", ""}},
  };
  for (const auto& args : bad) {
    auto r = ParseVerdictFilter(args, 100);
    ASSERT_FALSE(r.ok()) << args.begin()->first << "=" << args.begin()->second;
    EXPECT_NE(r.error().message.find("\"" + args.begin()->first + "\""), std::string::npos) << r.error().message;
    EXPECT_EQ(r.error().message.find('<'), std::string::npos) << r.error().message;
  }
}

TEST(QueryTest, ADeviceOwnsItsPortsAndTheirNetdevsOnly) {
  const Report r = testing::BigNodeReport(12, -1);
  const DeviceSubjects d(r, "mlx5_1");
  EXPECT_TRUE(d.exists());
  EXPECT_TRUE(d.Has("mlx5_1"));
  EXPECT_TRUE(d.Has("mlx5_1/1"));
  EXPECT_TRUE(d.Has("ens1"));
  EXPECT_FALSE(d.Has("mlx5_10"));
  EXPECT_FALSE(d.Has("mlx5_10/1"));
  EXPECT_FALSE(d.Has("ens10"));
  EXPECT_FALSE(DeviceSubjects(r, "mlx5_99").exists());

  VerdictFilter f;
  f.device = "mlx5_1";
  const std::vector<std::size_t> own = SelectVerdicts(r, f);
  ASSERT_EQ(own.size(), 5u);
  for (std::size_t i : own) EXPECT_TRUE(d.Has(r.verdicts[i].subject)) << r.verdicts[i].subject;
  f.statuses = {Verdict::kUnknown};
  EXPECT_EQ(SelectVerdicts(r, f).size(), 2u);
}

}  // namespace
}  // namespace rdmahd
