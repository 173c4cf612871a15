// The fixture of the supervisor's multi-process tests (supervisor_test.cc,
// supervisor_regroup_test.cc): the launcher's signalfd and abort channel, console pipes, a
// private directory, fake_worker launches; nothing of ours may be left at the end.
#ifndef ACCEL_TESTS_MP_LAUNCHER_PROCESS_SUPERVISOR_FIXTURE_H_
#define ACCEL_TESTS_MP_LAUNCHER_PROCESS_SUPERVISOR_FIXTURE_H_

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "common/unique_fd.h"
#include "gtest/gtest.h"
#include "launcher/process/os_util.h"
#include "launcher/process/supervisor.h"

namespace accel::launcher {

class SupervisorFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    auto signals = SignalFd::Create();
    ASSERT_TRUE(signals.ok()) << signals.status();
    signals_ = std::make_unique<SignalFd>(*std::move(signals));
    auto abort = AbortChannel::Create();
    ASSERT_TRUE(abort.ok());
    abort_ = *std::move(abort);
    auto out = MakePipe();
    auto err = MakePipe();
    ASSERT_TRUE(out.ok() && err.ok());
    out_read_ = std::move(out->first);
    out_write_ = std::move(out->second);
    err_read_ = std::move(err->first);
    err_write_ = std::move(err->second);
    // Big enough that the console pipes never fill during a test.
    ::fcntl(out_write_.get(), F_SETPIPE_SZ, 1 << 20);
    ::fcntl(err_write_.get(), F_SETPIPE_SZ, 1 << 20);
    dir_ = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") +
           "/accel_supervisor_XXXXXX";
    ASSERT_NE(::mkdtemp(dir_.data()), nullptr);
  }
  void TearDown() override {
    RemoveTree(dir_);
    // Nothing of ours may be left: no child, running or zombie.
    EXPECT_EQ(::waitpid(-1, nullptr, WNOHANG), -1);
    EXPECT_EQ(errno, ECHILD);
  }

  std::vector<WorkerLaunch> Workers(int n, const std::vector<std::string>& args) {
    std::vector<WorkerLaunch> out;
    for (int r = 0; r < n; ++r) {
      WorkerLaunch w;
      w.rank = r;
      w.local_rank = r;
      w.files.error_file = dir_ + "/error_" + std::to_string(r) + ".json";
      w.files.progress_file = dir_ + "/progress_" + std::to_string(r);
      w.spec.label = "worker rank=" + std::to_string(r);
      w.spec.path = FAKE_WORKER_PATH;
      w.spec.argv = {"fake_worker"};
      w.spec.argv.insert(w.spec.argv.end(), args.begin(), args.end());
      w.spec.env = {"RANK=" + std::to_string(r), "ACCEL_ERROR_FILE=" + w.files.error_file,
                    "ACCEL_PROGRESS_FILE=" + w.files.progress_file};
      out.push_back(std::move(w));
    }
    return out;
  }

  std::unique_ptr<SignalFd> signals_;
  std::unique_ptr<AbortChannel> abort_;
  UniqueFd out_read_, out_write_, err_read_, err_write_;
  std::string dir_;
  absl::Duration elapsed_;
};

}  // namespace accel::launcher

#endif  // ACCEL_TESTS_MP_LAUNCHER_PROCESS_SUPERVISOR_FIXTURE_H_
