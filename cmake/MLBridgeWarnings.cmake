# mlbridge_set_warnings(<target>): the project's warning flags.
function(mlbridge_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic
                         $<$<BOOL:${MLBRIDGE_WERROR}>:-Werror>)
endfunction()
