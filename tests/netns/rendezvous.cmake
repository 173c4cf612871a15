# Rendezvous netns test: 3 machines in 3 network namespaces on a bridge in a 4th, all created and
# removed by the test (root only; skipped with the reason otherwise). Uses rdzv_agent from
# tests/mp/rendezvous.cmake.
accel_add_test(NAME rendezvous_netns_test LABEL netns TIMEOUT 180
               SOURCES ${CMAKE_CURRENT_LIST_DIR}/rendezvous_netns_test.cc
               LIBS absl::strings absl::time)
target_compile_definitions(rendezvous_netns_test PRIVATE
                           ACCEL_RDZV_AGENT="$<TARGET_FILE:rdzv_agent>")
add_dependencies(rendezvous_netns_test rdzv_agent)
