# Initial CMake cache (cmake -C) for both server builds, the fork and the stock
# twin: the same compiler, flags and feature set, so benchmark ratios measure
# our changes only. They keep the build to what we ship: the features below
# are not built at all (docs/BUILDING.md has what a build costs).
#
# Do not add options that change a widely included generated header (for
# example CMAKE_INSTALL_PREFIX or COMPILATION_COMMENT end up in my_config.h /
# mysql_version.h): every object would then miss ccache, in the fork and in
# the stock twin alike.

set(CMAKE_BUILD_TYPE RelWithDebInfo CACHE STRING "")

# Only what we ship. NDB needs both switches: with WITH_NDB alone off, the
# NDB storage engine is still compiled into mysqld.
set(WITH_NDB OFF CACHE BOOL "")
set(WITH_NDBCLUSTER_STORAGE_ENGINE OFF CACHE BOOL "")
set(WITH_ROUTER OFF CACHE BOOL "")
set(WITH_UNIT_TESTS OFF CACHE BOOL "")
set(WITH_MYSQLX OFF CACHE BOOL "")
set(WITH_GROUP_REPLICATION OFF CACHE BOOL "")
set(WITH_AUTHENTICATION_LDAP OFF CACHE BOOL "")
set(WITH_AUTHENTICATION_KERBEROS OFF CACHE BOOL "")
set(WITH_AUTHENTICATION_WEBAUTHN OFF CACHE BOOL "")
set(WITH_FIDO none CACHE STRING "")

# Debian's libraries instead of the bundled copies (scripts/setup installs
# libssl-dev, libprotobuf-dev + libprotoc-dev, libicu-dev).
set(WITH_SSL system CACHE STRING "")
set(WITH_PROTOBUF system CACHE STRING "")
set(WITH_ICU system CACHE STRING "")

# No dpkg-buildflags: on Debian, RelWithDebInfo would add them, and they carry
# -ffile-prefix-map=<absolute build dir>, which differs in every clone and
# between the fork and the stock twin, so nothing would ever hit ccache.
set(WITH_PACKAGE_FLAGS OFF CACHE BOOL "")

# mysqld and the tools link jemalloc (libjemalloc-dev).
set(WITH_JEMALLOC ON CACHE BOOL "")

# ccache through our launcher: it pins the cache outside the checkout and makes
# paths relative to the checkout, so fresh clones hit (docs/BUILDING.md).
set(CMAKE_C_COMPILER_LAUNCHER "${CMAKE_CURRENT_LIST_DIR}/../scripts/ccache-launcher" CACHE STRING "")
set(CMAKE_CXX_COMPILER_LAUNCHER "${CMAKE_CURRENT_LIST_DIR}/../scripts/ccache-launcher" CACHE STRING "")
