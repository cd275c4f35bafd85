"""audit_cycles.py: which perf samples count as the audit plugin's cost."""
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench import audit_cycles as ac  # noqa: E402

MYSQLD = "(/x/bin/mysqld)"
PLUGIN = "(/x/plugin/strata_audit.so)"
KERNEL = "([kernel.kallsyms])"

# Five samples as `perf script -F comm,tid,ip,sym,dso` prints them: a query in
# the executor, a session inside the plugin, the writer formatting, the
# writer's writev with its chain cut at libc, the idle task.
PERF_SCRIPT = f"""connection  3256 
\t          e9c747 THD::inc_sent_row_count {MYSQLD}
\t          f47616 do_command {MYSQLD}

connection  3256 
\t           27d36 strata_audit::AuditLog::append {PLUGIN}
\t           b49d (anonymous namespace)::notify_general {PLUGIN}
\t          f47616 do_command {MYSQLD}

mysqld  3097 
\t           21dd5 strata_audit::append_json_chars {PLUGIN}
\t           28079 strata_audit::AuditLog::writer_main {PLUGIN}

mysqld  3097 
\tffffffff815a0814 generic_perform_write {KERNEL}
\t           fde9d __GI___writev (/usr/lib/libc.so.6)

swapper     0 
\tffffffff81000000 default_idle {KERNEL}
"""  # noqa: W291 (perf ends each sample's header line with a space)


class Classify(unittest.TestCase):
    def test_parse_keeps_comm_tid_and_frames(self):
        samples = list(ac.parse_perf_script(PERF_SCRIPT))
        self.assertEqual([(c, t) for c, t, _ in samples],
                         [("connection", 3256), ("connection", 3256), ("mysqld", 3097), ("mysqld", 3097),
                          ("swapper", 0)])
        self.assertEqual(len(samples[1][2]), 3)

    def test_counts(self):
        c = ac.classify(ac.parse_perf_script(PERF_SCRIPT))
        self.assertEqual(c["total"], 5)
        self.assertEqual(c["idle"], 1)
        self.assertEqual(c["session"], 1)
        # The writev sample has no plugin frame: it counts by its thread.
        self.assertEqual(c["writer"], 2)

    def test_server_dispatch_counts_as_session(self):
        text = f"connection  7 \n\t 1 mysql_audit_acquire_plugins {MYSQLD}\n\t 2 do_command {MYSQLD}\n"
        self.assertEqual(ac.classify(ac.parse_perf_script(text))["session"], 1)


if __name__ == "__main__":
    unittest.main()
