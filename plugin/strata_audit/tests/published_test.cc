#include "published.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace strata_audit {
namespace {

TEST(Published, ReadersSeeEachPublish) {
  Published<int> p;
  EXPECT_EQ(p.read(), nullptr);
  p.publish(std::make_shared<const int>(1));
  EXPECT_EQ(*p.read(), 1);
  p.publish(std::make_shared<const int>(2));
  EXPECT_EQ(*p.read(), 2);
  p.publish(nullptr);
  EXPECT_EQ(p.read(), nullptr);
}

TEST(Published, TwoInstancesDoNotShareACache) {
  Published<int> a, b;
  a.publish(std::make_shared<const int>(1));
  b.publish(std::make_shared<const int>(2));
  EXPECT_EQ(*a.read(), 1);
  EXPECT_EQ(*b.read(), 2);
  EXPECT_EQ(*a.read(), 1);
}

TEST(Published, ConcurrentReadersNeverSeeAnOlderValueAfterAPublishReturned) {
  Published<int> p;
  p.publish(std::make_shared<const int>(0));
  std::atomic<int> published{0};
  std::atomic<bool> stop{false}, wrong{false};
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t)
    readers.emplace_back([&] {
      while (!stop.load()) {
        const int floor = published.load(std::memory_order_acquire);
        if (*p.read() < floor) wrong = true;
      }
    });
  for (int i = 1; i <= 2000; ++i) {
    p.publish(std::make_shared<const int>(i));
    published.store(i, std::memory_order_release);
  }
  stop = true;
  for (auto &t : readers) t.join();
  EXPECT_FALSE(wrong.load());
  EXPECT_EQ(*p.read(), 2000);
}

}  // namespace
}  // namespace strata_audit
