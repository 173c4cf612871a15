# accel_launcher_config: config schema, loader, validation, precedence, CLI and Main() dispatch,
# env report, questionnaire, Slurm/Open MPI detection. No LibTorch: its version comes from its
# header at configure time (ACCEL_LIBTORCH_VERSION), read here without linking anything.
add_library(accel_launcher_config STATIC
  cli.cc
  cli_flags.cc
  cli_main.cc
  config_loader.cc
  config_netif.cc
  config_resolve.cc
  config_schema.cc
  config_source.cc
  config_validate.cc
  config_values.cc
  config_writer.cc
  config_yaml.cc
  diagnostics.cc
  env_report.cc
  questionnaire.cc
  scheduler_detect.cc
)
target_link_libraries(accel_launcher_config PUBLIC accel_launcher_config_types accel_common yaml-cpp CLI11::CLI11 gRPC::grpc++
                      absl::status absl::statusor absl::strings)
accel_warnings(accel_launcher_config)

# LibTorch's version for `accel-launch env`, from torch/version.h (Debian's libtorch-dev, or a
# LibTorch on CMAKE_PREFIX_PATH).
find_file(ACCEL_TORCH_VERSION_HEADER torch/version.h
          PATHS /usr/include/torch/csrc/api/include ${CMAKE_PREFIX_PATH}
          PATH_SUFFIXES include include/torch/csrc/api/include)
if(ACCEL_TORCH_VERSION_HEADER)
  file(STRINGS ${ACCEL_TORCH_VERSION_HEADER} _accel_torch_version_lines
       REGEX "#define TORCH_VERSION_(MAJOR|MINOR|PATCH) ")
  set(_accel_torch_version "")
  foreach(_part MAJOR MINOR PATCH)
    foreach(_line ${_accel_torch_version_lines})
      if(_line MATCHES "TORCH_VERSION_${_part} ([0-9]+)")
        list(APPEND _accel_torch_version ${CMAKE_MATCH_1})
      endif()
    endforeach()
  endforeach()
  list(JOIN _accel_torch_version "." _accel_torch_version)
  if(_accel_torch_version)
    set_property(SOURCE env_report.cc APPEND PROPERTY COMPILE_DEFINITIONS
                 ACCEL_LIBTORCH_VERSION="${_accel_torch_version}"
                 ACCEL_LIBTORCH_HEADER="${ACCEL_TORCH_VERSION_HEADER}")
  endif()
endif()
