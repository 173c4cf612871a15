// The hierarchical shared-memory communicator when a machine's leader cannot connect to the other
// machines (issue 23, finding 5b): the machine's other ranks wait for their leader in a barrier;
// they must fail at once, naming the leader and its cause, not at the deadline.
//
// One thread per rank of machine 0 (global ranks 0 and 1); machine 1 (ranks 2 and 3) exists only
// as its host keys in the store, so the topology has two machines and rank 0 leads machine 0. The
// store refuses every key of the leaders' group: the leader's inter-machine connect (Gloo's
// rendezvous goes through the store) fails at once, as it does when the store or the other
// machines cannot be reached.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "accel/error.h"
#include "tests/testing/files.h"
#include "worker/src/comm/factory.h"
#include "worker/src/store/kv.h"

namespace accel::worker {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// The file store, except that every key of the leaders' group fails.
class LeadersUnreachableKv : public Kv {
 public:
  explicit LeadersUnreachableKv(std::unique_ptr<Kv> inner) : inner_(std::move(inner)) {}
  void Set(const std::string& key, const std::string& value) override {
    Check("set", key);
    inner_->Set(key, value);
  }
  std::string Get(const std::string& key, milliseconds timeout) override {
    Check("get", key);
    return inner_->Get(key, timeout);
  }
  std::optional<std::string> TryGet(const std::string& key, milliseconds timeout) override {
    Check("get", key);
    return inner_->TryGet(key, timeout);
  }

 private:
  static void Check(const char* op, const std::string& key) {
    if (key.find("leaders/") != std::string::npos) {
      throw Error(op, key, "the other machines cannot be reached (test)");
    }
  }
  std::unique_ptr<Kv> inner_;
};

TEST(ShmLeaderTest, LeaderWhoseConnectFailsFailsItsMachineAtOnce) {
  accel::testing::TempDir dir;
  const milliseconds timeout(20000);
  const std::string prefix = "pg0/";
  {
    auto kv = MakeFileKv(dir.path(), "ns");
    kv->Set(prefix + "shm/host/2", "machine-1");
    kv->Set(prefix + "shm/host/3", "machine-1");
  }
  std::vector<std::string> errors(2);
  std::vector<double> seconds(2, 0.0);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      const auto start = Clock::now();
      try {
        LeadersUnreachableKv kv(MakeFileKv(dir.path(), "ns"));
        GroupSpec spec{r, 4, prefix, timeout, SharedMemory::kAuto};
        auto comm = MakeCommunicator(Backend::kGloo, c10::Device(c10::kCPU), spec, &kv);
        errors[r] = "connected";
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
      seconds[r] = std::chrono::duration<double>(Clock::now() - start).count();
    });
  }
  for (auto& t : threads) t.join();
  // The leader fails with its own cause.
  EXPECT_NE(errors[0].find("cannot be reached (test)"), std::string::npos) << errors[0];
  // Its machine's other rank fails at once with the leader's cause, not at the 20 s deadline.
  EXPECT_NE(errors[1].find("global rank 0 (this machine's leader) could not connect to the other "
                           "machines"),
            std::string::npos)
      << errors[1];
  EXPECT_NE(errors[1].find("cannot be reached (test)"), std::string::npos) << errors[1];
  EXPECT_LT(seconds[1], 5.0) << errors[1];
}

}  // namespace
}  // namespace accel::worker
