// Oracle: the simulator's invariants (docs/design/logservice-simulation.md,
// section 6). It hears what writers were told (claims), what they recovered,
// and every message each process sent (SimNetwork::tap), and reports the
// first violation to the Scheduler (Fail), which stops the run.
//
//   1. acknowledged bytes never change: every claim agrees with every other;
//   2. nothing acknowledged is lost: a writer's recovered log holds every
//      claim of every writer with a lower epoch, whichever came first;
//   3. no node serves truncated or forged bytes: a ReadResp sent under seal
//      epoch E carries, at or after E's seal LSN, only the bytes of E's
//      writer, and below it bytes that agree with the claims of lower epochs;
//   4. epochs only grow: every promised and seal epoch a node reports (in a
//      reply header, in a NodeState, or to the simulation directly) is at
//      least the highest it reported before, across crashes (not across a
//      lost disk: NodeWiped); no two writers hold one epoch.
//
// Writer generation g writes, at LSN l, the byte GenByte(g, l): every byte
// can be checked against the generation that should have written it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "scheduler.h"
#include "strata/logservice/types.h"

namespace strata::logservice::sim {

char GenByte(int gen, Lsn lsn);
std::string GenBytes(int gen, Lsn from, std::size_t n);

class Oracle {
 public:
  explicit Oracle(Scheduler& s, bool check_reply_epochs = true) : s_(s), check_reply_epochs_(check_reply_epochs) {}

  // ---- who is who ----
  void AddWriterProcess(int process, int gen) { gen_of_process_[process] = gen; }
  void AddNodeProcess(int process, int node) { node_of_process_[process] = node; }

  // ---- writers ----
  void Opened(int gen, Epoch epoch);
  void Recovered(int gen, const std::string& log);
  // `gen` learned that [0, durable) is durable; `content` is its view of the
  // log (recovered bytes + its own), at least `durable` long.
  void Claim(int gen, Lsn durable, std::string_view content);

  // ---- nodes ----
  void NodeEpochs(int node, Epoch promised, Epoch seal, const char* where);
  // The node's disk was replaced by an empty one: it forgot its epochs
  // legitimately (invariant 4 holds across crashes, not across lost disks;
  // such a node counts toward no quorum until rebuilt).
  void NodeWiped(int node) { node_max_.erase(node); }
  // Every message a process sent (decoded only as far as a check needs).
  void OnSend(int from, int to, std::uint64_t link, std::string_view payload);

  Lsn committed_size() const { return committed_.size(); }
  const std::string& committed() const { return committed_; }
  std::size_t claims() const { return claims_; }

 private:
  struct Gen {
    Epoch epoch = 0;
    bool opened = false;
    bool recovered = false;
    std::string log;      // what it recovered
    std::string claimed;  // the bytes it was told are durable, [0, claimed.size())
  };
  struct Seal {
    int gen = -1;
    Lsn lsn = 0;
  };
  Gen& G(int gen) { return gens_[gen]; }
  std::string Who(int gen) const;
  // Highest claim of any writer with an epoch below `e`.
  Lsn ClaimedBelow(Epoch e) const;
  void CheckRecoveryHolds(int h, int g);
  void CheckServed(int node, Epoch seal_epoch, Lsn start, std::string_view bytes);

  Scheduler& s_;
  bool check_reply_epochs_;
  std::map<int, Gen> gens_;
  std::map<int, int> gen_of_process_, node_of_process_;
  std::map<Epoch, int> epoch_owner_;      // opened writers
  std::map<Epoch, Seal> seals_;           // from SealReq messages
  std::map<int, std::pair<Epoch, Epoch>> node_max_;  // node -> highest (promised, seal) reported
  std::map<std::pair<std::uint64_t, std::uint64_t>, Epoch> read_seal_;  // (link, request id) -> ReadReq seal epoch
  std::string committed_;  // the longest claim (all claims agree)
  int committed_by_ = -1;
  std::size_t claims_ = 0;
};

}  // namespace strata::logservice::sim
