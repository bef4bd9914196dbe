# Installs the python component into PREFIX and imports the package from there with no build-tree
# path: the projection it runs must give a positive TGS.
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${PREFIX} --component python
                RESULT_VARIABLE installed)
if(NOT installed EQUAL 0)
  message(FATAL_ERROR "cmake --install failed: ${installed}")
endif()
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env PYTHONPATH=${PREFIX}/${PACKAGE_DIR}
          ${PYTHON} -c "import projector; r = projector.project(); print(projector.__file__); assert r.tokens_per_s_per_gpu > 0"
  RESULT_VARIABLE imported OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT imported EQUAL 0 OR NOT out MATCHES "${PREFIX}")
  message(FATAL_ERROR "the installed package did not import from ${PREFIX}: ${out} ${err}")
endif()
message(STATUS "installed and imported: ${out}")
