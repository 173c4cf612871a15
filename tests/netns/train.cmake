if(TARGET train_bin AND TARGET accel-launch)
  add_test(NAME train_netns_two_machines
           COMMAND ${CMAKE_CURRENT_LIST_DIR}/train_two_machines.sh $<TARGET_FILE:accel-launch>
                   $<TARGET_FILE:train_bin>)
  set_tests_properties(train_netns_two_machines PROPERTIES LABELS netns TIMEOUT 240
                       SKIP_RETURN_CODE 77)
endif()
