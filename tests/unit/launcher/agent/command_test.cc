// Unit tests of ResolveWorkerCommand: .py under Python, -m, --no_python, --run_path, and the
// errors a launch and a --dry_run share.
#include "launcher/agent/command.h"

#include <sys/stat.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/files.h"

namespace accel::launcher {
namespace {

using accel::testing::TempDir;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class CommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    python_ = dir_.Write("bin/python3", "#!/bin/sh\n");
    ::chmod(python_.c_str(), 0755);
    tool_ = dir_.Write("bin/tool", "#!/bin/sh\n");
    ::chmod(tool_.c_str(), 0755);
    script_ = dir_.Write("train.py", "print('hi')\n");  // not executable: Python reads it
    path_env_ = dir_.path() + "/bin";
  }
  absl::StatusOr<WorkerCommand> Resolve(std::vector<std::string> program,
                                        ProgramOptions options = {}) {
    return ResolveWorkerCommand(program, options, path_env_);
  }

  TempDir dir_;
  std::string python_, tool_, script_, path_env_;
};

TEST_F(CommandTest, APythonScriptRunsUnderThePythonFromPath) {
  auto command = Resolve({script_, "--lr", "1"});
  ASSERT_TRUE(command.ok()) << command.status();
  EXPECT_EQ(command->path, python_);
  EXPECT_THAT(command->argv, ElementsAre("python3", script_, "--lr", "1"));
  EXPECT_TRUE(command->python);
}

TEST_F(CommandTest, AConfiguredInterpreterRunsIt) {
  ProgramOptions options;
  options.python = python_;
  auto command = Resolve({script_}, options);
  ASSERT_TRUE(command.ok()) << command.status();
  EXPECT_THAT(command->argv, ElementsAre(python_, script_));
}

TEST_F(CommandTest, DashMRunsAModule) {
  ProgramOptions options;
  options.module = true;
  auto command = Resolve({"pkg.train", "--x"}, options);
  ASSERT_TRUE(command.ok()) << command.status();
  EXPECT_EQ(command->path, python_);
  EXPECT_THAT(command->argv, ElementsAre("python3", "-m", "pkg.train", "--x"));
  EXPECT_TRUE(command->python);
}

TEST_F(CommandTest, NoPythonExecsTheScriptAsItIs) {
  ProgramOptions options;
  options.no_python = true;
  auto command = Resolve({script_}, options);
  ASSERT_FALSE(command.ok());  // not executable
  EXPECT_EQ(command.status().message(), "resolve program " + script_ + ": Permission denied");
  ::chmod(script_.c_str(), 0755);
  command = Resolve({script_}, options);
  ASSERT_TRUE(command.ok()) << command.status();
  EXPECT_EQ(command->path, script_);
  EXPECT_THAT(command->argv, ElementsAre(script_));
  EXPECT_FALSE(command->python);  // --no_python: exactly as before, no progress module
  command = Resolve({"python3", script_}, options);
  ASSERT_TRUE(command.ok()) << command.status();
  EXPECT_FALSE(command->python);
}

TEST_F(CommandTest, RunPathRunsAnyFileUnderPython) {
  const std::string file = dir_.Write("job", "print(1)\n");
  ProgramOptions options;
  options.run_path = true;
  auto command = Resolve({file}, options);
  ASSERT_TRUE(command.ok()) << command.status();
  EXPECT_THAT(command->argv, ElementsAre("python3", file));
  EXPECT_TRUE(command->python);
}

TEST_F(CommandTest, OtherProgramsAreExecedDirectly) {
  auto command = Resolve({"tool", "a"});
  ASSERT_TRUE(command.ok()) << command.status();
  EXPECT_EQ(command->path, tool_);
  EXPECT_THAT(command->argv, ElementsAre("tool", "a"));
  EXPECT_FALSE(command->python);
  command = Resolve({"python3", script_});  // `accel-launch python3 train.py`
  ASSERT_TRUE(command.ok()) << command.status();
  EXPECT_EQ(command->path, python_);
  EXPECT_TRUE(command->python);
}

TEST_F(CommandTest, WhatCannotRunIsNamed) {
  auto missing = Resolve({dir_.path() + "/nope.py"});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(),
            "resolve program " + dir_.path() + "/nope.py: No such file or directory");
  auto no_tool = Resolve({"nosuchtool"});
  ASSERT_FALSE(no_tool.ok());
  EXPECT_THAT(no_tool.status().message(), HasSubstr("resolve program nosuchtool (searched PATH)"));
  ProgramOptions options;
  options.python = "python9";
  auto no_python = Resolve({script_}, options);
  ASSERT_FALSE(no_python.ok());
  EXPECT_THAT(no_python.status().message(),
              HasSubstr("resolve program python9 (searched PATH): No such file or directory (the "
                        "Python interpreter for " +
                        script_ + "; set python or --python)"));
  options = {};
  options.module = true;
  options.no_python = true;
  auto both = Resolve({"pkg"}, options);
  ASSERT_FALSE(both.ok());
  EXPECT_THAT(both.status().message(), HasSubstr("cannot be used together"));
  EXPECT_FALSE(Resolve({}).ok());
}

}  // namespace
}  // namespace accel::launcher
