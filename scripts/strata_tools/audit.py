"""The audit log plugin (plugin/strata_audit, docs/audit_log.md) as mysqld options.

`strata-cluster up --audit[=POLICY]` starts mysqld with the plugin loaded and
the log in the data directory (audit.log, JSON lines, asynchronous writer).
"""

PLUGIN_LIBRARY = "strata_audit.so"
POLICIES = ("ALL", "LOGINS", "QUERIES", "NONE")
POLICY_OPTION = "loose-audit-log-policy"


def audit_options(policy: str = "ALL") -> dict:
    """mysqld options that load the audit plugin with the given policy."""
    if policy not in POLICIES:
        raise ValueError(f"audit policy {policy!r} is not one of {', '.join(POLICIES)}")
    return {
        "plugin-load-add": PLUGIN_LIBRARY,
        # The plugin may not be uninstalled while the server runs.
        # loose-: mysqld --initialize (no plugins) reads the same my.cnf.
        "loose-audit-log": "FORCE_PLUS_PERMANENT",
        "loose-audit-log-file": "audit.log",
        "loose-audit-log-format": "JSON",
        "loose-audit-log-strategy": "ASYNCHRONOUS",
        POLICY_OPTION: policy,
    }


def with_audit(options: dict, policy: str | None) -> dict:
    """options plus the audit plugin's (policy None: unchanged). Another
    plugin-load-add is kept: mysqld takes a ';' separated list there."""
    if policy is None:
        return dict(options)
    merged = dict(options)
    extra = audit_options(policy)
    libs = [lib for lib in merged.get("plugin-load-add", "").split(";") if lib]
    if PLUGIN_LIBRARY not in libs:
        libs.append(PLUGIN_LIBRARY)
    merged.update(extra)
    merged["plugin-load-add"] = ";".join(libs)
    return merged


def policy_of(options: dict) -> str | None:
    """The audit policy a saved member was started with, or None."""
    return options.get(POLICY_OPTION)
