# strata: InnoDB's redo in the log service (docs/design/innodb-redo-to-logservice.md).
# Included by storage/innobase/CMakeLists.txt (patch innodb-strata-build)
# before MYSQL_ADD_PLUGIN(innobase ...): appends our sources to the plugin and
# sets STRATA_INNOBASE_LIBS, which the plugin links. Adds no include
# directory and no flag, so no upstream object changes its compile command.
LIST(APPEND INNOBASE_SOURCES
  strata/backend_dir.cc
  strata/meta.cc
  strata/redo.cc
)
SET(STRATA_INNOBASE_LIBS)
