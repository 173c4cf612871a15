#include "launcher/commands/questionnaire.h"

#include <functional>
#include <istream>
#include <ostream>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/defaults.h"
#include "launcher/config/schema.h"

namespace accel::launcher {
namespace {

// Asks one question at a time; an empty answer takes the default; a rejected answer is
// explained and the question asked again.
class Prompter {
 public:
  Prompter(std::istream& in, std::ostream& out) : in_(in), out_(out) {}

  // `accept` returns "" when it takes the answer, else why not. Fails at end of input.
  absl::Status Ask(const std::string& question, const std::string& default_text,
                   const std::function<std::string(const std::string& answer)>& accept) {
    while (true) {
      out_ << question;
      if (!default_text.empty()) out_ << " [" << default_text << "]";
      out_ << ": " << std::flush;
      std::string line;
      if (!std::getline(in_, line)) {
        out_ << "\n";
        return absl::InvalidArgumentError(
            absl::StrCat("input ended before this question was answered: ", question));
      }
      std::string answer(absl::StripAsciiWhitespace(line));
      if (answer.empty()) answer = default_text;
      const std::string why = accept(answer);
      if (why.empty()) return absl::OkStatus();
      out_ << "  " << why << "\n";
    }
  }

  // Asks for one of `options`, by number or by name; stores the index.
  absl::Status Choose(const std::string& question, const std::vector<std::string>& options,
                      int default_index, int* choice) {
    std::string listed;
    for (size_t i = 0; i < options.size(); ++i) {
      absl::StrAppend(&listed, i == 0 ? "" : ", ", "[", i, "] ", options[i]);
    }
    return Ask(absl::StrCat(question, " (", listed, ")"), absl::StrCat(default_index),
               [&](const std::string& answer) -> std::string {
                 for (size_t i = 0; i < options.size(); ++i) {
                   if (answer == absl::StrCat(i) || absl::EqualsIgnoreCase(answer, options[i])) {
                     *choice = static_cast<int>(i);
                     return "";
                   }
                 }
                 return absl::StrCat("please answer 0..", options.size() - 1, " or a name");
               });
  }

  absl::Status Integer(const std::string& question, const std::string& default_text, int min,
                       int max, int* value) {
    return Ask(question, default_text, [&](const std::string& answer) -> std::string {
      int n = 0;
      if (absl::SimpleAtoi(answer, &n) && n >= min && n <= max) {
        *value = n;
        return "";
      }
      return absl::StrCat("please answer an integer from ", min, " to ", max);
    });
  }

  absl::Status YesNo(const std::string& question, bool default_yes, bool* value) {
    return Ask(question, default_yes ? "yes" : "no", [&](const std::string& answer) -> std::string {
      return ParseBool(answer, value) ? "" : "please answer yes or no";
    });
  }

  std::ostream& out() { return out_; }

