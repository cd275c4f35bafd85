/* Strata: the identity of the fork, as the server reports it.

   Included by the two upstream files that print or expose the server version
   (sql/mysqld.cc, sql/sys_vars.cc; patches/0001-server-identity.patch). Kept
   in its own header so that the text changes here, never in upstream files,
   and so that no widely included upstream header (mysql_version.h) changes:
   that keeps the stock twin's ccache hits. */

#ifndef STRATA_VERSION_H
#define STRATA_VERSION_H

/** Appended to MYSQL_SERVER_VERSION: SELECT VERSION() gives "9.7.2-strata". */
#define STRATA_SERVER_SUFFIX "-strata"

/** The value of @@version_comment. */
#define STRATA_VERSION_COMMENT \
  "Strata cloud-native MySQL (remote redo log service), based on MySQL 9.7.2 LTS"

#endif /* STRATA_VERSION_H */
