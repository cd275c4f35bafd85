// The benchmark's baselines: raw blocking TCP sockets on loopback, without
// any of our framing, and two "floors" built from them (an epoll wait before
// every recv; a CRC32C pass on each side of each message).
//
// Protocol on a raw connection: the client sends a 16-byte request
// {u64 mode << 32 | size, u64 count}, then the server serves until EOF:
//   kEcho / kEchoEpoll / kEchoCrc: echo every `size`-byte message,
//   kSink: read messages and send one ack byte after every `count` of them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace strata::rdma::bench {

//   kEchoCrcInc: as kEchoCrc, but the receiver checksums each chunk as recv
//     returns it (only the last chunk's pass follows the last byte);
//   kEchoCrcTrailer: as kEchoCrcInc, and the sender writes the payload
//     first and its checksum after it (a 4-byte trailer), so the sender's
//     pass overlaps the receiver's reads.
//   kSinkCrc: kSink with one CRC32C pass per message on each side (the
//     streaming floor of any design that checksums every payload).
enum class RawMode : uint32_t {
  kEcho = 1, kSink = 2, kEchoEpoll = 3, kEchoCrc = 4, kEchoCrcInc = 5, kEchoCrcTrailer = 6, kSinkCrc = 7
};

int RawListen(uint16_t* port);
// Serves connections forever, one thread per connection.
void RawServe(int listen_fd);

// A client connection in one mode, kept open across rounds.
class RawClient {
 public:
  RawClient(uint16_t port, RawMode mode, uint32_t size, uint64_t sink_batch = 0);
  ~RawClient();
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  // One ping-pong round trip; false on a broken connection.
  bool RoundTrip();
  // Streams sink_batch messages and waits for the sink's ack.
  bool StreamBatch();

 private:
  int fd_ = -1;
  int epoll_fd_ = -1;
  RawMode mode_;
  uint32_t size_;
  uint64_t sink_batch_;
  std::vector<char> buf_;
};

}  // namespace strata::rdma::bench
