# accel_launcher_config: config schema, loader, validation, precedence, CLI and Main() dispatch,
# env report, questionnaire, Slurm/Open MPI detection. No LibTorch.
set(ACCEL_LAUNCHER_CONFIG_SOURCES
  config.cc
  config_yaml.cc
  config_schema.cc
  diagnostics.cc
  config_source.cc
  config_loader.cc
  config_validate.cc
  config_resolve.cc
  scheduler_detect.cc
)
add_library(accel_launcher_config STATIC ${ACCEL_LAUNCHER_CONFIG_SOURCES})
target_link_libraries(accel_launcher_config PUBLIC accel_common yaml-cpp CLI11::CLI11
                      absl::status absl::statusor absl::strings)
accel_warnings(accel_launcher_config)
