# Runs a command alone and under `mpirun -np 2` and checks what issue 29 asks of the MPI team.
#   MODE=same    the same stdout (the timing fields left out: elapsed_s, candidates_per_minute and
#                threads in JSON, "in 0.07 s on 2 threads (5,062,530 per minute)" in text) and, with -DFILE_ARG=--out, the same file byte for byte; every
#                rank evaluated some tasks ("mpi: 2 ranks, tasks evaluated: rank 0 N ..., rank 1 M").
#   MODE=error   exit code EXPECT_CODE with EXPECT_REGEX in the output exactly once (rank 0 alone
#                speaks), under mpirun only.
#   MODE=killed  rank 1 killed at its third task (PROJECTOR_MPI_KILL_AFTER_TASKS=1:3): a non-zero
#                exit naming what rank 1 held; the sweep file then resumed alone holds every point
#                of the reference run.
#   cmake -DEXE=... -DMPIEXEC=... -DMODE=same -DARGS="a;b" [-DFILE_ARG=--out -DWORK=dir]
#         [-DEXPECT_CODE=2 -DEXPECT_REGEX=...] -P run_mpi.cmake
set(arg_list ${ARGS})
set(mpi ${MPIEXEC} -np 2 --oversubscribe)
file(MAKE_DIRECTORY ${WORK})

function(strip_timing text out)
  string(REGEX REPLACE "\"(elapsed_s|candidates_per_minute|threads)\": [^,\n]*,?\n" "" text "${text}")
  string(REGEX REPLACE " in [0-9.]+ s on [0-9]+ threads \\([0-9,]+ per minute\\)" "" text "${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

if(MODE STREQUAL "same")
  set(alone_args ${arg_list})
  set(ranks_args ${arg_list})
  if(DEFINED FILE_ARG)
    file(REMOVE ${WORK}/alone.out ${WORK}/ranks.out)
    list(APPEND alone_args ${FILE_ARG} ${WORK}/alone.out)
    list(APPEND ranks_args ${FILE_ARG} ${WORK}/ranks.out)
  endif()
  execute_process(COMMAND ${EXE} ${alone_args} RESULT_VARIABLE code OUTPUT_VARIABLE alone
                  ERROR_VARIABLE alone_err)
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "alone: exit ${code}\n${alone}${alone_err}")
  endif()
  execute_process(COMMAND ${mpi} ${EXE} ${ranks_args} RESULT_VARIABLE code OUTPUT_VARIABLE ranks
                  ERROR_VARIABLE ranks_err)
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "mpirun -np 2: exit ${code}\n${ranks}${ranks_err}")
  endif()
  if(DEFINED FILE_ARG)
    string(REPLACE "${WORK}/alone.out" "FILE" alone "${alone}")
    string(REPLACE "${WORK}/ranks.out" "FILE" ranks "${ranks}")
    execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${WORK}/alone.out ${WORK}/ranks.out
                    RESULT_VARIABLE differ)
    if(differ)
      message(FATAL_ERROR "the file written over 2 ranks differs from the one written alone")
    endif()
  endif()
  strip_timing("${alone}" alone)
  strip_timing("${ranks}" ranks)
  if(NOT alone STREQUAL ranks)
    message(FATAL_ERROR "stdout differs.\nalone:\n${alone}\nmpirun -np 2:\n${ranks}")
  endif()
  if(NOT ranks_err MATCHES "mpi: 2 ranks, tasks evaluated: rank 0 ([0-9]+) [^,]*, rank 1 ([0-9]+)")
    message(FATAL_ERROR "no per-rank task count on stderr:\n${ranks_err}")
  endif()
  if(CMAKE_MATCH_1 EQUAL 0 OR CMAKE_MATCH_2 EQUAL 0)
    message(FATAL_ERROR "the work was not split: ${CMAKE_MATCH_0}")
  endif()
  message(STATUS "same output; ${CMAKE_MATCH_0}")
elseif(MODE STREQUAL "error")
  execute_process(COMMAND ${mpi} ${EXE} ${arg_list} RESULT_VARIABLE code OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  set(all "${out}${err}")
  if(code EQUAL 0)
    message(FATAL_ERROR "mpirun -np 2: exit 0, expected ${EXPECT_CODE}\n${all}")
  endif()
  # mpirun reports the exit code of the first rank that failed in its own words.
  if(NOT all MATCHES "Exit code: +${EXPECT_CODE}")
    message(FATAL_ERROR "no rank exited with ${EXPECT_CODE}:\n${all}")
  endif()
  string(REGEX MATCHALL "project: error: ${EXPECT_REGEX}" said "${all}")
  list(LENGTH said times)
  if(NOT times EQUAL 1)
    message(FATAL_ERROR "'${EXPECT_REGEX}' said ${times} times, expected once (rank 0):\n${all}")
  endif()
elseif(MODE STREQUAL "killed")
  file(REMOVE ${WORK}/reference.jsonl ${WORK}/killed.jsonl)
  execute_process(COMMAND ${EXE} ${arg_list} --out ${WORK}/reference.jsonl RESULT_VARIABLE code
                  OUTPUT_QUIET ERROR_QUIET)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env PROJECTOR_MPI_KILL_AFTER_TASKS=1:3
                          ${mpi} -x PROJECTOR_MPI_KILL_AFTER_TASKS ${EXE} ${arg_list}
                          --out ${WORK}/killed.jsonl
                  RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(all "${out}${err}")
  if(code EQUAL 0)
    message(FATAL_ERROR "a killed rank went unreported (exit 0):\n${all}")
  endif()
  if(NOT all MATCHES "project: error: the MPI job was stopped .*rank 1 held [1-9][0-9]* task\\(s\\): point [0-9]+ \\(TP")
    message(FATAL_ERROR "the report does not name what rank 1 held:\n${all}")
  endif()
  if(NOT all MATCHES "--resume FILE evaluates the rest")
    message(FATAL_ERROR "the report does not say how to continue:\n${all}")
  endif()
  execute_process(COMMAND ${EXE} ${arg_list} --resume ${WORK}/killed.jsonl RESULT_VARIABLE code
                  OUTPUT_VARIABLE resumed ERROR_VARIABLE resumed_err)
  if(NOT code EQUAL 0 OR NOT resumed MATCHES "\\(([1-9][0-9]*) evaluated now, ([0-9]+) resumed\\)")
    message(FATAL_ERROR "the resume failed (exit ${code}):\n${resumed}${resumed_err}")
  endif()
  # Every point of the reference, in any order: the lines sorted compare equal.
  file(STRINGS ${WORK}/reference.jsonl reference)
  file(STRINGS ${WORK}/killed.jsonl killed)
  list(SORT reference)
  list(SORT killed)
  if(NOT reference STREQUAL killed)
    message(FATAL_ERROR "the resumed sweep's points differ from the reference run's")
  endif()
  message(STATUS "killed rank reported; resumed: ${CMAKE_MATCH_0}")
else()
  message(FATAL_ERROR "unknown MODE '${MODE}'")
endif()
