// strata::redo local nodes: innodb_log_service_local_nodes=N makes mysqld run
// its own N logserviced processes with their storage inside the data
// directory (#log_service/). See local_nodes.cc for the design. No InnoDB
// headers: redo.cc and sysvars.ic include this.
#pragma once

#include <string>
#include <vector>

namespace strata::redo {

/* innodb_log_service_local_nodes (read-only; 0 = off). */
extern unsigned int cfg_local_nodes;

struct LocalCluster {
  std::vector<std::string> addresses;  // tcp://127.0.0.1:port, one per node
  std::string cluster_id;
  std::string secret;  // never logged
  std::string root;    // <datadir>/#log_service
};

/** Starts cfg_local_nodes logserviced children for the data directory that
is the current working directory (mysqld runs there) and waits until each
listens. `initialize` (mysqld --initialize) creates #log_service with a new
cluster id; otherwise it must exist.
@return false with *why set if the server must not start */
bool start_local_nodes(bool initialize, LocalCluster *out, std::string *why);

/** Stops the nodes (SIGTERM, waits up to 30 s, then SIGKILL) and reaps
them. Called once InnoDB's redo is closed; a no-op when none run. */
void stop_local_nodes();

}  // namespace strata::redo
