// Lookup order and precedence: CLI > environment > scheduler > file > defaults.
#include "launcher/config/resolve.h"

#include <unistd.h>

#include <filesystem>
#include <string>

#include "absl/strings/str_split.h"
#include "common/defaults.h"
#include "common/seconds.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launcher/config/diagnostics.h"
#include "launcher/config/netif.h"
#include "tests/testing/files.h"

namespace accel::launcher {
namespace {

using accel::testing::TempDir;

ResolveOptions Options(std::map<std::string, std::string> env, int gpus = 0) {
  ResolveOptions options;
  options.env = FixedEnvironment(std::move(env));
  options.count_gpus = [gpus](std::string* why) {
    if (gpus == 0) *why = "cuInit: CUDA driver version is insufficient";
    return gpus;
  };
  return options;
}

TEST(ConfigLookupTest, OrderIsFlagThenEnvThenOursThenAccelerates) {
  TempDir dir;
  const std::string home = dir.path() + "/home";
  const std::string hf = dir.path() + "/hf";
  const std::string ours = home + "/.config/accel-launch/default_config.yaml";
  const std::string theirs = hf + "/accelerate/default_config.yaml";
  const EnvLookup env = FixedEnvironment({{"HOME", home}, {"HF_HOME", hf}});

  ConfigLookup lookup = FindConfigFile("", env);
  EXPECT_EQ(lookup.path, "");
  EXPECT_EQ(lookup.tried, (std::vector<std::string>{ours, theirs}));

  dir.Write("hf/accelerate/default_config.yaml", "num_processes: 1\n");
  EXPECT_EQ(FindConfigFile("", env).path, theirs);
  dir.Write("home/.config/accel-launch/default_config.yaml", "num_processes: 1\n");
  EXPECT_EQ(FindConfigFile("", env).path, ours);
  const EnvLookup with_var =
      FixedEnvironment({{"HOME", home}, {"HF_HOME", hf}, {"ACCEL_CONFIG_FILE", "/x.yaml"}});
  EXPECT_EQ(FindConfigFile("", with_var).path, "/x.yaml");
  EXPECT_TRUE(FindConfigFile("", with_var).explicit_path);
  EXPECT_EQ(FindConfigFile("/flag.yaml", with_var).path, "/flag.yaml");
}

TEST(ConfigLookupTest, HfHomeDefaultsToCacheHuggingface) {
  EXPECT_EQ(AccelerateDefaultConfigPath(FixedEnvironment({{"HOME", "/h"}})),
            "/h/.cache/huggingface/accelerate/default_config.yaml");
  EXPECT_EQ(
      AccelerateDefaultConfigPath(FixedEnvironment({{"HOME", "/h"}, {"XDG_CACHE_HOME", "/x"}})),
      "/x/huggingface/accelerate/default_config.yaml");
  EXPECT_EQ(AccelerateDefaultConfigPath(
                FixedEnvironment({{"HOME", "/h"}, {"XDG_CACHE_HOME", "/x"}, {"HF_HOME", "/hf"}})),
            "/hf/accelerate/default_config.yaml");
  EXPECT_EQ(OurDefaultConfigPath(FixedEnvironment({{"HOME", "/h"}})),
            "/h/.config/accel-launch/default_config.yaml");
}

TEST(ConfigResolveTest, NoFileUsesHardwareDefaultsWithOneNotice) {
  TempDir dir;
  ResolvedConfig r = ResolveConfig(Options({{"HOME", dir.path()}}, /*gpus=*/0));
  EXPECT_TRUE(r.problems.empty()) << FormatDiagnostics(r.problems);
  ASSERT_EQ(r.notices.size(), 1u);
  EXPECT_EQ(r.notices[0],
            "no config file (looked in " + dir.path() +
                "/.config/accel-launch/default_config.yaml, " + dir.path() +
                "/.cache/huggingface/accelerate/default_config.yaml); using defaults for this "
                "machine, no GPU: "
                "distributed_type=NO num_processes=1 mixed_precision=no (write a file with "
                "`accel-launch config`)");
  EXPECT_FALSE(r.config.use_cpu);  // the agent runs on CPU when it finds no GPU

  ResolvedConfig four = ResolveConfig(Options({{"HOME", dir.path()}}, /*gpus=*/4));
  EXPECT_EQ(four.config.num_processes, 4);
  EXPECT_EQ(four.config.distributed_type, DistributedType::kMultiGpu);
  EXPECT_FALSE(four.config.use_cpu);
}

TEST(ConfigResolveTest, TheDefaultsNoticeListsOnlyTheDefaultsTheOptionsLeave) {
  TempDir dir;
  ResolveOptions options = Options({{"HOME", dir.path()}}, /*gpus=*/0);
  options.flags = {{"num_processes", "2", "--nproc_per_node 2"}};
  ResolvedConfig r = ResolveConfig(options);
  EXPECT_TRUE(r.problems.empty()) << FormatDiagnostics(r.problems);
  ASSERT_EQ(r.notices.size(), 1u);
  // Not "distributed_type=NO num_processes=1": two processes run, as the plan says next.
  EXPECT_EQ(r.notices[0], "no config file (looked in " + dir.path() +
                              "/.config/accel-launch/default_config.yaml, " + dir.path() +
                              "/.cache/huggingface/accelerate/default_config.yaml); using "
                              "defaults for this machine, no GPU: mixed_precision=no (write a "
                              "file with `accel-launch config`)");

  options.flags.push_back({"mixed_precision", "bf16", ""});
  r = ResolveConfig(options);
  ASSERT_EQ(r.notices.size(), 1u);
  EXPECT_EQ(r.notices[0].find("mixed_precision="), std::string::npos) << r.notices[0];
  EXPECT_NE(r.notices[0].find("using defaults for this machine, no GPU (write"), std::string::npos)
      << r.notices[0];
}

TEST(ConfigResolveTest, CommandLineBeatsEnvironmentBeatsFile) {
  TempDir dir;
  const std::string file =
      dir.Write("c.yaml",
                "num_processes: 4\nmixed_precision: fp16\ngradient_accumulation_steps: 2\n"
                "max_restarts: 1\n");
  ResolveOptions options = Options({{"ACCEL_MIXED_PRECISION", "bf16"},
                                    {"ACCEL_GRADIENT_ACCUMULATION_STEPS", "3"},
                                    {"ACCEL_CONFIG_FILE", file}});
  options.flags = {{"gradient_accumulation_steps", "5", ""}};
  ResolvedConfig r = ResolveConfig(options);
  EXPECT_TRUE(r.problems.empty()) << FormatDiagnostics(r.problems);
  EXPECT_EQ(r.path, file);
  EXPECT_EQ(r.config.num_processes, 4);                                   // file
  EXPECT_EQ(r.config.mixed_precision, MixedPrecision::kBf16);             // env over file
  EXPECT_EQ(r.config.gradient_accumulation_steps, 5);                     // flag over env
  EXPECT_EQ(r.config.max_restarts, 1);                                    // file
  EXPECT_EQ(r.config.rdzv_timeout_s, ToSeconds(defaults::kRdzvTimeout));  // default
  EXPECT_EQ(DescribeOrigin(r.sources["num_processes"]), file + ":1");
  EXPECT_EQ(DescribeOrigin(r.sources["mixed_precision"]), "ACCEL_MIXED_PRECISION=bf16");
  EXPECT_EQ(DescribeOrigin(r.sources["gradient_accumulation_steps"]),
            "--gradient_accumulation_steps 5");
  // num_processes 4 with distributed_type NO is promoted, with a notice.
  EXPECT_EQ(r.config.distributed_type, DistributedType::kMultiGpu);
}

TEST(ConfigResolveTest, ErrorsFromEveryLayerAreReportedTogether) {
  TempDir dir;
  const std::string file = dir.Write("c.yaml", "num_processes: 3\nnum_machnes: 2\n");
  ResolveOptions options = Options({{"ACCEL_NUM_MACHINES", "two"}});
  options.config_file = file;
  options.flags = {{"main_process_port", "99999", ""}, {"use_cpu", "maybe", ""}};
  ResolvedConfig r = ResolveConfig(options);
  EXPECT_EQ(FormatDiagnostics(r.problems),
            file +
                ":2:1: unknown key 'num_machnes'; did you mean 'num_machines'?\n"
                "num_machnes: 2\n^\n"
                "ACCEL_NUM_MACHINES=two: num_machines: expected an integer, got 'two'\n"
                "--use_cpu maybe: use_cpu: expected true or false, got 'maybe'\n"
                "--main_process_port 99999: main_process_port 99999 is out of range 0..65535\n");
}

TEST(ConfigResolveTest, ExplicitMissingFileIsAProblem) {
  ResolveOptions options = Options({});
  options.config_file = "/nonexistent/node1.yaml";
  ResolvedConfig r = ResolveConfig(options);
  EXPECT_EQ(FormatDiagnostics(r.problems),
            "/nonexistent/node1.yaml: read config file: No such file or directory\n");
  TempDir dir;
  options.config_file = dir.path();
  r = ResolveConfig(options);
  EXPECT_EQ(FormatDiagnostics(r.problems), dir.path() + ": read config file: Is a directory\n");
}

TEST(ConfigResolveTest, EmptyEnvironmentVariableReadsAsUnset) {
  ResolveOptions options = Options({{"ACCEL_NUM_PROCESSES", ""}, {"ACCEL_MAX_RESTARTS", "2"}});
  ResolvedConfig r = ResolveConfig(options);
  EXPECT_TRUE(r.problems.empty()) << FormatDiagnostics(r.problems);
  EXPECT_EQ(r.config.num_processes, 1);
  EXPECT_EQ(r.config.max_restarts, 2);
}

TEST(ConfigResolveTest, MachineRankFromFlagIsCheckedAgainstFile) {
  TempDir dir;
  ResolveOptions options = Options({});
  options.config_file = dir.Write("c.yaml",
                                  "num_machines: 2\nnum_processes: 4\nmain_process_ip: 10.1.1.1\n"
                                  "main_process_port: 29500\n");
  options.flags = {{"machine_rank", "2", ""}};
  ResolvedConfig r = ResolveConfig(options);
  EXPECT_EQ(FormatDiagnostics(r.problems),
            "--machine_rank 2: machine_rank 2 is out of range: it must be less than "
            "num_machines (2)\n");
}

TEST(ConfigResolveTest, SlurmFillsUnlessEnvironmentOrFlagsSetThem) {
  TempDir dir;
  ResolveOptions options = Options({{"SLURM_JOB_ID", "77"},
                                    {"SLURM_NODEID", "1"},
                                    {"SLURM_NNODES", "2"},
                                    {"SLURM_JOB_NODELIST", "gpu[07-08]"}});
  options.config_file = dir.Write("c.yaml",
                                  "num_processes: 4\nmain_process_port: 29500\n"
                                  "num_machines: 1\nmachine_rank: 0\n");
  ResolvedConfig r = ResolveConfig(options);
  EXPECT_TRUE(r.problems.empty()) << FormatDiagnostics(r.problems);
  EXPECT_EQ(r.config.machine_rank, 1);
  EXPECT_EQ(r.config.num_machines, 2);
  EXPECT_EQ(r.config.main_process_ip, "gpu07");
  EXPECT_EQ(DescribeOrigin(r.sources["main_process_ip"]), "SLURM_JOB_NODELIST=gpu[07-08]");

  EXPECT_EQ(r.config.main_process_port, 29500) << "the file's port wins over Slurm's";

  options.flags = {{"machine_rank", "0", ""}, {"main_process_ip", "10.0.0.9", ""}};
  r = ResolveConfig(options);
  EXPECT_EQ(r.config.machine_rank, 0);
  EXPECT_EQ(r.config.main_process_ip, "10.0.0.9");
  EXPECT_EQ(r.config.num_machines, 2);
}

TEST(ConfigResolveTest, SlurmPicksThePortWhenNothingSetsIt) {
  ResolveOptions options = Options({{"SLURM_JOB_ID", "20077"},
                                    {"SLURM_NODEID", "0"},
                                    {"SLURM_NNODES", "2"},
                                    {"SLURM_JOB_NODELIST", "n[0-1]"}});
  options.flags = {{"num_processes", "4", ""}};
  ResolvedConfig r = ResolveConfig(options);
  EXPECT_TRUE(r.problems.empty()) << FormatDiagnostics(r.problems);
  EXPECT_EQ(r.config.main_process_port, 10077);
  EXPECT_EQ(DescribeOrigin(r.sources["main_process_port"]),
            "SLURM_JOB_ID=20077 (port 10000 + job id % 10000)");
  options.env = FixedEnvironment({{"SLURM_JOB_ID", "20077"},
                                  {"SLURM_NNODES", "2"},
                                  {"SLURM_JOB_NODELIST", "n[0-1]"},
                                  {"ACCEL_MAIN_PROCESS_PORT", "29400"}});
  EXPECT_EQ(ResolveConfig(options).config.main_process_port, 29400);
}

TEST(ConfigResolveTest, OpenMpiFillsRankAndCount) {
  TempDir dir;
  ResolveOptions options = Options({{"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_SIZE", "3"}});
  options.config_file = dir.Write("c.yaml", "num_processes: 3\nmain_process_port: 29500\n");
  ResolvedConfig r = ResolveConfig(options);
  EXPECT_EQ(r.config.machine_rank, 2);
  EXPECT_EQ(r.config.num_machines, 3);
  // Open MPI does not name machine 0's address: the usual error asks for it.
  EXPECT_EQ(FormatDiagnostics(r.problems),
            "OMPI_COMM_WORLD_SIZE=3: main_process_ip is required when num_machines is 3 (the "
            "address of machine 0; set main_process_ip or --main_process_ip)\n");
}

TEST(ConfigResolveTest, KubernetesIndexGivesTheRankAndThePodTemplateTheRest) {
  ResolveOptions options = Options({{"JOB_COMPLETION_INDEX", "1"},
                                    {"ACCEL_NUM_MACHINES", "2"},
                                    {"ACCEL_MAIN_PROCESS_IP", "train-0.train"},
                                    {"ACCEL_MAIN_PROCESS_PORT", "29500"}});
  options.flags = {{"num_processes", "4", ""}};
  ResolvedConfig r = ResolveConfig(options);
  EXPECT_TRUE(r.problems.empty()) << FormatDiagnostics(r.problems);
  EXPECT_EQ(r.config.machine_rank, 1);
  EXPECT_EQ(r.config.num_machines, 2);
  EXPECT_EQ(r.config.main_process_ip, "train-0.train");
  EXPECT_EQ(DescribeOrigin(r.sources["machine_rank"]), "JOB_COMPLETION_INDEX=1");
  // An explicit ACCEL_MACHINE_RANK still wins over the index.
  options.env = FixedEnvironment({{"JOB_COMPLETION_INDEX", "1"}, {"ACCEL_MACHINE_RANK", "0"}});
  EXPECT_EQ(ResolveConfig(options).config.machine_rank, 0);
}

TEST(ConfigResolveTest, NetworkInterfaceBecomesLocalAddr) {
  ResolveOptions options = Options({});
  options.flags = {{"network_interface", "lo", ""}};
  ResolvedConfig r = ResolveConfig(options);
  EXPECT_TRUE(r.problems.empty()) << FormatDiagnostics(r.problems);
  EXPECT_EQ(r.config.local_addr, "127.0.0.1");

  options.flags = {{"network_interface", "nosuch0", ""}};
  r = ResolveConfig(options);
  const std::string text = FormatDiagnostics(r.problems);
  EXPECT_EQ(text.rfind("--network_interface nosuch0: network_interface 'nosuch0' has no IPv4 "
                       "address on this machine (interfaces with one: ",
                       0),
            0u)
      << text;
  // The list names whole interfaces, each of which has an address, loopback among them.
  const std::size_t open = text.find("(interfaces with one: ");
  const std::size_t close = text.find(')', open);
  ASSERT_NE(close, std::string::npos) << text;
  const std::string list = text.substr(open + 22, close - open - 22);
  const std::vector<std::string> names = absl::StrSplit(list, ", ");
  EXPECT_THAT(names, ::testing::Contains("lo")) << text;
  EXPECT_THAT(names, ::testing::Not(::testing::Contains("nosuch0"))) << text;
  for (const std::string& name : names) {
    EXPECT_TRUE(InterfaceAddress(name).ok()) << "'" << name << "' in " << text;
  }
}

TEST(ResolveTest, AnEmptyFileGetsANoticeAndTheMachinesDefaults) {
  TempDir dir;
  ResolveOptions options = Options({{"HOME", dir.path()}}, 2);
  options.config_file = dir.Write("empty.yaml", "# written by hand, nothing yet\n");
  const ResolvedConfig resolved = ResolveConfig(options);
  EXPECT_TRUE(resolved.problems.empty());
  ASSERT_EQ(resolved.notices.size(), 1u);
  EXPECT_EQ(resolved.notices[0],
            "config file " + options.config_file +
                " is empty: using defaults for this machine, "
                "distributed_type=MULTI_GPU num_processes=2 mixed_precision=no");
  EXPECT_EQ(resolved.config.num_processes, 2);
}

TEST(ResolveTest, TorchrunsProcessesPerNodeTimesMachinesIsTheTotal) {
  TempDir dir;
  ResolveOptions options = Options({{"HOME", dir.path()}});
  options.config_file = dir.Write("c.yaml", "use_cpu: true\n");
  options.flags = {{"num_machines", "2", "--nnodes 2"},
                   {"main_process_ip", "10.0.0.1", ""},
                   {"main_process_port", "29500", ""}};
  options.nproc_per_node = "3";
  ResolvedConfig resolved = ResolveConfig(options);
  EXPECT_TRUE(resolved.problems.empty()) << FormatDiagnostics(resolved.problems);
  EXPECT_EQ(resolved.config.num_processes, 6);
  EXPECT_EQ(DescribeOrigin(resolved.sources.at("num_processes")),
            "--nproc_per_node 3 x 2 machine(s)");
  EXPECT_EQ(DescribeOrigin(resolved.sources.at("num_machines")), "--nnodes 2");

  options.flags.push_back({"num_processes", "4", ""});
  resolved = ResolveConfig(options);
  EXPECT_EQ(FormatDiagnostics(resolved.problems),
            "--num_processes 4 and --nproc_per_node 3 disagree: accelerate's num_processes is the "
            "total over all machines, torchrun's nproc_per_node is per machine (3 x 2 machine(s) "
            "= 6 processes); give one of them\n");
  options.flags.back().text = "6";  // agreeing spellings are fine
  EXPECT_TRUE(ResolveConfig(options).problems.empty());

  options.flags.pop_back();
  options.nproc_per_node = "gpu";
  EXPECT_EQ(FormatDiagnostics(ResolveConfig(options).problems).substr(0, 80),
            "--nproc_per_node gpu: no GPU here (cuInit: CUDA driver version is insufficient)\n");
  options.nproc_per_node = "cpu";
  EXPECT_EQ(ResolveConfig(options).config.num_processes,
            2 * static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)));
}

