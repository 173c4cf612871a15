// Unit tests of the Python progress module's launcher side: which programs are Python
// interpreters, and the files it writes (the ones in launcher/python/, byte for byte).
#include "launcher/agent/python_progress.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "tests/testing/files.h"

namespace accel::launcher {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(PythonProgressTest, KnowsAPythonInterpreterByItsName) {
  for (const char* yes : {"python", "python3", "python3.11", "/usr/bin/python3", "./python2.7"}) {
    EXPECT_TRUE(IsPythonInterpreter(yes)) << yes;
  }
  for (const char* no :
       {"python3-config", "ipython", "pythonw", "train.bin", "/opt/python3/bin/x", "", "py"}) {
    EXPECT_FALSE(IsPythonInterpreter(no)) << no;
  }
}

TEST(PythonProgressTest, WritesTheShippedFilesAsTheyAre) {
  const accel::testing::TempDir temp;
  const std::string dir = temp.path() + "/run/python";
  ASSERT_TRUE(WritePythonProgressModule(dir).ok());
  const char* source = std::getenv("ACCEL_SOURCE_DIR");  // ctest sets it (tests/CMakeLists.txt)
  ASSERT_NE(source, nullptr) << "ACCEL_SOURCE_DIR unset: run it through ctest";
  // Every .py file of launcher/python/ (one left out of the embed list would be missed at run
  // time), and nothing else.
  std::set<std::string> shipped_names;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(source) + "/launcher/python")) {
    if (entry.path().extension() == ".py") shipped_names.insert(entry.path().filename());
  }
  EXPECT_TRUE(shipped_names.count("sitecustomize.py") == 1 &&
              shipped_names.count("_accel_launch_progress.py") == 1);
  std::set<std::string> written_names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    written_names.insert(entry.path().filename());
  }
  EXPECT_EQ(written_names, shipped_names);
  for (const std::string& name : shipped_names) {
    const std::string shipped = Slurp(std::string(source) + "/launcher/python/" + name);
    ASSERT_FALSE(shipped.empty()) << name;
    EXPECT_EQ(Slurp(dir + "/" + name), shipped) << name;
  }
  ASSERT_TRUE(WritePythonProgressModule(dir).ok());  // again: replaced
  const absl::Status refused = WritePythonProgressModule("/proc/nope/python");
  EXPECT_FALSE(refused.ok());
}

TEST(PythonProgressTest, PutsTheModuleBeforeTheProgramsOwnPath) {
  EXPECT_EQ(PythonPathWithModule("/m", nullptr), "/m");
  EXPECT_EQ(PythonPathWithModule("/m", ""), "/m:");
  EXPECT_EQ(PythonPathWithModule("/m", "/a:/b"), "/m:/a:/b");
}

}  // namespace
}  // namespace accel::launcher
