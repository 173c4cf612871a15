#include "launcher/cli/accelerate_flags.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "launcher/config/accelerate_args.h"

namespace accel::launcher {
namespace {

Diagnostic Problem(std::string message) { return Diagnostic{"", 0, 0, "", std::move(message)}; }

std::string Spellings(const std::string& name) {
  std::string dashed = name;
  for (char& c : dashed) c = c == '_' ? '-' : c;
  return dashed == name ? absl::StrCat("--", name) : absl::StrCat("--", name, ",--", dashed);
}

// Refused options, with what to write instead. TPU options share one message.
struct Refused {
  const char* name;
  bool takes_value;
  const char* instead;
};

constexpr char kTpu[] =
    "TPUs are not supported by accel-launch (GPUs and CPUs only): drop these options to launch on "
    "GPUs or CPUs, or run `accelerate launch` on the TPU VM instead";

const Refused kRefused[] = {
    {"tpu", false, kTpu},
    {"tpu_cluster", false, kTpu},
    {"no_tpu_cluster", false, kTpu},
    {"vm", true, kTpu},
    {"env", true, kTpu},
    {"mps", false,
     "Apple MPS is not supported by accel-launch: drop it to run on the CPU, or use `accelerate "
     "launch` on the Mac instead"},
    {"use_mps_device", false,
     "Apple MPS is not supported by accel-launch: drop it to run on the CPU, or use `accelerate "
     "launch` on the Mac instead"},
    {"ipex", false,
     "IPEX is not supported by accel-launch: drop it (plain PyTorch on the CPU), or use "
     "`accelerate launch` instead"},
    {"use_xpu", false,
     "Intel XPUs are not supported by accel-launch: drop it to run on GPUs or CPUs, or use "
     "`accelerate launch` instead"},
    {"aws_access_key_id", true,
     "SageMaker is not supported by accel-launch: run accel-launch on the machines themselves "
     "instead (one per machine)"},
    {"aws_secret_access_key", true,
     "SageMaker is not supported by accel-launch: run accel-launch on the machines themselves "
     "instead (one per machine)"},
    {"mpirun_hostfile", true,
     "accel-launch does not start mpirun itself: run `mpirun --hostfile FILE -n <machines> "
     "--npernode 1 accel-launch ... PROGRAM` instead (one accel-launch per machine; Open MPI is "
     "detected)"},
    {"mpirun_ccl", true,
     "only accelerate's own mpirun launch reads it: set CCL_WORKER_COUNT in the environment "
     "instead"},
};

}  // namespace

void AddAccelerateOptions(CLI::App* app, const std::string& group, AccelerateFlagArgs* args,
                          std::vector<std::string>* names,
                          std::vector<std::string>* value_options) {
  auto add_value = [&](const std::string& name, const std::string& help) {
    const std::string spellings = Spellings(name);
    args->values[name] = app->add_option(spellings, help)
                             ->type_name("VALUE")
                             ->expected(1)
                             ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
                             ->group(group);
    names->push_back(name);
    for (const std::string& word :
         {absl::StrCat("--", name), spellings.substr(spellings.rfind(',') + 1)}) {
      value_options->push_back(word);
    }
  };
  auto add_switch = [&](const std::string& name, const std::string& help) {
    app->add_flag(Spellings(name), args->switches[name], help)->group(group);
    names->push_back(name);
  };
  for (const AccelerateOption& option : AccelerateOptions()) {
    const std::string help = absl::StrCat("accelerate's; ", option.section, " for Python scripts");
    if (option.type == PyType::kSwitch) {
      add_switch(std::string(option.name), help);
    } else {
      add_value(std::string(option.name), help);
    }
  }
  for (const char* name : {"use_fsdp", "use_deepspeed", "use_megatron_lm"}) {
    add_switch(name, "accelerate's: distributed_type FSDP / DEEPSPEED / MEGATRON_LM (Python)");
  }
  add_switch("fp16", "older accelerate's: --mixed_precision fp16");
  for (const Refused& refused : kRefused) {
    if (refused.takes_value) {
      add_value(refused.name, "accelerate's; not supported");
    } else {
      add_switch(refused.name, "accelerate's; not supported");
    }
  }
}

void TranslateAccelerate(const AccelerateFlagArgs& args, std::vector<FlagValue>* flags,
                         std::vector<Diagnostic>* problems) {
  auto given = [&](const std::string& name) {
    auto s = args.switches.find(name);
    auto v = args.values.find(name);
    return (s != args.switches.end() && s->second) ||
           (v != args.values.end() && v->second->count() > 0);
  };
  const std::pair<const char*, const char*> plugins[] = {
      {"use_fsdp", "FSDP"}, {"use_deepspeed", "DEEPSPEED"}, {"use_megatron_lm", "MEGATRON_LM"}};
  for (const auto& [name, plugin] : plugins) {
    if (given(name)) flags->push_back({"distributed_type", plugin, absl::StrCat("--", name)});
  }
  if (given("fp16")) flags->push_back({"mixed_precision", "fp16", "--fp16"});
  for (const AccelerateOption& option : AccelerateOptions()) {
    const std::string name(option.name);
    if (option.type == PyType::kSwitch) {
      if (given(name)) {
        flags->push_back({std::string(option.section), name + "=True", absl::StrCat("--", name)});
      }
      continue;
    }
    auto it = args.values.find(name);
    if (it == args.values.end() || it->second->count() == 0) continue;
    for (const std::string& text : it->second->results()) {
      flags->push_back({std::string(option.section), absl::StrCat(name, "=", text),
                        absl::StrCat("--", name, " ", text)});
    }
  }
  std::map<std::string, std::vector<std::string>> by_reason;  // one problem per reason
  std::vector<std::string> order;
  for (const Refused& refused : kRefused) {
    if (!given(refused.name)) continue;
    auto [it, inserted] = by_reason.try_emplace(refused.instead);
    if (inserted) order.push_back(refused.instead);
    it->second.push_back(absl::StrCat("--", refused.name));
  }
  for (const std::string& reason : order) {
    problems->push_back(
        Problem(absl::StrCat(absl::StrJoin(by_reason[reason], ", "), ": ", reason)));
  }
}

}  // namespace accel::launcher
