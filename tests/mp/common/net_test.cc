// PickFreePort and CheckPortFree with real sockets.
#include "common/net.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "common/unique_fd.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/listener.h"

namespace accel {
namespace {

// Returns whether a TCP socket can bind `port` on IPv4 address `host`.
bool CanBind(const char* host, int port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, host, &addr.sin_addr);
  return fd && ::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
}

TEST(PickFreePortTest, ReturnsAPortThatCanBeBound) {
  absl::StatusOr<int> port = PickFreePort("127.0.0.1");
  ASSERT_TRUE(port.ok()) << port.status();
  EXPECT_GT(*port, 0);
  EXPECT_LE(*port, 65535);
  EXPECT_TRUE(CanBind("127.0.0.1", *port));
}

TEST(PickFreePortTest, AnEmptyHostOrANameMeansEveryAddress) {
  for (const char* host : {"", "0.0.0.0", "not-an-address"}) {
    absl::StatusOr<int> port = PickFreePort(host);
    ASSERT_TRUE(port.ok()) << host << ": " << port.status();
    EXPECT_TRUE(CanBind("0.0.0.0", *port)) << host;
  }
}

TEST(PickFreePortTest, AnAddressOfAnotherMachineIsAClearError) {
  absl::StatusOr<int> port = PickFreePort("192.0.2.1");  // TEST-NET-1: never local
  ASSERT_FALSE(port.ok());
  EXPECT_EQ(port.status().message(),
            "pick free port: bind 192.0.2.1:0: Cannot assign requested address");
}

TEST(LocalAddressForTest, FindsThisMachinesAddressesByAddressOrName) {
  EXPECT_EQ(*LocalAddressFor("127.0.0.1"), "127.0.0.1");
  EXPECT_EQ(*LocalAddressFor("127.0.0.2"), "127.0.0.2");  // all of 127/8 is this machine's
  absl::StatusOr<std::string> named = LocalAddressFor("localhost");
  ASSERT_TRUE(named.ok()) << named.status();
  EXPECT_TRUE(*named == "127.0.0.1" || *named == "::1") << *named;
}

TEST(LocalAddressForTest, AnotherMachinesAddressOrAnUnknownNameIsNotFound) {
  absl::StatusOr<std::string> other = LocalAddressFor("192.0.2.1");
  EXPECT_EQ(other.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(other.status().message(), "192.0.2.1 (192.0.2.1) is not an address of this machine");
  absl::StatusOr<std::string> unknown = LocalAddressFor("no-such-host.invalid");
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(unknown.status().message()),
              ::testing::StartsWith("resolve no-such-host.invalid: "));
}

TEST(CheckPortFreeTest, AFreePortIsFreeAndAListenedPortIsInUse) {
  absl::StatusOr<int> port = PickFreePort("127.0.0.1");
  ASSERT_TRUE(port.ok()) << port.status();
  EXPECT_TRUE(CheckPortFree("127.0.0.1", *port).ok());
  const UniqueFd listener = testing::ListenOn("127.0.0.1", *port);
  ASSERT_TRUE(listener.valid());
  const absl::Status status = CheckPortFree("127.0.0.1", *port);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(), "port " + std::to_string(*port) + " on 127.0.0.1 is in use");
}

}  // namespace
}  // namespace accel
