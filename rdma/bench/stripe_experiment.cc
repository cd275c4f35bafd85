// rdma_stripe_experiment: would a per-stripe checksum (a wire v2 idea) let
// a 64 KiB loopback ping-pong hide its checksum cost?
//
// The idea: the sender checksums and sends a large payload stripe by
// stripe, so the receiver verifies stripe i while stripe i+1 is still being
// produced, instead of both ends making a full pass before/after one write.
// This measures that on raw blocking sockets, without any framing of ours,
// in interleaved rounds (median p50 per variant, median per-round ratio to
// the plain socket):
//   plain        send 64 KiB, recv 64 KiB
//   whole-crc    one CRC32C pass before each send and after each receive
//                (what v1 frames cost: 4 passes per round trip)
//   stripes S    per stripe of S bytes: CRC, send; the receiver verifies
//                each stripe as soon as it has arrived
//
//   rdma_stripe_experiment [--rounds R] [--pingpong N] [--size BYTES]
//
// Not a test: numbers depend on the machine and its load.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "strata/rdma/crc32c.h"
#include "socket_io.h"

using strata::rdma::Crc32c;
using strata::rdma::bench::ListenLoopback;
using strata::rdma::bench::ReadAll;
using strata::rdma::bench::WriteAll;
using Clock = std::chrono::steady_clock;

namespace {

volatile uint32_t g_crc_sink;  // keeps the checksums from being optimised away

struct Variant {
  const char* name;
  size_t stripe;  // 0: plain; SIZE_MAX: whole-payload CRC; else the stripe size
};


void SendMessage(int fd, char* buf, size_t size, size_t stripe) {
  if (stripe == SIZE_MAX) g_crc_sink = Crc32c(0, buf, size);
  if (stripe == 0 || stripe == SIZE_MAX) {
    if (!WriteAll(fd, buf, size)) std::exit(1);
    return;
  }
  for (size_t off = 0; off < size; off += stripe) {
    const size_t n = std::min(stripe, size - off);
    g_crc_sink = Crc32c(0, buf + off, n);
    if (!WriteAll(fd, buf + off, n)) std::exit(1);
  }
}

void ReceiveMessage(int fd, char* buf, size_t size, size_t stripe) {
  if (stripe == 0 || stripe == SIZE_MAX) {
    if (!ReadAll(fd, buf, size)) std::exit(1);
    if (stripe == SIZE_MAX) g_crc_sink = Crc32c(0, buf, size);
    return;
  }
  size_t got = 0, verified = 0;
  while (got < size) {
    const ssize_t r = ::recv(fd, buf + got, size - got, 0);
    if (r <= 0) std::exit(1);
    got += static_cast<size_t>(r);
    while (verified < got && (got - verified >= stripe || got == size)) {
      const size_t n = std::min(stripe, size - verified);
      g_crc_sink = Crc32c(0, buf + verified, n);
      verified += n;
    }
  }
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 15, pingpong = 400;
  size_t size = 64 * 1024;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--rounds") rounds = std::max(1, std::atoi(argv[i + 1]));
    else if (k == "--pingpong") pingpong = std::max(1, std::atoi(argv[i + 1]));
    else if (k == "--size") size = std::strtoull(argv[i + 1], nullptr, 10);
  }
  const std::vector<Variant> variants = {
      {"plain", 0}, {"whole-crc", SIZE_MAX}, {"stripes 8K", 8192}, {"stripes 16K", 16384}, {"stripes 32K", 32768}};
  int one = 1;
  sockaddr_in a;
  const int listen_fd = ListenLoopback(&a);
  if (listen_fd < 0) return 1;
  std::vector<char> buf(size, 'x');
  if (::fork() == 0) {  // echo server: one connection per variant, served in the client's order
    std::vector<int> fds;
    for (size_t v = 0; v < variants.size(); ++v) {
      fds.push_back(::accept(listen_fd, nullptr, nullptr));
      ::setsockopt(fds.back(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    for (int r = 0; r < rounds; ++r) {
      for (size_t k = 0; k < variants.size(); ++k) {
        const size_t v = (r + k) % variants.size();
        for (int i = 0; i < pingpong; ++i) {
          ReceiveMessage(fds[v], buf.data(), size, variants[v].stripe);
          SendMessage(fds[v], buf.data(), size, variants[v].stripe);
        }
      }
    }
    _exit(0);
  }
  std::vector<int> fds;
  for (size_t v = 0; v < variants.size(); ++v) {
    fds.push_back(::socket(AF_INET, SOCK_STREAM, 0));
    ::setsockopt(fds.back(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (::connect(fds.back(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      std::perror("connect");
      return 1;
    }
  }
  std::vector<std::vector<double>> p50(variants.size());
  for (int r = 0; r < rounds; ++r) {
    for (size_t k = 0; k < variants.size(); ++k) {
      const size_t v = (r + k) % variants.size();
      std::vector<double> us;
      for (int i = 0; i < pingpong; ++i) {
        const auto t0 = Clock::now();
        SendMessage(fds[v], buf.data(), size, variants[v].stripe);
        ReceiveMessage(fds[v], buf.data(), size, variants[v].stripe);
        us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
      }
      p50[v].push_back(Median(us));
    }
  }
  std::printf("%zu-byte ping-pong, %d rounds x %d round trips per variant\n", size, rounds, pingpong);
  for (size_t v = 0; v < variants.size(); ++v) {
    std::vector<double> ratio;
    for (int r = 0; r < rounds; ++r) ratio.push_back(p50[v][r] / p50[0][r]);
    std::printf("%-12s p50 %7.1f us   x plain %.3f\n", variants[v].name, Median(p50[v]), Median(ratio));
  }
  ::wait(nullptr);
  return 0;
}
