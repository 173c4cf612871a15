# Rendezvous mp tests: a real gRPC server on 127.0.0.1 (port 0) and agents in separate processes
# (tests/testing/rdzv_agent.cc).
add_executable(rdzv_agent ${PROJECT_SOURCE_DIR}/tests/testing/rdzv_agent.cc)
target_link_libraries(rdzv_agent PRIVATE accel::rendezvous)
accel_warnings(rdzv_agent)

accel_add_test(NAME rendezvous_mp_test LABEL mp TIMEOUT 240
               SOURCES ${CMAKE_CURRENT_LIST_DIR}/rendezvous_mp_test.cc
               LIBS accel::rendezvous)
target_compile_definitions(rendezvous_mp_test PRIVATE
                           ACCEL_RDZV_AGENT="$<TARGET_FILE:rdzv_agent>")
add_dependencies(rendezvous_mp_test rdzv_agent)

accel_add_test(NAME rendezvous_grpc_test LABEL mp TIMEOUT 120
               SOURCES ${CMAKE_CURRENT_LIST_DIR}/rendezvous_grpc_test.cc
               LIBS accel::rendezvous)
