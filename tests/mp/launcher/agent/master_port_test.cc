// CheckMasterPort with a real listener on 127.0.0.1: in use is an error that names the port, and
// only a plan whose workers get MASTER_PORT from main_process_port is checked.
#include "launcher/agent/master_port.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <string>

#include "common/net.h"
#include "common/unique_fd.h"
#include "gtest/gtest.h"

namespace accel::launcher {
namespace {

class MasterPortTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<int> port = PickFreePort("127.0.0.1");
    ASSERT_TRUE(port.ok()) << port.status();
    port_ = *port;
    listener_ = UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port_));
    ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    ASSERT_EQ(::bind(listener_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    ASSERT_EQ(::listen(listener_.get(), 1), 0);
  }
  int port_ = 0;
  UniqueFd listener_;
};

TEST_F(MasterPortTest, AFixedMasterPortInUseIsNamed) {
  LaunchPlan plan;
  plan.torchrun_env = true;
  plan.fixed_master_port = port_;
  const absl::Status status = CheckMasterPort(plan, "127.0.0.1");
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  const std::string p = std::to_string(port_);
  EXPECT_EQ(status.message(), "rendezvous: main_process_port " + p +
                                  " is MASTER_PORT on this machine, but port " + p +
                                  " on 127.0.0.1 is in use (choose another port, or 0 for a "
                                  "free one)");
}

TEST_F(MasterPortTest, OnlyAPlanWithAFixedMasterPortIsChecked) {
  LaunchPlan plan;
  plan.torchrun_env = false;  // one process under accelerate's words: no MASTER_PORT at all
  plan.fixed_master_port = port_;
  EXPECT_TRUE(CheckMasterPort(plan, "127.0.0.1").ok());
  plan.torchrun_env = true;
  plan.fixed_master_port = 0;  // a free port is picked later
  EXPECT_TRUE(CheckMasterPort(plan, "127.0.0.1").ok());
}

}  // namespace
}  // namespace accel::launcher
