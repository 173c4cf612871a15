if(TARGET train_bin AND TARGET accel-launch)
  accel_add_test(NAME train_e2e_test LABEL mp TIMEOUT 600
                 SOURCES ${CMAKE_CURRENT_LIST_DIR}/train_test.cc LIBS accel_launcher_agent_core)
  target_compile_definitions(train_e2e_test PRIVATE
                             ACCEL_LAUNCH_PATH="$<TARGET_FILE:accel-launch>"
                             TRAIN_BIN_PATH="$<TARGET_FILE:train_bin>"
                             ACCEL_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  add_dependencies(train_e2e_test train_bin accel-launch)
endif()
