# libaccel multi-process tests: Gloo over 127.0.0.1 with 2 and 4 ranks (file store), and MPI under
# mpirun. One driver binary (no LibTorch) spawns tests/testing/worker_mp_rank; each scenario is
# its own CTest entry (gtest filter) with its own timeout.
if(TARGET accel_worker AND ACCEL_HAVE_GLOO)
  add_executable(worker_mp_rank ${PROJECT_SOURCE_DIR}/tests/testing/worker_mp_rank.cc)
  target_link_libraries(worker_mp_rank PRIVATE accel_worker)
  accel_warnings(worker_mp_rank)

  add_executable(worker_mp_test ${CMAKE_CURRENT_LIST_DIR}/worker_mp_test.cc)
  target_link_libraries(worker_mp_test PRIVATE GTest::gtest GTest::gtest_main Threads::Threads)
  target_compile_definitions(worker_mp_test PRIVATE
    ACCEL_WORKER_MP_RANK="$<TARGET_FILE:worker_mp_rank>")
  find_program(ACCEL_MPIRUN mpirun)
  if(ACCEL_HAVE_MPI AND ACCEL_MPIRUN)
    target_compile_definitions(worker_mp_test PRIVATE ACCEL_MPIRUN="${ACCEL_MPIRUN}")
  endif()
  if(TARGET accel_rendezvous)  # full build: also test the gRPC store bridge against the server
    target_link_libraries(worker_mp_test PRIVATE accel_rendezvous)
    target_include_directories(worker_mp_test PRIVATE ${PROJECT_SOURCE_DIR})
    target_compile_definitions(worker_mp_test PRIVATE ACCEL_WORKER_MP_GRPC=1)
  endif()
  add_dependencies(worker_mp_test worker_mp_rank)
  accel_warnings(worker_mp_test)

  foreach(group IN ITEMS Collectives:120 Equivalence:400 InfOnOneRank:120 SaveKillLoad:200
                         EquivalenceUnderMpirun:200 Deadline:120 Grpc:200)
    string(REPLACE ":" ";" parts ${group})
    list(GET parts 0 filter)
    list(GET parts 1 timeout)
    if(filter STREQUAL "EquivalenceUnderMpirun" AND NOT (ACCEL_HAVE_MPI AND ACCEL_MPIRUN))
      continue()
    endif()
    if(filter STREQUAL "Grpc" AND NOT TARGET accel_rendezvous)
      continue()
    endif()
    if(filter STREQUAL "Equivalence")
      set(pattern "WorkerMpTest.EquivalenceWorld*")
    elseif(filter STREQUAL "Grpc")
      set(pattern "WorkerMpGrpcTest.*")
    else()
      set(pattern "WorkerMpTest.${filter}*")
    endif()
    string(TOLOWER ${filter} lower)
    add_test(NAME worker_mp_${lower} COMMAND worker_mp_test --gtest_filter=${pattern})
    set_tests_properties(worker_mp_${lower} PROPERTIES LABELS mp TIMEOUT ${timeout})
  endforeach()
endif()

# The installed package: a user's project builds against `cmake --install --component worker`
# with find_package(AccelLaunch) and with pkg-config, and runs. Slow: two LibTorch compiles.
if(TARGET accel_worker AND NOT ACCEL_SANITIZE)
  add_test(NAME worker_install_external
           COMMAND ${PROJECT_SOURCE_DIR}/tests/testing/worker_install_check.sh
                   ${CMAKE_BINARY_DIR} ${PROJECT_SOURCE_DIR})
  set_tests_properties(worker_install_external PROPERTIES LABELS mp TIMEOUT 600)
endif()
