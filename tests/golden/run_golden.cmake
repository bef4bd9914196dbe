cmake_minimum_required(VERSION 3.25)
# Golden output: runs the CLI with ARGS and compares stdout+stderr (and, when OUT_FILE is set, the
# file the command writes) byte for byte with the files in EXPECTED_DIR. The output folder's path
# is written as @OUT@ in both, the repository's as @SRC@, and the tool's own run time and thread
# count (search, validate) as @TIME@ and @THREADS@, so the goldens hold on any machine.
#   cmake -DEXE=... -DNAME=... -DARGS="a;b" -DEXPECTED_DIR=... -DOUT_DIR=... -DSOURCE_DIR=...
#         [-DOUT_FILE=f] -P run_golden.cmake
# With PROJECTOR_UPDATE_GOLDENS=ON in the environment it rewrites the expected files instead
# (tools/update_goldens.sh; never in CI).
string(REPLACE "@OUT@" "${OUT_DIR}" arg_list "${ARGS}")
file(MAKE_DIRECTORY "${OUT_DIR}")
execute_process(COMMAND ${EXE} ${arg_list} WORKING_DIRECTORY "${OUT_DIR}"
                RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT "${code}" STREQUAL "0")
  message(FATAL_ERROR "${NAME}: exit code ${code}, expected 0\n${out}${err}")
endif()
# The figures that vary from run to run: wall time, throughput of the tool, threads.
function(mask_machine_figures var)
  set(text "${${var}}")
  string(REPLACE "${OUT_DIR}" "@OUT@" text "${text}")
  string(REPLACE "${SOURCE_DIR}" "@SRC@" text "${text}")
  string(REGEX REPLACE "in [0-9.]+ s on [0-9]+ threads? \\([0-9,]+ per minute\\)"
         "in @TIME@ s on @THREADS@ threads (@RATE@ per minute)" text "${text}")
  string(REGEX REPLACE "cases in [0-9.]+ s" "cases in @TIME@ s" text "${text}")
  string(REGEX REPLACE ">[0-9.]+ s</div><div class=\"k\">on [0-9]+ threads?<"
         ">@TIME@ s</div><div class=\"k\">on @THREADS@ threads<" text "${text}")
  string(REGEX REPLACE "\"(elapsed_s|candidates_per_minute|threads)\": [0-9.e+-]+"
         "\"\\1\": \"@TIME@\"" text "${text}")
  set(${var} "${text}" PARENT_SCOPE)
endfunction()

set(actual "${out}${err}")
mask_machine_figures(actual)

if(DEFINED OUT_FILE AND NOT "${OUT_FILE}" STREQUAL "")
  file(READ "${OUT_DIR}/${OUT_FILE}" written)
  mask_machine_figures(written)
  get_filename_component(ext "${OUT_FILE}" LAST_EXT)
  set(file_golden "${NAME}.file${ext}")
endif()

function(check_or_update golden content)
  set(path "${EXPECTED_DIR}/${golden}")
  if("$ENV{PROJECTOR_UPDATE_GOLDENS}")
    file(WRITE "${path}" "${content}")
    return()
  endif()
  if(NOT EXISTS "${path}")
    message(FATAL_ERROR "${NAME}: no golden ${path}; run tools/update_goldens.sh")
  endif()
  file(READ "${path}" expected)
  if(NOT "${content}" STREQUAL "${expected}")
    file(WRITE "${OUT_DIR}/${golden}.actual" "${content}")
    execute_process(COMMAND diff -u "${path}" "${OUT_DIR}/${golden}.actual"
                    OUTPUT_VARIABLE diff_out)
    message(FATAL_ERROR "${NAME}: output differs from ${path}:\n${diff_out}")
  endif()
endfunction()

check_or_update("${NAME}.txt" "${actual}")
if(DEFINED file_golden)
  check_or_update("${file_golden}" "${written}")
endif()
