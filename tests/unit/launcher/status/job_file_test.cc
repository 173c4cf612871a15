// Unit tests of the run directory's job file and token file.
#include "launcher/status/job_file.h"

#include <sys/stat.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/files.h"

namespace accel::launcher {
namespace {

using ::testing::HasSubstr;

TEST(JobFileTest, WrittenJobReadsBack) {
  testing::TempDir dir;
  JobFile job;
  job.run_id = "r1";
  job.store_endpoint = "10.0.0.1:29500";
  job.machine_rank = 1;
  job.num_machines = 3;
  job.token_file = "/etc/accel/token";
  job.launcher_pid = 4242;
  ASSERT_TRUE(WriteJobFile(dir.path(), job).ok());
  absl::StatusOr<JobFile> back = ReadJobFile(dir.path() + "/" + kJobFileName);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->run_id, "r1");
  EXPECT_EQ(back->store_endpoint, "10.0.0.1:29500");
  EXPECT_EQ(back->machine_rank, 1);
  EXPECT_EQ(back->num_machines, 3);
  EXPECT_EQ(back->token_file, "/etc/accel/token");
  EXPECT_EQ(back->tls_ca_file, "");
  EXPECT_EQ(back->launcher_pid, 4242);
}

TEST(JobFileTest, MissingAndDamagedFilesAreNamed) {
  testing::TempDir dir;
  EXPECT_TRUE(absl::IsNotFound(ReadJobFile(dir.path() + "/job").status()));
  const std::string bad = dir.Write("bad", "run_id=r\nstore_endpoint=h:1\nlauncher_pid=x\n");
  absl::Status s = ReadJobFile(bad).status();
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_THAT(s.message(), HasSubstr(":3: cannot read 'launcher_pid=x'"));
  const std::string partial = dir.Write("partial", "run_id=r\n");
  EXPECT_THAT(ReadJobFile(partial).status().message(), HasSubstr("store_endpoint missing"));
}

TEST(JobFileTest, TokenFileIsTheOwnersOnly) {
  testing::TempDir dir;
  absl::StatusOr<std::string> path = WriteJobToken(dir.path(), "s3cret");
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_EQ(testing::ReadFile(*path), "s3cret\n");
  struct stat st {};
  ASSERT_EQ(::stat(path->c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

}  // namespace
}  // namespace accel::launcher
