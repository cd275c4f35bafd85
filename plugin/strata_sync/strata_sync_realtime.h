/* Strata strong sync: realtime scheduling for the threads on a commit's
   acknowledgement path.

   Why. A strong-sync commit waits for a round trip through three threads:
   the source's dump thread sends the group, the replica's receiver writes
   it to the relay log and acknowledges, the source's ack reader reads the
   ack and wakes the group. Each does a few microseconds of work per
   wake-up. On a host whose CPUs are busy with sessions (or, as in our
   benchmarks, shared with the replica and the clients) each of them first
   waits for a CPU behind every runnable session thread: measured here, an
   ack round trip of 3.7-30 ms of which the replica's own work was
   0.5-1.5 ms (docs/benchmarks/strong-sync-2026-11-23.md). A nice value
   does not help (renice -10 was measured: no gain), because it changes a
   thread's share of the CPU, not how soon it runs after a wake-up. A
   SCHED_RR thread runs as soon as it is woken, ahead of every normal
   thread. These threads sleep almost all the time, so they take little
   CPU from the sessions, and the kernel's realtime throttling
   (sched_rt_runtime_us, 95% of each period by default) bounds a thread
   that would not sleep.

   Contract. A ThreadPriority belongs to one thread and is used only by it
   (not thread-safe). set_realtime(true) moves the calling thread to
   SCHED_RR at kRealtimePriority, with SCHED_RESET_ON_FORK so that threads
   it creates (a thread pool worker may create workers) start as normal
   threads, and remembers the policy it had; set_realtime(false) restores
   that policy. Both return 0 or an errno: EPERM when the process may not
   use realtime policies (no CAP_SYS_NICE, RLIMIT_RTPRIO 0, or a cgroup
   without realtime runtime); the thread then stays as it was.

   Pure POSIX/Linux, no MySQL headers: unit tested in
   tests/realtime_test.cc. */
#ifndef STRATA_SYNC_REALTIME_H
#define STRATA_SYNC_REALTIME_H

#include <sched.h>

#include <cerrno>

namespace strata::sync {

class ThreadPriority {
 public:
  /* The lowest realtime priority: ahead of every normal thread, behind
     every realtime thread of the system (kernel threads, watchdogs). */
  static constexpr int kRealtimePriority = 1;

  bool realtime() const { return m_raised; }

  [[nodiscard]] int set_realtime(bool on) {
    if (on == m_raised) return 0;
    if (on) {
      const int policy = sched_getscheduler(0);  // 0: the calling thread
      sched_param saved{};
      if (policy < 0 || sched_getparam(0, &saved) != 0) return errno;
      sched_param rt{};
      rt.sched_priority = kRealtimePriority;
      if (sched_setscheduler(0, SCHED_RR | SCHED_RESET_ON_FORK, &rt) != 0)
        return errno;
      m_saved_policy = policy & ~SCHED_RESET_ON_FORK;
      m_saved_param = saved;
      m_raised = true;
      return 0;
    }
    if (sched_setscheduler(0, m_saved_policy, &m_saved_param) != 0)
      return errno;
    m_raised = false;
    return 0;
  }

 private:
  bool m_raised = false;
  int m_saved_policy = SCHED_OTHER;
  sched_param m_saved_param{};
};

}  // namespace strata::sync

#endif  // STRATA_SYNC_REALTIME_H
