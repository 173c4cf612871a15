#include "worker/src/blas_threads.h"

#include <gtest/gtest.h>

namespace accel::worker {
namespace {

TEST(BlasThreadsTest, PthreadsBuildWithSeveralThreadsOnBothSidesIsNamed) {
  const std::string notice = BlasContentionNotice({BlasThreading::kPthreads, 2}, 4);
  EXPECT_NE(notice.find("pthreads build"), std::string::npos) << notice;
  EXPECT_NE(notice.find("its 2 threads contend with LibTorch's 4 OpenMP threads"),
            std::string::npos)
      << notice;
  EXPECT_NE(notice.find("libopenblas0-openmp"), std::string::npos) << notice;
  EXPECT_NE(notice.find("OPENBLAS_NUM_THREADS=1"), std::string::npos) << notice;
}

TEST(BlasThreadsTest, NothingToSayWhenEitherSideHasOneThreadOrTheBuildSharesThem) {
  EXPECT_EQ(BlasContentionNotice({BlasThreading::kPthreads, 2}, 1), "");
  EXPECT_EQ(BlasContentionNotice({BlasThreading::kPthreads, 1}, 2), "");
  EXPECT_EQ(BlasContentionNotice({BlasThreading::kOpenMp, 2}, 2), "");
  EXPECT_EQ(BlasContentionNotice({BlasThreading::kSequential, 1}, 2), "");
  EXPECT_EQ(BlasContentionNotice({BlasThreading::kNone, 0}, 2), "");
  EXPECT_EQ(BlasContentionNotice({BlasThreading::kUnknown, 2}, 2), "");
}

// This test links LibTorch, which links OpenBLAS: the loaded library answers.
TEST(BlasThreadsTest, FindsTheOpenBlasThisProcessLoaded) {
  const LoadedBlas blas = FindLoadedBlas();
  EXPECT_NE(blas.threading, BlasThreading::kNone);
  EXPECT_NE(blas.threading, BlasThreading::kUnknown);
  EXPECT_GE(blas.threads, 1);
}

}  // namespace
}  // namespace accel::worker
