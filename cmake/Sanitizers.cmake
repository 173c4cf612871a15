# ACCEL_SANITIZE=address,undefined (or thread) instruments everything built here.
if(ACCEL_SANITIZE)
  add_compile_options(-fsanitize=${ACCEL_SANITIZE} -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${ACCEL_SANITIZE})
endif()
