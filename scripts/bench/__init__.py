"""strata-bench: sysbench 1.0.20 scenarios run side by side on stock MySQL and the fork.

Modules, in the order a run uses them:
- scenarios.py  scenarios (sysbench script + options), datasets scaled to the pool, presets
- targets.py    `flavor:opt=value` targets, the common my.cnf, dataset marker files
- plan.py       points x targets in alternating order; what the servers must allow
- runner.py     servers one at a time, sysbench per point, progress, clean-up on signals
- sysbench.py   sysbench command lines and the parser of its report
- report.py     points.csv, results.md, PNG plots, machine facts
- servers.py    the real server (strata_tools.mysqld.MysqldInstance)
- cli.py        the command line (scripts/strata-bench runs it through __main__.py)
- tools.py      programs the scripts here need, and the set-up that installs each
- lua/          our own sysbench scripts (mixes the bundled ones lack)
Tests: python3 -m unittest discover -s scripts/bench/tests (seconds, no server needed).
"""
