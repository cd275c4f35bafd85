// LogClient: what InnoDB (through storage/innobase/strata/backend_logservice.cc)
// calls to keep its redo in the replicated log service. No MySQL headers, no
// exceptions; every fallible call returns a [[nodiscard]] ClientStatus.
//
// Model (docs/logservice-replication.md):
//   - Open() as kWriter connects to the N nodes, raises the epoch on a read
//     quorum R = N - W + 1 (older writers are refused from then on), reads
//     their logs, picks the durable end, seals every reachable node there
//     (each cuts what a dead writer left beyond it) and brings W nodes up to
//     it. Afterwards sealed_end() is where the log ends: block stream end
//     stream_end() plus the recovered tail image, if any.
//     kReadOnly does the same reading without raising the epoch (no fencing).
//   - The log is a stream of immutable bytes (InnoDB: complete 512-byte
//     blocks) appended in LSN order with Append(), plus ONE overwritable tail
//     image (InnoDB: the partial last block, rewritten as it grows) set with
//     PutTail(stream_end(), image, data_end). A tail counts only while its
//     block LSN equals the stream end; appending the completed block retires it.
//   - durable_lsn(): the quorum frontier. The end of the stream prefix that W
//     nodes have fdatasync'ed, raised to the tail's data_end once W nodes hold
//     that tail durably. Monotonic. on_durable is called when it advances.
//
// Threads: every method is thread-safe. Append/PutTail copy the bytes and
// return once queued (they block only while the in-flight window
// max_inflight_bytes is full). on_durable runs on the client's I/O thread and
// must not block. WaitDurable blocks the caller (no thread per waiter).
//
// Failures: the client reconnects, re-promises and re-seals nodes on its own
// and resends un-acknowledged bytes; it keeps going while W nodes are alive.
// When they are not, waits time out with kUnavailable and a reason such as
// "2 of 3 nodes unreachable: node2 (tcp://10.0.0.2:7100) connection refused; node3 (...) timeout",
// also available from status().reason. kFenced means another writer took
// over (higher epoch): the caller must stop (InnoDB: ib::fatal).
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "strata/rdma/basic_status.h"

namespace strata::logservice {
class Runtime;  // strata/logservice/runtime.h
class Network;  // strata/logservice/network.h
}  // namespace strata::logservice

