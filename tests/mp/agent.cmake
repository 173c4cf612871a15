# Launcher agent multi-process tests: real workers (fake_worker), real signals, real pipes.
if(TARGET accel_launcher_agent_core)
  add_executable(fake_worker ${PROJECT_SOURCE_DIR}/tests/testing/fake_worker.cc)
  accel_warnings(fake_worker)

  accel_add_test(NAME agent_supervisor_test LABEL mp TIMEOUT 120
                 SOURCES ${CMAKE_CURRENT_LIST_DIR}/agent_supervisor_test.cc
                 LIBS accel_launcher_agent_core)
  target_compile_definitions(agent_supervisor_test PRIVATE
                             FAKE_WORKER_PATH="$<TARGET_FILE:fake_worker>")
  add_dependencies(agent_supervisor_test fake_worker)
endif()

if(TARGET accel-launch)
  accel_add_test(NAME agent_launch_test LABEL mp TIMEOUT 300
                 SOURCES ${CMAKE_CURRENT_LIST_DIR}/agent_launch_test.cc
                 LIBS accel_launcher_agent_core)
  target_compile_definitions(agent_launch_test PRIVATE
                             FAKE_WORKER_PATH="$<TARGET_FILE:fake_worker>"
                             ACCEL_LAUNCH_PATH="$<TARGET_FILE:accel-launch>"
                             ACCEL_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  add_dependencies(agent_launch_test fake_worker accel-launch)
endif()
