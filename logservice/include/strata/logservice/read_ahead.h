// LogReadAhead: reads the log front to back with several reads in flight,
// for a reader that walks it sequentially in small steps (InnoDB recovery:
// 64 KiB per call through storage/innobase/strata/backend_logservice.cc).
//
// Why: LogClient::Read is one synchronous round trip per call, so a reader
// asking for 64 KiB at a time pays a round trip per 64 KiB and the node sits
// idle while the caller parses. LogReadAhead keeps `depth` ReadReqs of
// `chunk_bytes` each outstanding on one node's channel
// (RpcChannel::Start), hands out the bytes that came back, and sends the
// next request as soon as one is answered. Nothing changes on the wire or in
// the node: these are the ReadReq / ReadResp of LogClient::Read, only sent
// before the previous answer came (their ReadResp goes by SendBulk, as
// LogClient::Read's do).
//
// Contract: Read(from, max_bytes) returns exactly what LogClient::Read(from,
// max_bytes) may return (the same bytes; maybe fewer of them per call, never
// more), so a caller can swap one for the other:
//   - at most max_bytes; a short result is not the end, an empty one is;
//   - never past the quorum frontier min(durable_lsn(), stream_end()) taken
//     when the request is sent: a read is never issued beyond it, so the
//     bytes handed out are durable on a write quorum and immutable, which is
//     what makes it safe to hold them before the caller asks;
//   - at and after the stream end the tail image comes from
//     LogClient::Read itself (it is overwritable: never read ahead);
//   - errors are LogClient::Read's (kUnavailable on a dropped connection or
//     timeout, kFenced, kNotFound, kFailed), and after one the read-ahead is
//     dropped: the caller retries as it would retry Read, and the retry
//     starts a fresh stream on whichever node is then the best.
// A Read at another LSN than where the last one ended drops what was read
// ahead and starts over there (a seek costs one round trip, as Read does).
//
// Threads: one caller at a time (not thread-safe); the LogClient must
// outlive it. Destroying it abandons the requests in flight (their answers
// are dropped by the channel).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "strata/logservice/client.h"

namespace strata::logservice::client {

struct ReadAheadOptions {
  std::size_t depth = 4;               // ReadReqs in flight at most
  std::size_t chunk_bytes = 1u << 20;  // bytes asked per ReadReq (capped by the wire's largest read, 1 MiB)
};

// What a read-ahead did, for tests and the benchmark.
struct ReadAheadStats {
  std::uint64_t requests = 0;      // ReadReqs sent (round trips)
  std::uint64_t bytes = 0;         // bytes handed to the caller
  std::uint64_t restarts = 0;      // read-ahead dropped (a seek, a short answer, an error)
  std::uint64_t max_in_flight = 0; // most ReadReqs outstanding at once
};

class LogReadAhead {
 public:
  explicit LogReadAhead(LogClient& client, ReadAheadOptions options = {});
  ~LogReadAhead();
  LogReadAhead(const LogReadAhead&) = delete;
  LogReadAhead& operator=(const LogReadAhead&) = delete;

  ClientResult<std::string> Read(Lsn from, std::size_t max_bytes);
  ReadAheadStats stats() const;
  std::size_t in_flight() const;  // ReadReqs outstanding now

  struct State;

 private:
  std::unique_ptr<State> s_;
};

}  // namespace strata::logservice::client
