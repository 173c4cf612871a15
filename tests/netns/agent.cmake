# Launcher agent multi-machine tests: two `ip netns` machines, one accel-launch each (root only;
# skipped with the reason otherwise).
if(TARGET accel-launch)
  accel_add_test(NAME agent_netns_test LABEL netns TIMEOUT 180
                 SOURCES ${CMAKE_CURRENT_LIST_DIR}/agent_netns_test.cc
                 LIBS accel_launcher_agent_core)
  target_compile_definitions(agent_netns_test PRIVATE
                             FAKE_WORKER_PATH="$<TARGET_FILE:fake_worker>"
                             ACCEL_LAUNCH_PATH="$<TARGET_FILE:accel-launch>")
  add_dependencies(agent_netns_test fake_worker accel-launch)
endif()
