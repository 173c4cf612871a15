#include "common/backend.h"

#include "gtest/gtest.h"

namespace accel {
namespace {

TEST(AutoBackendTest, NcclOnCudaThenMpiWhenMpiFormedTheWorldElseGloo) {
  EXPECT_EQ(AutoBackend(/*cuda_device=*/true, /*world_from_mpi=*/false), "nccl");
  EXPECT_EQ(AutoBackend(true, true), "nccl");
  EXPECT_EQ(AutoBackend(false, true), "mpi");
  EXPECT_EQ(AutoBackend(false, false), "gloo");
}

}  // namespace
}  // namespace accel
