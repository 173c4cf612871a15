// `accel-launch token`: a fresh 256-bit token in an owner-only file, beside the config by default;
// an existing token kept unless --force; how to hand it on printed.
#include "launcher/commands/token_command.h"

#include <sys/stat.h>

#include <map>
#include <sstream>
#include <string>

#include "common/exit_codes.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rendezvous/grpc/token.h"
#include "rendezvous/grpc/token_strength.h"
#include "tests/testing/files.h"

namespace accel::launcher {
namespace {

using ::testing::HasSubstr;

struct Ran {
  int code;
  std::string out, err;
};

Ran RunToken(const std::vector<std::string>& args, const std::map<std::string, std::string>& vars) {
  std::ostringstream out, err;
  const EnvLookup env = [&](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
  const int code = RunTokenCommand(args, env, out, err);
  return {code, out.str(), err.str()};
}

mode_t Mode(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

TEST(TokenCommandTest, WritesAStrongOwnerOnlyTokenAndKeepsItUnlessForced) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/sub/job.token";
  const mode_t old_umask = ::umask(0);  // a lax umask must not widen the file
  Ran first = RunToken({path}, {});
  ::umask(old_umask);
  ASSERT_EQ(first.code, kExitOk) << first.err;
  EXPECT_THAT(first.out, HasSubstr("wrote a random 256-bit token to " + path));
  EXPECT_THAT(first.out, HasSubstr("scp -p"));
  EXPECT_THAT(first.out, HasSubstr("Slurm"));
  EXPECT_EQ(Mode(path), 0600u);
  absl::StatusOr<rendezvous::TokenFile> token = rendezvous::ReadTokenFile(path);
  ASSERT_TRUE(token.ok()) << token.status();
  EXPECT_EQ(token->token.size(), 64u);
  EXPECT_GE(rendezvous::EstimateTokenBits(token->token), 224);

  Ran again = RunToken({path}, {});
  EXPECT_EQ(again.code, kExitOk) << again.err;
  EXPECT_THAT(again.out, HasSubstr("kept the token"));
  EXPECT_EQ(testing::ReadFile(path), token->token + "\n");

  Ran forced = RunToken({path, "--force"}, {});
  EXPECT_EQ(forced.code, kExitOk) << forced.err;
  EXPECT_THAT(forced.out, HasSubstr("replaced the token"));
  EXPECT_NE(testing::ReadFile(path), token->token + "\n");
  EXPECT_EQ(Mode(path), 0600u);
}

TEST(TokenCommandTest, DefaultsToTheFileBesideTheConfigAndRefusesAWeakOne) {
  testing::TempDir dir;
  const std::string config = dir.Write("node/cfg.yaml", "num_machines: 2\n");
  Ran ran = RunToken({"--config_file", config}, {{"HOME", dir.path()}});
  ASSERT_EQ(ran.code, kExitOk) << ran.err;
  EXPECT_EQ(Mode(dir.path() + "/node/rdzv_token"), 0600u);
  // Without a config: beside accelerate's default config, as `accel-launch config` writes it.
  Ran fresh = RunToken({}, {{"HOME", dir.path()}, {"HF_HOME", dir.path() + "/hf"}});
  ASSERT_EQ(fresh.code, kExitOk) << fresh.err;
  EXPECT_EQ(Mode(dir.path() + "/hf/accelerate/rdzv_token"), 0600u);
  // An existing weak token is not kept quietly.
  const std::string weak = dir.Write("weak", "password-password-password-passw\n");
  ASSERT_EQ(::chmod(weak.c_str(), 0600), 0);
  Ran refused = RunToken({weak}, {});
  EXPECT_EQ(refused.code, kExitUsage);
  EXPECT_THAT(refused.err, HasSubstr("too weak"));
  EXPECT_THAT(refused.err, HasSubstr("--force"));
  EXPECT_EQ(RunToken({weak, "--force"}, {}).code, kExitOk);
  EXPECT_EQ(RunToken({"--bogus"}, {}).code, kExitUsage);
}

}  // namespace
}  // namespace accel::launcher