 private:
  std::istream& in_;
  std::ostream& out_;
};

#define ACCEL_ASK(expr)                        \
  do {                                         \
    absl::Status ask_status_ = (expr);         \
    if (!ask_status_.ok()) return ask_status_; \
  } while (false)

void WarnAboutBf16(const std::vector<GpuInfo>& gpus, std::ostream& out) {
  if (gpus.empty()) {
    out << "  warning: bf16 needs a GPU with compute capability >= 8.0 (Ampere or newer, not a "
           "Tesla T4); no GPU was detected here\n";
  }
  for (const GpuInfo& gpu : gpus) {
    if (!gpu.bf16) {
      out << "  warning: bf16 needs compute capability >= 8.0; GPU " << gpu.index << " ("
          << gpu.name << ") has " << gpu.cc_major << "." << gpu.cc_minor
          << " (a Tesla T4 is 7.5): use fp16 there\n";
    }
  }
}

}  // namespace

absl::StatusOr<Config> RunQuestionnaire(std::istream& in, std::ostream& out,
                                        const std::vector<GpuInfo>& gpus) {
  Prompter ask(in, out);
  Config c;
  const int local_gpus = static_cast<int>(gpus.size());
  int choice = 0;
  ACCEL_ASK(
      ask.Ask("In which compute environment are you running? ([0] This machine, "
              "[1] AWS (Amazon SageMaker))",
              "0", [](const std::string& answer) -> std::string {
                if (answer == "0" || absl::EqualsIgnoreCase(answer, "This machine")) return "";
                if (answer == "1") return "Amazon SageMaker is not supported by accel-launch";
                return "please answer 0";
              }));
  ACCEL_ASK(ask.Choose("Which type of machine are you using?",
                       {"No distributed training", "multi-CPU", "multi-GPU"},
                       local_gpus > 1 ? 2 : 0, &choice));
  c.distributed_type = choice == 0   ? DistributedType::kNo
                       : choice == 1 ? DistributedType::kMultiCpu
                                     : DistributedType::kMultiGpu;
  c.use_cpu = choice == 1 || (choice == 0 && local_gpus == 0);
  if (choice != 0) {
    ACCEL_ASK(
        ask.Integer("How many different machines will you use (use more than 1 for "
                    "multi-node training)?",
                    "1", 1, 1 << 20, &c.num_machines));
  }
  if (c.num_machines > 1) {
    ACCEL_ASK(ask.Integer("What is the rank of this machine?", "0", 0, c.num_machines - 1,
                          &c.machine_rank));
    ACCEL_ASK(ask.Ask("What is the IP address of the machine that will host the main process?", "",
                      [&](const std::string& answer) -> std::string {
                        if (answer.empty() || absl::StrContains(answer, " ")) {
                          return "please give the address of machine 0";
                        }
                        c.main_process_ip = answer;
                        return "";
                      }));
    ACCEL_ASK(ask.Integer("What is the port you will use to communicate with the main process?",
                          absl::StrCat(defaults::kMainProcessPort), 1, 65535,
                          &c.main_process_port));
    ACCEL_ASK(
        ask.YesNo("Are all the machines on the same local network? Answer `no` if nodes "
                  "are on the cloud and/or on different network hosts",
                  true, &c.same_network));
    ACCEL_ASK(ask.Ask("What rendezvous backend will you use? ('static')", "static",
                      [&](const std::string& answer) -> std::string {
                        if (answer != "static" && answer != "c10d") {
                          return "accel-launch runs its own rendezvous: answer static";
                        }
                        c.rdzv_backend = answer;
                        return "";
                      }));
  }
  if (choice != 0) {
    const int per_machine = choice == 2 ? std::max(local_gpus, 1) : 1;
    ACCEL_ASK(ask.Ask(
        "How many processes in total will you use across all machines?",
        absl::StrCat(c.num_machines * per_machine), [&](const std::string& answer) -> std::string {
          int n = 0;
          if (!absl::SimpleAtoi(answer, &n) || n < 1) {
            return "please answer a positive integer";
          }
          if (n % c.num_machines != 0) {
            return absl::StrCat("the total must divide by the ", c.num_machines, " machines");
          }
          c.num_processes = n;
          return "";
        }));
    ask.out() << "  → " << c.processes_per_machine() << " process"
              << (c.processes_per_machine() == 1 ? "" : "es") << " per machine\n";
  }
  if (!c.use_cpu) {
    ACCEL_ASK(
        ask.Ask("What GPU(s) (by id) should be used for training on this machine as a "
                "comma-separated list?",
                "all", [&](const std::string& answer) -> std::string {
                  const absl::Status status = FindKey("gpu_ids")->set(ScalarValue(answer), &c);
                  return status.ok() ? "" : std::string(status.message());
                }));
  }
  ACCEL_ASK(ask.Choose("Do you wish to use mixed precision?", {"no", "fp16", "bf16"}, 0, &choice));
  c.mixed_precision = choice == 0   ? MixedPrecision::kNo
                      : choice == 1 ? MixedPrecision::kFp16
                                    : MixedPrecision::kBf16;
  if (c.mixed_precision == MixedPrecision::kBf16) WarnAboutBf16(gpus, out);
  ACCEL_ASK(ask.Integer("How many gradient accumulation steps?", "1", 1, 1 << 20,
                        &c.gradient_accumulation_steps));
  bool deepspeed = false;
  ACCEL_ASK(ask.YesNo("Do you want to use DeepSpeed?", false, &deepspeed));
  if (deepspeed) {
    out << "  DeepSpeed is not supported by accel-launch: it runs plain data-parallel training "
           "(DDP) with fp16/bf16 and gradient accumulation. Continuing without DeepSpeed.\n";
  }
  return c;
}

}  // namespace accel::launcher
