// Unit tests of the ack path's realtime scheduling (strata_sync_realtime.h):
// raising and restoring the calling thread, threads it creates starting as
// normal threads, and a refusal leaving the thread as it was.
#include "strata_sync_realtime.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <thread>

using strata::sync::ThreadPriority;

namespace {

int policy_of_this_thread() {
  return sched_getscheduler(0) & ~SCHED_RESET_ON_FORK;
}

}  // namespace

TEST(StrataSyncRealtime, RaisesAndRestoresTheCallingThread) {
  std::thread t([] {
    ThreadPriority prio;
    ASSERT_EQ(policy_of_this_thread(), SCHED_OTHER);
    const int err = prio.set_realtime(true);
    if (err == EPERM) GTEST_SKIP() << "realtime policies not permitted here";
    ASSERT_EQ(err, 0);
    EXPECT_TRUE(prio.realtime());
    EXPECT_EQ(policy_of_this_thread(), SCHED_RR);
    sched_param p{};
    ASSERT_EQ(sched_getparam(0, &p), 0);
    EXPECT_EQ(p.sched_priority, ThreadPriority::kRealtimePriority);
    EXPECT_EQ(prio.set_realtime(true), 0);  // already raised: no change
    ASSERT_EQ(prio.set_realtime(false), 0);
    EXPECT_FALSE(prio.realtime());
    EXPECT_EQ(policy_of_this_thread(), SCHED_OTHER);
  });
  t.join();
  // Only that thread was moved.
  EXPECT_EQ(policy_of_this_thread(), SCHED_OTHER);
}

// A thread pool worker that serves a dump thread may create workers while
// it runs at realtime priority; they must not inherit it.
TEST(StrataSyncRealtime, ThreadsCreatedMeanwhileStartNormal) {
  std::thread t([] {
    ThreadPriority prio;
    const int err = prio.set_realtime(true);
    if (err == EPERM) GTEST_SKIP() << "realtime policies not permitted here";
    ASSERT_EQ(err, 0);
    int child_policy = -1;
    std::thread child([&] { child_policy = policy_of_this_thread(); });
    child.join();
    EXPECT_EQ(child_policy, SCHED_OTHER);
    ASSERT_EQ(prio.set_realtime(false), 0);
  });
  t.join();
}

TEST(StrataSyncRealtime, LoweringWhenNotRaisedDoesNothing) {
  ThreadPriority prio;
  EXPECT_EQ(prio.set_realtime(false), 0);
  EXPECT_FALSE(prio.realtime());
  EXPECT_EQ(policy_of_this_thread(), SCHED_OTHER);
}

// Without the right to use realtime policies the call says EPERM and the
// thread keeps its policy. The child process gives up that right (an
// unprivileged user with RLIMIT_RTPRIO 0) before trying.
TEST(StrataSyncRealtime, RefusalLeavesTheThreadAsItWas) {
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    rlimit none{0, 0};
    if (setrlimit(RLIMIT_RTPRIO, &none) != 0) _exit(10);
    if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0))
      _exit(11);
    ThreadPriority prio;
    const int err = prio.set_realtime(true);
    if (err != EPERM) _exit(12);
    if (prio.realtime()) _exit(13);
    if (policy_of_this_thread() != SCHED_OTHER) _exit(14);
    if (prio.set_realtime(false) != 0) _exit(15);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "child failed at step "
                                    << WEXITSTATUS(status);
}
