# strata: InnoDB's redo in the log service (docs/design/innodb-redo-to-logservice.md).
# Included by storage/innobase/CMakeLists.txt (patch innodb-strata-build)
# before MYSQL_ADD_PLUGIN(innobase ...): appends our sources to the plugin and
# sets STRATA_INNOBASE_LIBS, which the plugin links.
#
# No upstream object may change its compile command (that would rebuild all
# of InnoDB and invalidate everyone's ccache), so:
#   - the log-service client (rdma/ + logservice/ of the repository) is built
#     as a separate CMake project (client_build/, an ExternalProject) and
#     linked by file path through an imported target without include
#     directories or definitions;
#   - only backend_logservice.cc and page_service_client.cc see the client's
#     headers (a per-source include directory).
# The same sub-build puts logserviced, logservicectl, pageserverd and
# pageserverctl next to mysqld, for mtr (suite strata), the cluster CLI and
# the page server's tests.
INCLUDE(ExternalProject)

# This file is a symlink from the prepared tree into the repository.
GET_FILENAME_COMPONENT(STRATA_REDO_SOURCE_DIR "${CMAKE_CURRENT_LIST_FILE}" REALPATH)
GET_FILENAME_COMPONENT(STRATA_REDO_SOURCE_DIR "${STRATA_REDO_SOURCE_DIR}" DIRECTORY)
GET_FILENAME_COMPONENT(STRATA_REPO_ROOT "${STRATA_REDO_SOURCE_DIR}/../../.." ABSOLUTE)

SET(STRATA_LS_BINARY_DIR ${CMAKE_CURRENT_BINARY_DIR}/strata_logservice)
SET(STRATA_LS_LIBS
  ${STRATA_LS_BINARY_DIR}/logservice/libstrata_pageserver_client.a
  ${STRATA_LS_BINARY_DIR}/logservice/libstrata_logservice_client.a
  ${STRATA_LS_BINARY_DIR}/logservice/libstrata_logservice_repl.a
  ${STRATA_LS_BINARY_DIR}/logservice/libstrata_logstore.a
  ${STRATA_LS_BINARY_DIR}/rdma/libstrata_rdma.a
)
SET(STRATA_LS_TOOLS_DIR ${CMAKE_BINARY_DIR}/runtime_output_directory)

EXTERNALPROJECT_ADD(strata_logservice_build
  SOURCE_DIR ${STRATA_REDO_SOURCE_DIR}/client_build
  BINARY_DIR ${STRATA_LS_BINARY_DIR}
  CMAKE_ARGS
    -DSTRATA_REPO_ROOT=${STRATA_REPO_ROOT}
    -DCMAKE_BUILD_TYPE=RelWithDebInfo
    -DCMAKE_C_COMPILER=${CMAKE_C_COMPILER}
    -DCMAKE_CXX_COMPILER=${CMAKE_CXX_COMPILER}
    # The admin API (logservicectl status / drop-volume / create-volume, which
    # InnoDB's refusals name) in the tools users run from this build.
    -DSTRATA_LOGSERVICE_GRPC=ON
  BUILD_COMMAND ${CMAKE_COMMAND} --build <BINARY_DIR> --parallel 2
    --target strata_logservice_client strata_pageserver_client logserviced logservicectl
      pageserverd pageserverctl
  INSTALL_COMMAND ${CMAKE_COMMAND} -E make_directory ${STRATA_LS_TOOLS_DIR}
  COMMAND ${CMAKE_COMMAND} -E copy_if_different
    <BINARY_DIR>/logservice/logserviced <BINARY_DIR>/logservice/logservicectl
    <BINARY_DIR>/logservice/pageserverd <BINARY_DIR>/logservice/pageserverctl
    ${STRATA_LS_TOOLS_DIR}
  # Always ask the sub-build (a no-op when nothing changed), so an edit in
  # rdma/ or logservice/ reaches mysqld; unchanged libraries relink nothing.
  BUILD_ALWAYS ON
  BUILD_BYPRODUCTS ${STRATA_LS_LIBS}
  EXCLUDE_FROM_ALL ON
)

# What rdma/CMakeLists.txt links when it finds the verbs libraries (the same
# test, so the two agree).
FIND_LIBRARY(STRATA_IBVERBS_LIB ibverbs)
FIND_LIBRARY(STRATA_RDMACM_LIB rdmacm)
FIND_PATH(STRATA_VERBS_INCLUDE infiniband/verbs.h)
FIND_PATH(STRATA_RDMACM_INCLUDE rdma/rdma_cma.h)
SET(STRATA_LS_SYSTEM_LIBS)
IF(STRATA_IBVERBS_LIB AND STRATA_RDMACM_LIB AND STRATA_VERBS_INCLUDE AND STRATA_RDMACM_INCLUDE)
  LIST(APPEND STRATA_LS_SYSTEM_LIBS ${STRATA_IBVERBS_LIB} ${STRATA_RDMACM_LIB})
ENDIF()
IF(OPENSSL_CRYPTO_LIBRARY)
  LIST(APPEND STRATA_LS_SYSTEM_LIBS ${OPENSSL_CRYPTO_LIBRARY})
ELSE()
  LIST(APPEND STRATA_LS_SYSTEM_LIBS crypto)
ENDIF()
LIST(APPEND STRATA_LS_SYSTEM_LIBS pthread)

# Link-only: no INTERFACE_INCLUDE_DIRECTORIES, no definitions.
ADD_LIBRARY(strata_logservice_client_lib INTERFACE IMPORTED GLOBAL)
SET_TARGET_PROPERTIES(strata_logservice_client_lib PROPERTIES
  INTERFACE_LINK_LIBRARIES "${STRATA_LS_LIBS};${STRATA_LS_SYSTEM_LIBS}")
ADD_DEPENDENCIES(strata_logservice_client_lib strata_logservice_build)

LIST(APPEND INNOBASE_SOURCES
  strata/backend_dir.cc
  strata/backend_logservice.cc
  strata/full_pages.cc
  strata/lwlsn_cache.cc
  strata/local_nodes.cc
  strata/meta.cc
  strata/page_apply.cc
  strata/page_service.cc
  strata/page_service_client.cc
  strata/pfs_nodes.cc
  strata/redo.cc
)
# logservice/include for the clients' headers; rdma/include for the
# header-only status type they build on (strata/rdma/basic_status.h).
SET_SOURCE_FILES_PROPERTIES(strata/backend_logservice.cc strata/page_service_client.cc PROPERTIES
  INCLUDE_DIRECTORIES "${STRATA_REPO_ROOT}/logservice/include;${STRATA_REPO_ROOT}/rdma/include")
# The page-apply helper speaks the page server's pipe protocol (a header of
# the log service tree, standard library only, whose fields are written with
# the header-only strata/rdma/little_endian.h).
SET_SOURCE_FILES_PROPERTIES(strata/page_apply.cc PROPERTIES
  INCLUDE_DIRECTORIES "${STRATA_REPO_ROOT}/logservice/src;${STRATA_REPO_ROOT}/rdma/include")
SET(STRATA_INNOBASE_LIBS strata_logservice_client_lib)