TEST(ResolveTest, ALogDirThatCannotBeCreatedIsAConfigError) {
  TempDir dir;
  ResolveOptions options = Options({{"HOME", dir.path()}});
  const std::string file = dir.Write("file", "x");
  options.flags = {{"log_dir", file + "/logs", ""}};
  ResolvedConfig resolved = ResolveConfig(options);
  EXPECT_EQ(FormatDiagnostics(resolved.problems), "--log_dir " + file + "/logs: log_dir " + file +
                                                      "/logs: " + file + " is not a directory\n");
  options.flags = {{"log_dir", dir.path() + "/new/deeper", ""}};
  resolved = ResolveConfig(options);
  EXPECT_TRUE(resolved.problems.empty()) << FormatDiagnostics(resolved.problems);
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/new")) << "the check left a directory";
}

TEST(ResolveTest, SeveralProcessesBecomeDistributedWithoutANoticeThatTheDevicesMayContradict) {
  TempDir dir;
  ResolveOptions options = Options({{"HOME", dir.path()}});
  options.config_file = dir.Write("c.yaml", "num_processes: 2\n");
  const ResolvedConfig resolved = ResolveConfig(options);
  EXPECT_EQ(resolved.config.distributed_type, DistributedType::kMultiGpu);
  EXPECT_TRUE(resolved.notices.empty());  // the plan says once that it runs on CPU here
}

TEST(ResolveTest, CommandLineProblemsAreReportedWithTheRest) {
  TempDir dir;
  ResolveOptions options = Options({{"HOME", dir.path()}});
  options.flag_problems = {{"", 0, 0, "", "--nnodes 1:4: elastic ranges are not supported"}};
  options.flags = {{"machine_rank", "x", ""}};
  const ResolvedConfig resolved = ResolveConfig(options);
  EXPECT_EQ(resolved.problems.size(), 2u);
}

}  // namespace
}  // namespace accel::launcher
