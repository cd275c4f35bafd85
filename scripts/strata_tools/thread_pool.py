"""The Strata thread pool (plugin/strata_pool, docs/thread_pool.md) as mysqld options.

The fork's own servers schedule connections with it: `strata-cluster up`
writes these options into the fork's my.cnf (never into the stock twin's,
which has no such plugin and would refuse thread_handling=pool-of-threads).
"""

PLUGIN_LIBRARY = "strata_pool.so"


def pool_options() -> dict:
    """mysqld options that make the pool schedule every connection."""
    # mysqld --initialize reads the same my.cnf without loading plugins; the
    # fork accepts pool-of-threads there and only checks it on a real start.
    return {"plugin-load-add": PLUGIN_LIBRARY, "thread_handling": "pool-of-threads"}


def with_pool(options: dict, flavor: str) -> dict:
    """options plus the pool's for the fork (other flavors: unchanged). Another
    plugin-load-add is kept: mysqld takes a ';' separated list there."""
    if flavor != "fork":
        return dict(options)
    merged = dict(options)
    libs = [lib for lib in merged.get("plugin-load-add", "").split(";") if lib]
    if PLUGIN_LIBRARY not in libs:
        libs.append(PLUGIN_LIBRARY)
    merged.update(pool_options())
    merged["plugin-load-add"] = ";".join(libs)
    return merged
