# accel_launcher_agent_core: plan, subprocess, supervisor, signals, output, failure report and
# hang detection; no gRPC. The tests link it directly.
add_library(accel_launcher_agent_core STATIC
  agent_util.cc
  failure_report.cc
  hang.cc
  output.cc
  plan.cc
  signals.cc
  subprocess.cc
  supervisor.cc
)
target_link_libraries(accel_launcher_agent_core PUBLIC accel_launcher_config_types accel_common
                      absl::status absl::statusor absl::strings absl::str_format absl::time
                      absl::synchronization Threads::Threads)
accel_warnings(accel_launcher_agent_core)

# accel_launcher_agent: RunAgent (agent.h) and its rendezvous glue, over the core. Needs the
# rendezvous library (server + gRPC client); accel-launch links it.
if(TARGET accel_rendezvous)
  add_library(accel_launcher_agent STATIC agent.cc agent_rendezvous.cc)
  target_link_libraries(accel_launcher_agent PUBLIC accel_launcher_agent_core accel_rendezvous)
  accel_warnings(accel_launcher_agent)
endif()
