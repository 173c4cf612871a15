if(TARGET accel_train_support)
  accel_add_test(NAME train_support_test LABEL unit
                 SOURCES ${CMAKE_CURRENT_LIST_DIR}/train_support_test.cc LIBS accel_train_support)
endif()
