// Blocking loopback socket helpers shared by the benchmark programs (the raw
// baselines and the experiments), so each compares against the same code.
#pragma once

#include <netinet/in.h>

#include <cstddef>

namespace strata::rdma::bench {

// recv/send until n bytes moved; false on EOF or error.
bool ReadAll(int fd, void* buf, size_t n);
bool WriteAll(int fd, const void* buf, size_t n);

// A listening TCP socket on 127.0.0.1 with a kernel-chosen port, written to
// *addr; -1 (and a perror line) on failure.
int ListenLoopback(sockaddr_in* addr);

}  // namespace strata::rdma::bench
