// The phase clock (decoding/common/phase_clock.h): laps are the intervals between marks, a charge splits its lap
// equally over its rows when the clock settles, a phase that never ran still names its entry; on a GPU the
// laps are CUDA events and measure the device's work (skipped visibly without one).
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "core/device.h"
#include "decoding/common/iteration_stats.h"

namespace vispec {

TEST(PhaseClock, LapsAreChargedSplitAcrossRowsWhenTheClockSettles) {
  PhaseClock clock(torch::kCPU);
  DecodeRequest request;  // three samples on three rows: row b holds sample b
  request.conditions = class_conditions({0, 1, 2});
  request.sample_ids = {0, 1, 2};
  DecodeState rows(request, 16, 0, torch::kCPU);
  auto& stats = rows.stats;
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const Lap first = clock.lap();
  clock.restart();  // what comes between restart() and the next lap is the next phase only
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  IterationTimes times;
  times.verify = clock.lap();
  charge_iteration(clock, rows, {0, 2}, times, /*draft_forwards=*/2);
  clock.charge(first, all_rows(3), &SampleStats::bookkeeping_ms);
  clock.charge(Lap{}, {1}, "never_ran_ms");
  // Forward counts are immediate; times wait for settle().
  EXPECT_EQ(stats[0].target_forwards, 1);
  EXPECT_EQ(stats[2].draft_forwards, 2);
  EXPECT_EQ(stats[1].target_forwards, 0);
  EXPECT_EQ(stats[0].verify_ms, 0.0);
  clock.settle(stats);
  EXPECT_GE(stats[0].verify_ms, 5.0);  // half of >= 10 ms
  EXPECT_EQ(stats[0].verify_ms, stats[2].verify_ms);
  EXPECT_EQ(stats[1].verify_ms, 0.0);
  EXPECT_GE(stats[1].bookkeeping_ms * 3, 20.0);
  EXPECT_EQ(stats[1].extra.at("never_ran_ms"), 0.0);
  EXPECT_EQ(stats[0].draft_ms, 0.0);  // a phase the iteration did not end
  const double before = stats[0].verify_ms;
  clock.settle(stats);  // charges are applied once
  EXPECT_EQ(stats[0].verify_ms, before);
}

TEST(PhaseClock, OnCudaLapsAreDeviceTimeBetweenEvents) {
  if (!cuda_usable())
    GTEST_SKIP()
        << "no CUDA device here: the CUDA case is skipped (scripts/gpu_check.sh runs the suite on a GPU machine)";
  const torch::Device device(torch::kCUDA, 0);
  const auto a = torch::randn({2048, 2048}, torch::TensorOptions().device(device));
  PhaseClock clock(device);
  std::vector<SampleStats> stats(1);
  for (int i = 0; i < 20; ++i) a.matmul(a);  // queued: the host returns long before the device is done
  clock.charge(clock.lap(), {0}, &SampleStats::verify_ms);
  const auto t0 = std::chrono::steady_clock::now();
  clock.settle(stats);  // waits for the last event
  const double wait_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GT(stats[0].verify_ms, 0.0);
  std::cout << "20 matmuls of 2048^2: " << stats[0].verify_ms << " ms on the device; settle waited " << wait_ms
            << " ms\n";
}

}  // namespace vispec
