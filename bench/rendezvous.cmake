# rendezvous_bench: N simulated agents joining one server on loopback; KV ops/s.
add_executable(rendezvous_bench ${CMAKE_CURRENT_LIST_DIR}/rendezvous_bench.cc)
target_link_libraries(rendezvous_bench PRIVATE accel_rendezvous_server)
accel_warnings(rendezvous_bench)
