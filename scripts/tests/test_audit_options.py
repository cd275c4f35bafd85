"""Unit tests of scripts/strata_tools/audit.py (run by tier 1 with the bench tests' runner)."""
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from strata_tools import audit  # noqa: E402


class AuditOptionsTest(unittest.TestCase):
    def test_loads_plugin_with_policy(self):
        o = audit.with_audit({}, "LOGINS")
        self.assertEqual(o["plugin-load-add"], "strata_audit.so")
        self.assertEqual(o["loose-audit-log-policy"], "LOGINS")
        self.assertEqual(audit.policy_of(o), "LOGINS")

    def test_keeps_other_plugins(self):
        o = audit.with_audit({"plugin-load-add": "strata_sync_source.so", "server-id": "1"}, "ALL")
        self.assertEqual(o["plugin-load-add"], "strata_sync_source.so;strata_audit.so")
        self.assertEqual(o["server-id"], "1")

    def test_none_is_unchanged(self):
        self.assertEqual(audit.with_audit({"a": "b"}, None), {"a": "b"})
        self.assertIsNone(audit.policy_of({}))

    def test_bad_policy(self):
        with self.assertRaises(ValueError):
            audit.audit_options("SOME")


if __name__ == "__main__":
    unittest.main()