namespace strata::logservice::client {

using Lsn = std::uint64_t;
using Epoch = std::uint64_t;

enum class Code {
  kOk = 0,
  kInvalidArgument,  // caller broke the contract (non-contiguous append, bad config)
  kUnavailable,      // fewer than the needed nodes answer; message says which and why
  kTimeout,          // enough nodes are up but the deadline passed
  kFenced,           // a newer writer holds the log: stop writing
  kAuthFailed,       // cluster id / secret refused
  kNotFound,         // no checkpoint / page version
  kFailed,           // a node reported an error (message has it)
};

// The client's status and result: rdma's BasicStatus and BasicResult (the
// one implementation of errors as values, strata/rdma/basic_status.h) with
// the client's codes above, the only ones InnoDB has to map.
std::string_view StatusCodeName(Code code);

class [[nodiscard]] ClientStatus : public rdma::BasicStatus<Code> {
 public:
  using BasicStatus::BasicStatus;
};

template <typename T>
using ClientResult = rdma::BasicResult<T, ClientStatus>;

enum class TransportKind { kAuto, kRdma, kTcp };
enum class OpenMode { kWriter, kReadOnly };

struct ClusterConfig {
  std::vector<std::string> nodes;  // "host:port" or "scheme://host:port"
  TransportKind transport = TransportKind::kAuto;
  std::size_t write_quorum = 2;    // W; N = nodes.size(); requires W > N/2
  std::string cluster_id = "strata";
  std::string secret;              // shared secret (read it from a file; never log it)
  OpenMode mode = OpenMode::kWriter;
  std::uint64_t max_inflight_bytes = 64ull << 20;  // stream_end - durable_lsn cap (backpressure)
  // Write requests (AppendReq, TailReq) one node may have unanswered. While
  // a node has this many, writes smaller than a request wait in the client
  // and leave together, as ONE request, when the node answers (its first
  // reply: "written" if asked for, else durable); the node would have synced
  // them in one group anyway. 0: no holding, every write leaves at once (one
  // request per write per node). Only when requests leave changes, never what
  // counts as durable (docs/design/logservice-bulk-path.md, section 6).
  std::size_t node_requests_in_flight = 1;
  std::chrono::milliseconds open_timeout{10000};
  std::chrono::milliseconds op_timeout{3000};      // one request to one node
  std::chrono::milliseconds reconnect_interval{200};
  std::uint64_t seed = 0;  // writer-id randomness; 0 = nondeterministic
  // kWriter only: seal the log at min(durable end, seal_at), so every node
  // cuts what lies after it, even bytes a quorum acknowledged, and there is no
  // recovered tail. For a caller whose own recovery found the log unusable
  // past that point and must write there again (InnoDB: a torn mtr inside
  // the last complete blocks). Unset: the durable end, as always.
  std::optional<Lsn> seal_at;
  std::function<void(Lsn durable)> on_durable;     // I/O thread; must not block
  std::function<void(std::string_view line)> log;  // "event=... key=value"; thread-safe
  // Test seams (docs/design/logservice-simulation.md); null: the defaults.
  // Threads, waits, clock and entropy: SystemRuntime().
  std::shared_ptr<Runtime> runtime;
  // How the nodes are reached: an rdma::Transport (`transport`, cluster_id,
  // secret). Must run on `runtime`; the client drops its references when
  // it is destroyed.
  std::shared_ptr<Network> network;
};

struct NodeInfo {
  std::string address;
  bool connected = false;
  bool sealed = false;  // promised + sealed in our epoch (writer) / source (reader)
  Lsn durable = 0;      // as last reported by the node
  std::string last_error;
  // Lost its storage and is rebuilding from peers: counts toward no quorum
  // (docs/design/logservice-node-rebuild.md).
  bool rebuilding = false;
};

struct ClusterStatus {
  Epoch epoch = 0;
  Lsn stream_end = 0;
  Lsn durable_lsn = 0;
  std::size_t healthy = 0;  // connected, sealed and a member (not rebuilding)
  std::size_t write_quorum = 0;
  bool fenced = false;
  std::string reason;       // empty when healthy >= W and not fenced
  std::vector<NodeInfo> nodes;
};

struct CheckpointRecord {
  Lsn lsn = 0;
  Epoch epoch = 0;
  std::string metadata;
};

struct PageImage {
  Lsn lsn = 0;  // version LSN
  std::string image;
};

// Latencies of the write path in fixed buckets: bucket b counts samples in
// [2^b, 2^(b+1)) microseconds (bucket 0 also takes everything below 1 us;
// the last bucket everything from 2^(kBuckets-1) us, about 0.5 s, up).
// Enough for a p50/p99 within a factor of two; a difference of two
// snapshots is the histogram of the interval between them.
struct LatencyHistogram {
  static constexpr int kBuckets = 20;
  std::uint64_t counts[kBuckets] = {};
  static int BucketOf(std::uint64_t ns) {
    std::uint64_t us = ns / 1000;
    int b = 0;
    while (us > 1 && b < kBuckets - 1) {
      us >>= 1;
      ++b;
    }
    return b;
  }
};

// Counters of the write path since Open, kept anyway on the path (one
// clock read at each boundary, relaxed atomic adds): what the status
// variables Innodb_log_service_client_* show and what the commit-anatomy
// benchmark subtracts between two snapshots. Every field only grows; sums
// are nanoseconds. A "group" is one Append or PutTail with bytes (InnoDB:
// one log write); its clock starts when the call has queued it.
struct WriteStats {
  std::uint64_t appends = 0, tails = 0;
  std::uint64_t window_wait_ns = 0;  // Append blocked on max_inflight_bytes (backpressure)
  std::uint64_t posts = 0, post_ns = 0;  // messages handed to a node's transport, time inside Post
  // Write requests that carried the bytes of more than one write call
  // (Append, PutTail, AppendWithTail) coalesced while the node had requests
  // unanswered (ClusterConfig::node_requests_in_flight), summed over nodes,
  // and the write calls they carried.
  std::uint64_t coalesced_posts = 0, coalesced_writes = 0;
  // Group -> the first / second node reporting its end durable, and ->
  // the quorum frontier (durable_lsn) covering it. Counts are the groups
  // measured (a group superseded by a later one before its ack counts once
  // the later one's does, with its own, longer, time).
  std::uint64_t first_acks = 0, first_ack_ns = 0;
  std::uint64_t second_acks = 0, second_ack_ns = 0;
  std::uint64_t durable_groups = 0, durable_ns = 0;
  LatencyHistogram durable_hist;
  // WaitDurable calls that had to block, their time, how often the waiter
  // woke up inside them (a wake-up that found durable_lsn still short counts
  // too), and the time from the frontier's last advance to the waiter
  // running again (the hand-off from the I/O thread to the waiting thread).
  std::uint64_t waits = 0, wait_ns = 0, wait_wakeups = 0, wake_ns = 0;
};

class LogClient {
 public:
  static ClientResult<std::unique_ptr<LogClient>> Open(ClusterConfig config);
  ~LogClient();
  LogClient(const LogClient&) = delete;
  LogClient& operator=(const LogClient&) = delete;

