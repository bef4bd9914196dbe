# Layering check: every #include "<folder>/..." in a code folder names a folder at the same layer
# or below, in the order of the README's architecture map (folders are layers, dependencies
# point one way). Lists each violation as file:line and fails.
#   cmake -DSOURCE_DIR=<repo root> -P check_layers.cmake
cmake_minimum_required(VERSION 3.25)
# Folder -> layer; a folder may include from its own layer or a lower one.
set(layer_core 0)
set(layer_models 1)
set(layer_hw_profiles 1)
set(layer_network 2)
set(layer_backends 3)
set(layer_profilers 4)
set(layer_scenario 5)
set(layer_projection 6)
set(layer_events 6)
set(layer_studies 7)
set(layer_serving 7)
set(layer_report 8)
set(layer_cli 9)
set(layer_python 10)
set(folders core models hw_profiles network backends profilers scenario projection events studies
    serving report cli python)

set(violations "")
foreach(folder IN LISTS folders)
  file(GLOB_RECURSE sources RELATIVE "${SOURCE_DIR}" "${SOURCE_DIR}/${folder}/*.h"
       "${SOURCE_DIR}/${folder}/*.cc" "${SOURCE_DIR}/${folder}/*.hip")
  foreach(source IN LISTS sources)
    file(STRINGS "${SOURCE_DIR}/${source}" includes REGEX "^#include \"[a-z_]+/")
    foreach(line IN LISTS includes)
      string(REGEX REPLACE "^#include \"([a-z_]+)/.*" "\\1" target "${line}")
      if(NOT DEFINED layer_${target})
        continue()
      endif()
      if(layer_${target} GREATER layer_${folder})
        list(APPEND violations "${source}: ${line} (${folder} is below ${target})")
      endif()
      # models and hw_profiles share a layer but stay independent of each other.
      if(layer_${target} EQUAL layer_${folder} AND NOT target STREQUAL folder)
        list(APPEND violations "${source}: ${line} (${folder} and ${target} are siblings)")
      endif()
    endforeach()
  endforeach()
endforeach()
if(violations)
  list(JOIN violations "\n" text)
  message(FATAL_ERROR "includes against the layer order:\n${text}")
endif()
message(STATUS "layers: every include points down")
