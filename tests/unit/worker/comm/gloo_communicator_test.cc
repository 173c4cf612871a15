// The Gloo adapter and SIGPIPE: Gloo writes to its peers with writev(2), so a peer that died
// (issue 25: a machine killed under elastic in-place recovery) must make the write fail with EPIPE,
// not kill the surviving worker with SIGPIPE's default action; a handler the program installed is
// its own business and is kept.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <memory>
#include <string>

#include "tests/testing/files.h"
#include "worker/src/comm/factory.h"
#include "worker/src/store/kv.h"

namespace accel::worker {
namespace {

void SetSigpipe(void (*handler)(int)) {
  struct sigaction action {};
  action.sa_handler = handler;
  ::sigemptyset(&action.sa_mask);
  ASSERT_EQ(::sigaction(SIGPIPE, &action, nullptr), 0);
}

void (*CurrentSigpipe())(int) {
  struct sigaction current {};
  ::sigaction(SIGPIPE, nullptr, &current);
  return current.sa_handler;
}

// A world of one over Gloo's TCP transport, connected through a file store.
std::unique_ptr<Communicator> ConnectGloo(const std::string& dir) {
  auto kv = MakeFileKv(dir, "ns");
  GroupSpec spec{0, 1, "pg0/", std::chrono::milliseconds(10000), SharedMemory::kOff};
  return MakeGlooCommunicator(*kv, spec, "127.0.0.1");
}

int pipes_seen = 0;
void CountPipe(int) { ++pipes_seen; }

TEST(GlooCommunicatorTest, AWriteToADeadPeerFailsWithEpipeInsteadOfKillingTheProcess) {
  SetSigpipe(SIG_DFL);  // what accel-launch gives its workers
  accel::testing::TempDir dir;
  auto comm = ConnectGloo(dir.path());
  EXPECT_EQ(CurrentSigpipe(), SIG_IGN);
  // What Gloo's writev meets when the peer is gone: without the fix this kills the test binary.
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
  ::close(pair[1]);
  const char byte = 'x';
  errno = 0;
  EXPECT_EQ(::write(pair[0], &byte, 1), -1);
  EXPECT_EQ(errno, EPIPE);
  ::close(pair[0]);
  SetSigpipe(SIG_DFL);
}

TEST(GlooCommunicatorTest, AHandlerTheProgramInstalledIsKept) {
  SetSigpipe(&CountPipe);
  accel::testing::TempDir dir;
  auto comm = ConnectGloo(dir.path());
  EXPECT_EQ(CurrentSigpipe(), &CountPipe);
  SetSigpipe(SIG_DFL);
}

}  // namespace
}  // namespace accel::worker
