// torchrun's and accelerate launch's own spellings on the command line: what each one sets,
// conflicts that name both spellings, the elastic-range error, -m/--no_python, --tee's values.
#include "launcher/cli/compat_flags.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launcher/cli/flags.h"

namespace accel::launcher {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// Parses `args` as `accel-launch launch` does.
LaunchArgs Parse(const std::vector<std::string>& args, ParseOutcome* outcome = nullptr) {
  FlagSet set{"accel-launch launch", "Launch."};
  set.compat = true;
  LaunchArgs out;
  const ParseOutcome result = ParseLaunchArgs(set, args, &out);
  if (outcome != nullptr) *outcome = result;
  EXPECT_TRUE(outcome != nullptr || result.kind == ParseOutcome::Kind::kOk) << result.text;
  return out;
}

// Returns "key=text (spelling)" for every config value parsed.
std::vector<std::string> Values(const LaunchArgs& args) {
  std::vector<std::string> out;
  for (const FlagValue& f : args.flags) {
    out.push_back(f.key + "=" + f.text + (f.spelling.empty() ? "" : " (" + f.spelling + ")"));
  }
  return out;
}

std::string Problems(const LaunchArgs& args) { return FormatDiagnostics(args.problems); }

TEST(CompatFlagsTest, ATorchrunCommandLineRunsUnchanged) {
  const LaunchArgs args =
      Parse({"--nnodes=2", "--nproc-per-node", "4", "--node_rank", "1", "--master_addr", "10.0.0.1",
             "--master-port=29501", "--max_restarts", "2", "train.py", "--lr", "1"});
  EXPECT_EQ(Problems(args), "");
  EXPECT_TRUE(args.torchrun_style);
  EXPECT_EQ(args.nproc_per_node, "4");
  EXPECT_THAT(Values(args), ElementsAre("max_restarts=2", "num_machines=2 (--nnodes 2)",
                                        "machine_rank=1 (--node_rank 1)",
                                        "main_process_ip=10.0.0.1 (--master_addr 10.0.0.1)",
                                        "main_process_port=29501 (--master_port 29501)"));
  EXPECT_THAT(args.program, ElementsAre("train.py", "--lr", "1"));
}

TEST(CompatFlagsTest, RdzvEndpointAndIdAndStandalone) {
  LaunchArgs args =
      Parse({"--rdzv_backend", "c10d", "--rdzv_endpoint", "[::1]:29400", "--rdzv-id", "job7", "p"});
  EXPECT_EQ(Problems(args), "");
  EXPECT_THAT(Values(args),
              ElementsAre("rdzv_backend=c10d", "main_process_ip=::1 (--rdzv_endpoint [::1]:29400)",
                          "main_process_port=29400 (--rdzv_endpoint [::1]:29400)",
                          "run_id=job7 (--rdzv_id job7)"));
  args = Parse({"--standalone", "--nproc_per_node", "2", "--rdzv_endpoint", "h:1", "p"});
  EXPECT_EQ(Problems(args), "");
  EXPECT_THAT(Values(args),
              ElementsAre("num_machines=1 (--standalone)", "main_process_port=0 (--standalone)"));
  EXPECT_THAT(args.notices, ElementsAre(HasSubstr("--rdzv_endpoint h:1 is ignored with "
                                                  "--standalone")));
  args = Parse({"--rdzv_endpoint", "nohost", "p"});
  EXPECT_THAT(Problems(args), HasSubstr("--rdzv_endpoint nohost: expected HOST:PORT"));
}

TEST(CompatFlagsTest, AnElasticRangeSetsMinAndMaxMachines) {
  LaunchArgs args = Parse({"--nnodes", "1:4", "--nproc_per_node", "2", "train.py"});
  EXPECT_EQ(Problems(args), "");
  EXPECT_THAT(Values(args), testing::IsSupersetOf({"num_machines=4 (--nnodes 1:4)",
                                                   "min_machines=1 (--nnodes 1:4)"}));
  EXPECT_THAT(Values(Parse({"--nnodes", "2:2", "p"})),
              testing::Not(testing::Contains(testing::HasSubstr("min_machines"))));
  EXPECT_EQ(Problems(Parse({"--nnodes", "2:2", "p"})), "");
  EXPECT_THAT(Problems(Parse({"--nnodes", "3:2", "p"})),
              HasSubstr("--nnodes 3:2: expected a number of machines >= 1, or MIN:MAX"));
  EXPECT_THAT(Values(Parse({"--rdzv_conf", "last_call_timeout=0.5", "p"})),
              testing::Contains("rdzv_last_call=0.5 (--rdzv_conf last_call_timeout=0.5)"));
  EXPECT_THAT(Problems(Parse({"--nnodes", "two", "p"})),
              HasSubstr("--nnodes two: expected a number of machines >= 1"));
  EXPECT_THAT(Problems(Parse({"--standalone", "--nnodes", "2", "p"})),
              HasSubstr("--standalone and --nnodes 2 disagree"));
}

TEST(CompatFlagsTest, SpellingsThatDisagreeNameBoth) {
  LaunchArgs args =
      Parse({"--main_process_port", "29500", "--master_port", "29501", "--num_machines", "1",
             "--nnodes", "2", "--machine_rank", "0", "--node_rank", "0", "p"});
  EXPECT_EQ(Problems(args),
            "--num_machines 1 and --nnodes 2 disagree (both set num_machines); give one of them\n"
            "--main_process_port 29500 and --master_port 29501 disagree (both set "
            "main_process_port); give one of them\n");
  // The same value in both spellings is fine.
  EXPECT_EQ(Problems(Parse({"--main_process_port", "29500", "--master-port", "29500", "p"})), "");
  EXPECT_THAT(Problems(Parse({"--run_id", "a", "--rdzv_id", "b", "p"})),
              HasSubstr("--run_id a and --rdzv_id b disagree"));
}

TEST(CompatFlagsTest, PythonProgramOptions) {
  LaunchArgs args = Parse({"-m", "pkg.train", "--x"});
  EXPECT_TRUE(args.module);
  EXPECT_FALSE(args.torchrun_style);  // both launchers have -m
  EXPECT_THAT(args.program, ElementsAre("pkg.train", "--x"));
  args = Parse({"--no_python", "--quiet", "./tool.py"});
  EXPECT_TRUE(args.no_python);
  args = Parse({"--run-path", "/abs/job.py"});
  EXPECT_TRUE(args.run_path);
  EXPECT_TRUE(args.torchrun_style);
  EXPECT_THAT(Problems(Parse({"-m", "--no_python", "pkg"})),
              HasSubstr("-m/--module and --no_python cannot be used together"));
}

TEST(CompatFlagsTest, AccelerateLaunchOptionsBecomeKeys) {
  LaunchArgs args =
      Parse({"--num_cpu_threads_per_process", "4", "--dynamo_backend", "inductor", "--dynamo_mode",
             "max-autotune", "--dynamo_use_fullgraph", "--enable_cpu_affinity",
             "--main_training_function", "run", "--same_network", "--rdzv_conf",
             "join_timeout=60,read_timeout=5", "-q", "p"});
  EXPECT_EQ(Problems(args), "");
  EXPECT_THAT(Values(args),
              ElementsAre("dynamo_backend=inductor", "dynamo_mode=max-autotune",
                          "dynamo_use_fullgraph=true", "enable_cpu_affinity=true",
                          "main_training_function=run", "num_cpu_threads_per_process=4",
                          "same_network=true", "rdzv_timeout=60 (--rdzv_conf join_timeout=60)"));
  EXPECT_THAT(args.notices, ElementsAre(HasSubstr("--rdzv_conf read_timeout=5 has no effect")));
  EXPECT_THAT(Problems(Parse({"--rdzv_conf", "oops", "p"})),
              HasSubstr("--rdzv_conf oops: expected key=value pairs"));
  EXPECT_THAT(
      Problems(Parse({"--tpu", "--vm", "v1", "p"})),
      HasSubstr("--tpu, --vm: TPUs are not supported by accel-launch (GPUs and CPUs only)"));
  EXPECT_THAT(Values(Parse({"--use_deepspeed", "--zero_stage", "3", "p"})),
              ElementsAre("distributed_type=DEEPSPEED (--use_deepspeed)",
                          "deepspeed_config=zero_stage=3 (--zero_stage 3)"));
}

TEST(CompatFlagsTest, TeeAndRedirectsTakeTorchrunsValues) {
  LaunchArgs args = Parse({"--log_dir", "/tmp/l", "--tee", "3", "train.py", "-t", "3"});
  EXPECT_EQ(Problems(args), "");
  EXPECT_THAT(Values(args), ElementsAre("log_dir=/tmp/l", "tee=true (--tee 3)"));
  EXPECT_THAT(args.program, ElementsAre("train.py", "-t", "3"));  // the program's own -t
  args = Parse({"-r", "3", "--log_dir", "/tmp/l", "p"});
  EXPECT_THAT(Values(args), ElementsAre("log_dir=/tmp/l", "tee=false (--redirects 3)"));
  EXPECT_TRUE(args.torchrun_style);
  args = Parse({"-t", "0:1,1:2", "p"});
  EXPECT_THAT(Values(args), ElementsAre("tee=true (--tee 0:1,1:2)"));
  EXPECT_THAT(args.notices, ElementsAre(HasSubstr("is applied as --tee 3")));
  args = Parse({"--tee", "p"});  // accel-launch's own switch still works
  EXPECT_THAT(Values(args), ElementsAre("tee=true"));
  EXPECT_THAT(args.program, ElementsAre("p"));
  EXPECT_THAT(Problems(Parse({"--redirects", "7", "p"})), HasSubstr("--redirects 7: expected"));
}

TEST(CompatFlagsTest, ATorchrunCommandLineRunsOneProcessPerMachineUnlessToldOtherwise) {
  EXPECT_EQ(Parse({"--standalone", "script.py"}).nproc_per_node, "1");
  EXPECT_EQ(Parse({"--standalone", "--num_processes", "4", "script.py"}).nproc_per_node, "");
  EXPECT_EQ(Parse({"--num_processes", "4", "script.py"}).nproc_per_node, "");  // accelerate's
}

TEST(CompatFlagsTest, TorchrunsNumaBindingPinsAndItsLoggingOptionsDoNothing) {
  const LaunchArgs args = Parse(
      {"--numa-binding", "node", "--signals_to_handle", "SIGUSR1", "--nproc_per_node", "2", "p"});
  EXPECT_EQ(Problems(args), "");
  EXPECT_THAT(Values(args), ElementsAre("enable_cpu_affinity=true (--numa_binding node)"));
  EXPECT_THAT(args.notices, ElementsAre(HasSubstr("applied as enable_cpu_affinity"),
                                        HasSubstr("--signals_to_handle SIGUSR1 has no effect")));
}

TEST(CompatFlagsTest, StdSpecs) {
  for (const char* spec : {"0", "3", "0:1", "0:1,1:3"}) EXPECT_TRUE(IsStdSpec(spec)) << spec;
  for (const char* spec : {"", "4", "a", "0:4", "0:1,"}) EXPECT_FALSE(IsStdSpec(spec)) << spec;
}

TEST(CompatFlagsTest, AccelerateStyleCommandLinesAreNotTorchrunStyle) {
  const LaunchArgs args = Parse({"--num_processes", "2", "--cpu", "--mixed_precision", "no", "p"});
  EXPECT_FALSE(args.torchrun_style);
  EXPECT_THAT(args.notices, IsEmpty());
}

}  // namespace
}  // namespace accel::launcher
