# Applies MLBRIDGE_SANITIZE to everything built in this project.
if(MLBRIDGE_SANITIZE)
  string(REPLACE "," ";" _mlbridge_sans "${MLBRIDGE_SANITIZE}")
  foreach(_san IN LISTS _mlbridge_sans)
    if(NOT _san MATCHES "^(address|undefined|thread|leak)$")
      message(FATAL_ERROR "MLBRIDGE_SANITIZE: unknown sanitizer '${_san}'")
    endif()
  endforeach()
  add_compile_options(-fsanitize=${MLBRIDGE_SANITIZE} -fno-omit-frame-pointer
                      -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${MLBRIDGE_SANITIZE})
endif()
