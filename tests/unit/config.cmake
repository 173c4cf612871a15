# Unit tests of the launcher's configuration half (launcher/config_targets.cmake).
if(TARGET accel_launcher_config)
  accel_add_test(NAME config_loader_test LABEL unit SOURCES ${CMAKE_CURRENT_LIST_DIR}/config_loader_test.cc
                 LIBS accel_launcher_config)
endif()
