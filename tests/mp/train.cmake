if(TARGET train_bin AND TARGET accel-launch)
  accel_add_test(NAME train_e2e_test LABEL mp TIMEOUT 600
                 SOURCES ${CMAKE_CURRENT_LIST_DIR}/train_test.cc)
  add_dependencies(train_e2e_test train_bin accel-launch)
endif()
