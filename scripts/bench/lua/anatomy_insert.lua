-- One autocommit single-row INSERT per event: every event is one commit, so
-- sysbench's latency is one commit's latency (parse, insert, redo, commit).
-- Used by `scripts/strata-bench anatomy` (scripts/bench/commit_anatomy.py),
-- which creates the table anatomy.t before the first run.
local pad = string.rep("x", 100)

function thread_init()
  drv = sysbench.sql.driver()
  con = drv:connect()
end

function thread_done()
  con:disconnect()
end

function event()
  con:query("INSERT INTO t (k, pad) VALUES (" .. sysbench.rand.uniform(1, 1000000) .. ", '" .. pad .. "')")
end
