// Unit tests of the preflight's results: the text form, the slow links and machines, the report.
#include "launcher/preflight/link_matrix.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::launcher {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// `world` machines, every link at 1000 MB/s but those from `slow_from`, at `slow_mb` MB/s.
PreflightResult Result(int world, int slow_from, double slow_mb) {
  PreflightResult r;
  r.transport = "gloo";
  for (int m = 0; m < world; ++m) r.hosts.push_back("10.0.0." + std::to_string(m + 1));
  for (const auto& [from, to] : LinkOrder(world)) {
    r.links.push_back({from, to, (from == slow_from ? slow_mb : 1000.0) * 1e6, 50e-6});
  }
  r.allreduce_bytes = 25 << 20;
  r.allreduce_s = 0.125;
  return r;
}

TEST(LinkMatrixTest, LinkOrderIsEveryOrderedPairOnce) {
  EXPECT_THAT(LinkOrder(3),
              ElementsAre(std::make_pair(0, 1), std::make_pair(0, 2), std::make_pair(1, 0),
                          std::make_pair(1, 2), std::make_pair(2, 0), std::make_pair(2, 1)));
  EXPECT_TRUE(LinkOrder(1).empty());
}

TEST(LinkMatrixTest, EncodedResultDecodesToTheSame) {
  const PreflightResult r = Result(3, 2, 5);
  std::optional<PreflightResult> back = DecodePreflight(EncodePreflight(r));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->transport, "gloo");
  EXPECT_EQ(back->hosts, r.hosts);
  ASSERT_EQ(back->links.size(), 6u);
  EXPECT_EQ(back->links[4].from, 2);
  EXPECT_EQ(back->links[4].to, 0);
  EXPECT_DOUBLE_EQ(back->links[4].bytes_per_s, 5e6);
  EXPECT_DOUBLE_EQ(back->links[4].rtt_s, 50e-6);
  EXPECT_EQ(back->allreduce_bytes, 25 << 20);
  EXPECT_DOUBLE_EQ(back->allreduce_s, 0.125);
}

TEST(LinkMatrixTest, DecodeRefusesDamagedText) {
  EXPECT_FALSE(DecodePreflight("").has_value());
  EXPECT_FALSE(DecodePreflight("transport\tgloo\nlink\t0\t1\tfast\t1\nhost\ta\n").has_value());
  EXPECT_FALSE(DecodePreflight("host\ta\n").has_value());  // no transport
  EXPECT_FALSE(DecodePreflight("transport\tgloo\nhost\ta\nwhat\t1\n").has_value());
}

TEST(LinkMatrixTest, SlowLinksAreThoseBelowTheThresholdOfTheMedian) {
  const std::vector<SlowLink> slow = FindSlowLinks(Result(3, 2, 100), 0.5);
  ASSERT_EQ(slow.size(), 2u);
  EXPECT_EQ(slow[0].from, 2);
  EXPECT_EQ(slow[1].from, 2);
  EXPECT_DOUBLE_EQ(slow[0].median_bytes_per_s, 1000e6);
  EXPECT_TRUE(FindSlowLinks(Result(3, 2, 600), 0.5).empty());  // 60 % of the median: fine
  EXPECT_TRUE(FindSlowLinks(Result(3, -1, 0), 0.5).empty());
}

TEST(LinkMatrixTest, TwoMachinesFlagTheSlowDirection) {
  // Two links: the median is their mean (550 MB/s); 100 is below half of it, 1000 is not.
  const std::vector<SlowLink> slow = FindSlowLinks(Result(2, 1, 100), 0.5);
  ASSERT_EQ(slow.size(), 1u);
  EXPECT_EQ(slow[0].from, 1);
  EXPECT_EQ(slow[0].to, 0);
  EXPECT_TRUE(SlowMachines(Result(2, 1, 100), slow).empty());  // two ends, nothing to tell apart
}

TEST(LinkMatrixTest, MachineWhoseEveryOutgoingLinkIsSlowIsNamed) {
  const PreflightResult r = Result(3, 2, 100);
  EXPECT_THAT(SlowMachines(r, FindSlowLinks(r, 0.5)), ElementsAre(2));
  PreflightResult one_link = Result(3, -1, 0);
  one_link.links[4].bytes_per_s = 1e6;  // only 2 -> 0
  EXPECT_TRUE(SlowMachines(one_link, FindSlowLinks(one_link, 0.5)).empty());
}

TEST(LinkMatrixTest, ReportHasBothMatricesTheAllReduceAndTheVerdicts) {
  const PreflightResult r = Result(3, 2, 100);
  const std::string text = FormatPreflight(r, FindSlowLinks(r, 0.5), 0.5);
  EXPECT_THAT(text, HasSubstr("network preflight (gloo, 3 machines: m0=10.0.0.1"));
  EXPECT_THAT(text, HasSubstr("bandwidth, MB/s"));
  EXPECT_THAT(text, HasSubstr("round trip, microseconds"));
  EXPECT_THAT(text, HasSubstr("m2             100.0       100.0           -"));
  EXPECT_THAT(text, HasSubstr("all-reduce of 25.0 MiB"));
  EXPECT_THAT(text,
              HasSubstr("SLOW LINK machine 2 (10.0.0.3) -> machine 0 (10.0.0.1): 100.0 MB/s"));
  EXPECT_THAT(text, HasSubstr("SLOW MACHINE 2"));
  const PreflightResult fine = Result(3, -1, 0);
  const std::string ok = FormatPreflight(fine, FindSlowLinks(fine, 0.5), 0.5);
  EXPECT_THAT(ok, HasSubstr("every link is within 50% of the median"));
  EXPECT_THAT(ok, Not(HasSubstr("SLOW")));
}

}  // namespace
}  // namespace accel::launcher
