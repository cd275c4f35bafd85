// Endpoint: a parsed transport address, "scheme://host:port".
//
// scheme is rdma (verbs backend, fails if no device), tcp (TCP backend) or
// auto (verbs when an RDMA device is present and verbs setup works, TCP
// otherwise: see Transport for the fallback). host is an IPv4
// literal, a host name, or an IPv6 literal in brackets. Port 0 on Listen
// means "pick a free port"; Listener::endpoint() reports the chosen one.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "strata/rdma/status.h"

namespace strata::rdma {

enum class Scheme { kAuto, kRdma, kTcp };

std::string_view SchemeName(Scheme scheme);

struct Endpoint {
  Scheme scheme = Scheme::kAuto;
  std::string host;
  uint16_t port = 0;

  static Result<Endpoint> Parse(std::string_view address);
  std::string ToString() const;
};

}  // namespace strata::rdma
