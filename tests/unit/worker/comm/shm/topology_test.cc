#include "worker/src/comm/shm/topology.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "accel/error.h"

namespace accel::worker::shm {
namespace {

TEST(TopologyTest, ParsesMachinesInOrderOfTheirLowestRank) {
  const Topology t = ParseTopology("0,1,0,1,2", 3, 5);
  EXPECT_EQ(t.machines, (std::vector<std::vector<int>>{{0, 2}, {1, 3}, {4}}));
  EXPECT_EQ(t.machine, 1);
  EXPECT_EQ(t.local_rank, 1);
  EXPECT_EQ(t.local_size(), 2);
  EXPECT_FALSE(t.is_leader());
  EXPECT_TRUE(t.AnyShared());
  EXPECT_FALSE(ParseTopology("0,1,2", 0, 3).AnyShared());
}

TEST(TopologyTest, RejectsMalformedLines) {
  for (const std::string bad : {"", "0,,1", "0,2", "1,0", "0,x", "0,1"}) {
    EXPECT_THROW(ParseTopology(bad, 0, 3), Error) << bad;
  }
}

TEST(TopologyTest, HostKeyIsStableAndNamesTheUser) {
  EXPECT_EQ(HostKey(), HostKey());
  EXPECT_NE(HostKey().find(std::to_string(::getuid())), std::string::npos);
}

}  // namespace
}  // namespace accel::worker::shm
