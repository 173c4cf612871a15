#include "launcher/config/validate.h"

#include "absl/strings/str_cat.h"
#include "common/defaults.h"
#include "launcher/config/accelerate_args.h"

namespace accel::launcher {

std::vector<Diagnostic> ValidateConfig(const Config& c, const SourceMap& sources) {
  std::vector<Diagnostic> problems;
  auto problem = [&](const std::string& key, std::string message) {
    problems.push_back(DiagnosticFor(sources, key, std::move(message)));
  };
  // A rejected value is already reported: checks that involve it would only add noise.
  auto ok = [&](const char* key) { return Accepted(sources, key); };
  // Upper bounds first: nothing downstream sizes anything by an unchecked count.
  const bool machines_ok =
      c.num_machines >= 1 && c.num_machines <= defaults::kMaxMachines && ok("num_machines");
  const bool processes_ok =
      c.num_processes >= 1 && c.num_processes <= defaults::kMaxProcesses && ok("num_processes");
  if (c.num_machines < 1) {
    problem("num_machines", absl::StrCat("num_machines must be at least 1, got ", c.num_machines));
  } else if (c.num_machines > defaults::kMaxMachines) {
    problem("num_machines", absl::StrCat("num_machines ", c.num_machines,
                                         " is more than the limit of ", defaults::kMaxMachines));
  }
  if (c.num_processes < 1) {
    problem("num_processes",
            absl::StrCat("num_processes must be at least 1, got ", c.num_processes));
  } else if (c.num_processes > defaults::kMaxProcesses) {
    problem("num_processes",
            absl::StrCat("num_processes ", c.num_processes, " is more than the limit of ",
                         defaults::kMaxProcesses, " (the total over all machines)"));
  } else if (machines_ok && c.num_processes / c.num_machines > defaults::kMaxProcessesPerMachine) {
    problem("num_processes",
            absl::StrCat("num_processes ", c.num_processes, " over ", c.num_machines,
                         " machine(s) is ", c.num_processes / c.num_machines,
                         " processes per machine, more than the limit of ",
                         defaults::kMaxProcessesPerMachine));
  }
  if (c.machine_rank < 0) {
    problem("machine_rank", absl::StrCat("machine_rank must be at least 0, got ", c.machine_rank));
  } else if (machines_ok && ok("machine_rank") && c.machine_rank >= c.num_machines) {
    problem("machine_rank", absl::StrCat("machine_rank ", c.machine_rank,
                                         " is out of range: it must be less than num_machines (",
                                         c.num_machines, ")"));
  }
  if (c.main_process_port < 0 || c.main_process_port > 65535) {
    problem("main_process_port",
            absl::StrCat("main_process_port ", c.main_process_port, " is out of range 0..65535"));
  }
  if (machines_ok && processes_ok && c.num_processes % c.num_machines != 0) {
    problem("num_processes",
            absl::StrCat("num_processes ", c.num_processes, " is not divisible by num_machines ",
                         c.num_machines,
                         " (num_processes is the total over all machines; each machine runs the "
                         "same number)"));
  }
  if (machines_ok && c.num_machines > 1 && c.main_process_ip.empty() && ok("main_process_ip")) {
    problem("num_machines",
            absl::StrCat("main_process_ip is required when num_machines is ", c.num_machines,
                         " (the address of machine 0; set main_process_ip or --main_process_ip)"));
  }
  if (machines_ok && c.num_machines > 1 && c.main_process_port == 0 && ok("main_process_port")) {
    // Point at whatever made this a multi-machine job when the port is just the default.
    problem(sources.count("main_process_port") != 0 ? "main_process_port" : "num_machines",
            absl::StrCat("main_process_port 0 (a free port) only works on one machine; choose a "
                         "port that every machine can reach, e.g. ",
                         defaults::kMainProcessPort));
  }
  if (c.gradient_accumulation_steps < 1) {
    problem("gradient_accumulation_steps",
            absl::StrCat("gradient_accumulation_steps must be at least 1, got ",
                         c.gradient_accumulation_steps));
  }
  if (c.max_restarts < 0) {
    problem("max_restarts", absl::StrCat("max_restarts must be at least 0, got ", c.max_restarts));
  }
  if (c.rdzv_timeout_s <= 0) problem("rdzv_timeout", "rdzv_timeout must be more than 0 seconds");
  if (c.min_machines < 0 || (machines_ok && c.min_machines > c.num_machines)) {
    problem("min_machines", absl::StrCat("min_machines must be 0 (= num_machines) or 1..",
                                         c.num_machines, " (num_machines), got ", c.min_machines));
  }
  if (c.rdzv_last_call_s < 0) {
    problem("rdzv_last_call", "rdzv_last_call must be at least 0 seconds");
  }
  if (c.monitor_interval_s <= 0) {
    problem("monitor_interval", "monitor_interval must be more than 0 seconds");
  }
  if (c.status_interval_s > 0 && c.straggler_window_s < 2 * c.status_interval_s) {
    problem("straggler_window",
            absl::StrCat("straggler_window must be at least twice status_interval (",
                         c.status_interval_s, " s), got ", c.straggler_window_s, " s"));
  }
  for (int rank : c.ranks_filter) {
    if (processes_ok && rank >= c.num_processes) {
      problem("ranks_filter", absl::StrCat("ranks_filter rank ", rank, " is out of range 0..",
                                           c.num_processes - 1));
      break;
    }
  }
  if (c.num_cpu_threads_per_process < 0) {
    problem("num_cpu_threads_per_process",
            absl::StrCat("num_cpu_threads_per_process must be at least 0 (0 = automatic), got ",
                         c.num_cpu_threads_per_process));
  }
  for (int local : c.local_ranks_filter) {
    if (machines_ok && processes_ok && c.num_processes % c.num_machines == 0 &&
        local >= c.processes_per_machine()) {
      problem("local_ranks_filter",
              absl::StrCat("local_ranks_filter local rank ", local, " is out of range 0..",
                           c.processes_per_machine() - 1));
      break;
    }
  }
  if (c.python.empty()) problem("python", "python must name an interpreter, e.g. python3");
  if (c.tls_cert_file.empty() != c.tls_key_file.empty()) {
    problem(c.tls_cert_file.empty() ? "tls_key_file" : "tls_cert_file",
            "tls_cert_file and tls_key_file must be set together");
  }
  for (auto& [key, message] : AccelerateProblems(c)) problem(key, std::move(message));
  return problems;
}

}  // namespace accel::launcher
