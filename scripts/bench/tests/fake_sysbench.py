#!/usr/bin/env python3
"""A stand-in for sysbench 1.0.20 in the tests: same output layout, no database.

Behaviour from the environment:
  FAKE_SB_MODE     ok (default) | fatal (FATAL line, exit 1) | hang (never ends)
  FAKE_SB_TICK     seconds per simulated second (default 0.01)
  FAKE_SB_PIDS     a file to which each invocation appends its pid, command and
                   scheduling policy (policy=N, os.SCHED_*)
  FAKE_SB_ARGS     a file to which each invocation appends its arguments (JSON)
"""
import json
import os
import sys
import time


def opt(name, default=None):
    for a in sys.argv[1:]:
        if a.startswith(f"--{name}="):
            return a.split("=", 1)[1]
    return default


def main():
    mode = os.environ.get("FAKE_SB_MODE", "ok")
    tick = float(os.environ.get("FAKE_SB_TICK", "0.01"))
    if os.environ.get("FAKE_SB_PIDS"):
        with open(os.environ["FAKE_SB_PIDS"], "a") as f:
            f.write(f"{os.getpid()} {sys.argv[-1]} policy={os.sched_getscheduler(0)}\n")
    if sys.argv[1:] == ["--version"]:
        print("sysbench 1.0.20")
        return 0
    if os.environ.get("FAKE_SB_ARGS"):
        with open(os.environ["FAKE_SB_ARGS"], "a") as f:
            f.write(json.dumps(sys.argv[1:]) + "\n")
    print("sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)\n", flush=True)
    command = sys.argv[-1]
    tables = int(opt("tables", "1"))
    if command == "prepare":
        for i in range(1, tables + 1):
            print(f"Creating table 'sbtest{i}'...\nInserting 100 records into 'sbtest{i}'\n"
                  f"Creating a secondary index on 'sbtest{i}'...", flush=True)
        return 0
    if command == "prewarm":
        for i in range(1, tables + 1):
            print(f"Prewarming table sbtest{i}", flush=True)
        return 0
    threads = int(opt("threads", "1"))
    total = int(opt("time", "10"))
    checkpoint = int(opt("report-checkpoints", "0") or 0)
    print(f"Running the test with following options:\nNumber of threads: {threads}\n"
          "Initializing random number generator from current time\n\n\n"
          "Initializing worker threads...\n\nThreads started!\n", flush=True)
    if mode == "fatal":
        print("FATAL: mysql_stmt_prepare() failed\n"
              "FATAL: MySQL error: 1461 \"Can't create more than max_prepared_stmt_count statements "
              "(current value: 16382)\"", flush=True)
        return 1
    second = 0
    while mode == "hang" or second < total:
        time.sleep(tick)
        second += 1
        print(f"[ {second}s ] thds: {threads} tps: {100.0 * threads:.2f} qps: {1000.0 * threads:.2f} "
              f"(r/w/o: {1000.0 * threads:.2f}/0.00/0.00) lat (ms,99%): 1.96 err/s: 0.00 reconn/s: 0.00",
              flush=True)
        if second == checkpoint:
            print(f"[ {second}s ] Checkpoint report:\nSQL statistics:\n    queries performed:\n"
                  f"        read:                            10\n        write:                           0\n"
                  f"        other:                           0\n        total:                           10\n"
                  f"    transactions:                        1      (999.00 per sec.)\n"
                  f"    queries:                             10     (9999.00 per sec.)\n"
                  f"    ignored errors:                      0      (0.00 per sec.)\n"
                  f"    reconnects:                          0      (0.00 per sec.)\n", flush=True)
    measured = total - checkpoint
    tx = 100 * threads * measured
    print("Latency histogram (values are in milliseconds)\n"
          "       value  ------------- distribution ------------- count\n"
          f"       0.508 |**************************************** {tx - tx // 10}\n"
          f"       1.007 |****                                     {tx // 10 - tx // 50}\n"
          f"       1.960 |*                                        {tx // 50}\n \n"
          "SQL statistics:\n    queries performed:\n"
          f"        read:                            {tx * 10}\n        write:                           0\n"
          f"        other:                           0\n        total:                           {tx * 10}\n"
          f"    transactions:                        {tx}  ({100.0 * threads:.2f} per sec.)\n"
          f"    queries:                             {tx * 10}  ({1000.0 * threads:.2f} per sec.)\n"
          "    ignored errors:                      0      (0.00 per sec.)\n"
          "    reconnects:                          0      (0.00 per sec.)\n\n"
          f"General statistics:\n    total time:                          {total}.0012s\n"
          f"    total number of events:              {tx}\n\n"
          "Latency (ms):\n         min:                                    0.30\n"
          "         avg:                                    0.62\n         max:                                    9.87\n"
          "         99th percentile:                        1.96\n         sum:                                 1234.56\n\n"
          "Threads fairness:\n    events (avg/stddev):           100.0000/0.00\n"
          "    execution time (avg/stddev):   1.0000/0.00\n", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
