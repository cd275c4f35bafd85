// Shared test helpers: a capturing log sink, a latch, options with short
// timeouts, and a raw TCP client that speaks the wire format by hand (to
// send the bad input a well-behaved Transport never would).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "frame_codec.h"
#include "handshake.h"
#include "strata/rdma/rdma.h"

namespace strata::rdma::test {

using namespace std::chrono_literals;

// Thread-safe capture of every log line; tests assert on logged reasons.
class LogCapture {
 public:
  LogSink Sink();
  bool Contains(const std::string& needle) const;
  // Waits until a line containing `needle` was logged.
  bool WaitFor(const std::string& needle, std::chrono::milliseconds timeout = 5s) const;
  std::vector<std::string> Lines() const;

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::vector<std::string> lines_;
};

// Waits for a condition that another thread makes true (no sleeps).
class Signal {
 public:
  void Notify(std::function<void()> update = {});
  bool WaitUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout = 10s);
  std::mutex& mu() { return mu_; }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
};

TransportOptions TestOptions(LogCapture* log, uint64_t seed = 42);
std::vector<std::byte> Pattern(size_t size, uint32_t seed);
std::unique_ptr<Transport> MakeTransport(const TransportOptions& options);

// A blocking raw TCP client.
class RawClient {
 public:
  explicit RawClient(uint16_t port);
  ~RawClient();
  bool connected() const { return fd_ >= 0; }
  bool SendBytes(std::span<const std::byte> bytes);
  bool SendFrame(FrameHeader h, std::span<const std::byte> payload, bool seal = true);
  // Reads one frame (blocking, with timeout); false on EOF/timeout.
  bool ReadFrame(FrameHeader* h, std::vector<std::byte>* payload, std::chrono::milliseconds timeout = 5s);
  // Completes the client side of the handshake with this secret/cluster.
  bool Handshake(const std::string& secret, const std::string& cluster_id, uint32_t credits = 8);
  // True once the server closed the socket (EOF or reset) within timeout.
  bool WaitClosed(std::chrono::milliseconds timeout = 5s);
  // Every byte the server sends until it closes the socket (or timeout).
  std::vector<std::byte> ReadUntilClosed(std::chrono::milliseconds timeout = 5s);
  void Close();

 private:
  bool ReadExact(std::byte* out, size_t n, std::chrono::milliseconds timeout);
  int fd_ = -1;
};

}  // namespace strata::rdma::test
