// Parsing of "scheme://host:port" addresses.
#include "strata/rdma/endpoint.h"

#include <charconv>

namespace strata::rdma {

std::string_view SchemeName(Scheme scheme) {
  switch (scheme) {
    case Scheme::kAuto: return "auto";
    case Scheme::kRdma: return "rdma";
    case Scheme::kTcp: return "tcp";
  }
  return "?";
}

Result<Endpoint> Endpoint::Parse(std::string_view address) {
  Endpoint ep;
  const auto sep = address.find("://");
  if (sep == std::string_view::npos) return InvalidArgument("address '" + std::string(address) + "' lacks scheme:// (rdma, tcp or auto)");
  const std::string_view scheme = address.substr(0, sep);
  if (scheme == "rdma") ep.scheme = Scheme::kRdma;
  else if (scheme == "tcp") ep.scheme = Scheme::kTcp;
  else if (scheme == "auto") ep.scheme = Scheme::kAuto;
  else return InvalidArgument("unknown scheme '" + std::string(scheme) + "' (want rdma, tcp or auto)");

  std::string_view rest = address.substr(sep + 3);
  std::string_view host, port;
  if (!rest.empty() && rest.front() == '[') {  // [ipv6]:port
    const auto close = rest.find(']');
    if (close == std::string_view::npos || close + 1 >= rest.size() || rest[close + 1] != ':')
      return InvalidArgument("bad bracketed host in '" + std::string(address) + "'");
    host = rest.substr(1, close - 1);
    port = rest.substr(close + 2);
  } else {
    const auto colon = rest.rfind(':');
    if (colon == std::string_view::npos) return InvalidArgument("address '" + std::string(address) + "' lacks :port");
    host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
  }
  if (host.empty()) return InvalidArgument("address '" + std::string(address) + "' has an empty host");
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc() || end != port.data() + port.size() || value > 65535)
    return InvalidArgument("bad port in '" + std::string(address) + "'");
  ep.host = std::string(host);
  ep.port = static_cast<uint16_t>(value);
  return ep;
}

std::string Endpoint::ToString() const {
  std::string s(SchemeName(scheme));
  s += "://";
  if (host.find(':') != std::string::npos) s += "[" + host + "]";
  else s += host;
  s += ":" + std::to_string(port);
  return s;
}

}  // namespace strata::rdma
