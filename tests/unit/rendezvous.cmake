# Rendezvous unit tests: no sockets; store semantics, join checks and the coordinator.
accel_add_test(NAME rendezvous_store_test LABEL unit TIMEOUT 60
               SOURCES ${CMAKE_CURRENT_LIST_DIR}/rendezvous_store_test.cc
               LIBS accel::rendezvous)
accel_add_test(NAME rendezvous_join_test LABEL unit TIMEOUT 60
               SOURCES ${CMAKE_CURRENT_LIST_DIR}/rendezvous_join_test.cc
                       ${CMAKE_CURRENT_LIST_DIR}/rendezvous_coordinator_test.cc
               LIBS accel::rendezvous)
