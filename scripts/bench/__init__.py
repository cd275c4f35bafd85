"""strata-bench: sysbench 1.0.20 scenarios run side by side on stock MySQL and the fork.

Modules, in the order a run uses them:
- scenarios.py  scenarios (sysbench script + options), datasets scaled to the pool, presets
- targets.py    `flavor:opt=value` targets, the common my.cnf, dataset marker files
- plan.py       points x targets in alternating order; what the servers must allow
- runner.py     servers one at a time, sysbench per point (run_sysbench: the one way any
                subcommand runs sysbench, raw output kept), progress, clean-up on signals
- sysbench.py   sysbench command lines and the parser of its report
- stats.py      the one statistic: mean over rounds, 95% interval (Student's t), verdicts
- report.py     points.csv, results.md, PNG plots (means, intervals, rounds), machine facts
- servers.py    the real server (strata_tools.mysqld.MysqldInstance)
- lock.py       the machine's benchmark lock, taken by every subcommand that runs servers
- kind.py       what a subcommand built on the runner changes (runner class, page sections)
- interleave.py, cost.py, audit.py   subcommands on the plan runner (servers side by side;
                CPU per query; audit policies at runtime and perf cycle shares)
- replication.py  async / semisync / strong sync with a source and a replica
- commit_anatomy.py  one commit's latency by stage
- netns.py      client-netns: a stand-in client machine for --client-ssh
- cli.py        the command line (scripts/strata-bench runs it through __main__.py)
- tools.py      programs the scripts here need, and the set-up that installs each
- lua/          our own sysbench scripts (mixes the bundled ones lack)
Tests: python3 -m unittest discover -s scripts/bench/tests (seconds, no server needed).
"""
