# The real accel-launch binary: `env`, `config`, `config validate` and a refused launch.
if(TARGET accel-launch AND TARGET accel_launcher_config)
  accel_add_test(NAME cli_binary_test LABEL mp SOURCES ${CMAKE_CURRENT_LIST_DIR}/cli_binary_test.cc
                 LIBS accel_launcher_config TIMEOUT 120)
  target_compile_definitions(cli_binary_test PRIVATE
                             ACCEL_LAUNCH_BIN="$<TARGET_FILE:accel-launch>")
  add_dependencies(cli_binary_test accel-launch)
endif()
