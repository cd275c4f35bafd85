-- Strata: a point-select / index-update mix in one transaction, for sysbench 1.0.20.
--
-- Each event is one transaction on one table picked at random:
--   BEGIN; point_selects x "SELECT c ... WHERE id=?"; index_updates x
--   "UPDATE ... SET k=k+1 WHERE id=?"; COMMIT
-- Defaults give the 4 reads : 1 write mix (--point_selects=4 --index_updates=1);
-- --point_selects=1 gives the "hybrid" run (1 point select + 1 index update).
-- With --mix_same_row=on the updates hit the row the last select read (the
-- read-then-write pattern of an application); by default ids are drawn
-- independently, like the bundled oltp_read_write.lua.
--
-- It reuses the table layout, prepare/prewarm/cleanup commands and statement
-- definitions of the bundled oltp_common.lua (found through sysbench's own Lua
-- path, /usr/share/sysbench), so data prepared for any bundled OLTP script
-- serves this one too. --skip_trx=on runs the statements in autocommit mode.

require("oltp_common")

sysbench.cmdline.options.point_selects[2] = 4
sysbench.cmdline.options.index_updates[2] = 1
sysbench.cmdline.options.mix_same_row =
   {"Index updates hit the row read by the last point select", false}

function prepare_statements()
   if not sysbench.opt.skip_trx then
      prepare_begin()
      prepare_commit()
   end
   prepare_point_selects()
   prepare_index_updates()
end

function event()
   local tnum = sysbench.rand.uniform(1, sysbench.opt.tables)
   local id = sysbench.rand.default(1, sysbench.opt.table_size)

   if not sysbench.opt.skip_trx then
      begin()
   end

   for i = 1, sysbench.opt.point_selects do
      id = sysbench.rand.default(1, sysbench.opt.table_size)
      param[tnum].point_selects[1]:set(id)
      stmt[tnum].point_selects:execute()
   end

   for i = 1, sysbench.opt.index_updates do
      if not sysbench.opt.mix_same_row then
         id = sysbench.rand.default(1, sysbench.opt.table_size)
      end
      param[tnum].index_updates[1]:set(id)
      stmt[tnum].index_updates:execute()
   end

   if not sysbench.opt.skip_trx then
      commit()
   end
end