  Epoch epoch() const;
  // After Open: end of the recovered log (stream end, or the tail's data_end).
  Lsn sealed_end() const;
  // Next LSN Append() expects (end of the immutable stream).
  Lsn stream_end() const;
  Lsn durable_lsn() const;

  // Appends [start_lsn, start_lsn + bytes.size()); start_lsn must equal
  // stream_end(). Copies the bytes. Blocks up to `wait` while the in-flight
  // window is full (then kUnavailable/kTimeout and nothing was appended).
  ClientStatus Append(Lsn start_lsn, std::string_view bytes,
                      std::chrono::milliseconds wait = std::chrono::milliseconds(10000));
  // Sets the overwritable tail image for block_lsn == stream_end(); its
  // meaningful bytes end at data_end (block_lsn < data_end <= block_lsn + image.size()).
  ClientStatus PutTail(Lsn block_lsn, std::string_view image, Lsn data_end);
  // Append(start_lsn, blocks) then PutTail(start_lsn + blocks.size(), image,
  // data_end), as one call: each node gets them as one message, written to
  // its journal together and made durable by one fdatasync (InnoDB's log
  // writer: a write that completed blocks and left a partial one). The tail
  // is checked first; on any error nothing was appended or set.
  ClientStatus AppendWithTail(Lsn start_lsn, std::string_view blocks, std::string_view image, Lsn data_end,
                              std::chrono::milliseconds wait = std::chrono::milliseconds(10000));
  // Blocks until durable_lsn() >= lsn, fenced, or timeout.
  ClientStatus WaitDurable(Lsn lsn, std::chrono::milliseconds timeout);
  // Below written_lsn() a write quorum of nodes holds the bytes in their log
  // files, written but maybe not yet fdatasync'ed (the tail counts once
  // durable): they survive this process's crash, and a node's crash, but
  // not the loss of the nodes' hosts. Never below durable_lsn(). What
  // innodb_flush_log_at_trx_commit=2 waits for.
  Lsn written_lsn() const;
  // Whether appends from now on ask the nodes for the early "written" reply
  // that written_lsn() counts (default: yes). Without it written_lsn()
  // advances with durable acknowledgements only, so WaitWritten still
  // returns, at the durable point; a writer that never waits for written
  // (InnoDB under innodb_flush_log_at_trx_commit=1) saves a reply per
  // append per node.
  void set_written_acks(bool on);
  // Changes the in-flight window (ClusterConfig::max_inflight_bytes) from
  // now on: an Append waiting for room is woken to test the new size.
  // Values below 1 MiB are taken as 1 MiB (an InnoDB write fits).
  void set_max_inflight_bytes(std::uint64_t bytes);
  // Blocks until written_lsn() >= lsn, fenced, or timeout.
  ClientStatus WaitWritten(Lsn lsn, std::chrono::milliseconds timeout);

  // Durable log from `from` on, at most max_bytes (a short result ends at the
  // durable end; empty at the end). Bytes at/after the stream end come from
  // the tail image (the whole image, whose data ends at its data_end).
  // One round trip per call; a sequential reader goes faster through
  // LogReadAhead (read_ahead.h), which keeps several of them in flight.
  ClientResult<std::string> Read(Lsn from, std::size_t max_bytes);

  // Frees the log below `lsn` on every node sealed in this epoch (each caps
  // it at its stored checkpoint and its own log): bounds the nodes' disk use.
  // Never beyond the blocks W nodes hold durably (a tail register's bytes
  // are not released with a checkpoint inside its block); a later call
  // releases the rest.
  // Synchronous (one round trip); ok once W nodes applied it.
  ClientStatus Release(Lsn lsn);

  ClientResult<CheckpointRecord> ReadCheckpoint();          // kNotFound: empty volume
  ClientStatus WriteCheckpoint(Lsn lsn, std::string_view metadata);  // W nodes, durable
  ClientStatus PutPage(std::uint32_t space, std::uint32_t page, Lsn lsn, std::string_view image);
  ClientResult<PageImage> GetPage(std::uint32_t space, std::uint32_t page, Lsn lsn);

  ClusterStatus status() const;
  // Write-path counters since Open (see WriteStats). Lock-free, cheap.
  WriteStats write_stats() const;

  struct Impl;

 private:
  friend class LogReadAhead;  // read_ahead.h: Read's requests, kept in flight
  explicit LogClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::logservice::client
