# Launcher agent unit tests (no sockets, no processes): plan + env contract, output router,
# failure report, hang detection, and the rendezvous glue against FakeRendezvousClient.
if(TARGET accel_launcher_agent_core)
  accel_add_test(NAME agent_plan_test LABEL unit TIMEOUT 60
                 SOURCES ${CMAKE_CURRENT_LIST_DIR}/agent_plan_test.cc
                 LIBS accel_launcher_agent_core)
  accel_add_test(NAME agent_output_test LABEL unit TIMEOUT 60
                 SOURCES ${CMAKE_CURRENT_LIST_DIR}/agent_output_test.cc
                 LIBS accel_launcher_agent_core)
endif()
if(TARGET accel_launcher_agent)
  accel_add_test(NAME agent_rendezvous_test LABEL unit TIMEOUT 60
                 SOURCES ${CMAKE_CURRENT_LIST_DIR}/agent_rendezvous_test.cc
                 LIBS accel_launcher_agent)
endif()
