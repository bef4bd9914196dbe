# Runs the CLI and checks its exit code and output: an abort (134) or crash never passes.
#   cmake -DEXE=... -DARGS="a;b" -DEXPECT_CODE=2 -DEXPECT_REGEX=... -P run_cli.cmake
set(arg_list ${ARGS})
execute_process(COMMAND ${EXE} ${arg_list}
                RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(all "${out}${err}")
if(NOT "${code}" STREQUAL "${EXPECT_CODE}")
  message(FATAL_ERROR "exit code ${code}, expected ${EXPECT_CODE}\n${all}")
endif()
if(DEFINED EXPECT_REGEX AND NOT "${all}" MATCHES "${EXPECT_REGEX}")
  message(FATAL_ERROR "output does not match '${EXPECT_REGEX}':\n${all}")
endif()
