"""The one statistic every strata-bench page uses: the mean over rounds and its 95% interval.

Why this one. A round is one measurement of each target back to back; the
rounds are the independent samples (the machine drifts between them, not
within a window). Their mean is what a reader expects, and the interval
(Student's t, two-sided 95%, n - 1 degrees of freedom) says how far the
true mean may be from it with this few rounds. For a side-by-side page the
samples are the per-round ratios (fork / stock measured within the same
round), not the ratio of two means: the drift the two share cancels.

A verdict needs a target (`--target-ratio write=0.8`) and an interval that
clears it: "met" when the whole interval is at or above the target, "not met"
when it is wholly below; otherwise the rounds cannot tell ("open"), which a
page says instead of a verdict. One round has no interval and gets no verdict.

Only the standard library, so the tests run anywhere.
"""
import math
import re
from dataclasses import dataclass

# Student's t, two-sided 95% (the 0.975 quantile), by degrees of freedom 1..30.
T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
       2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
       2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)
Z975 = 1.959964


def t95(df: int) -> float:
    """The 0.975 quantile of Student's t with `df` degrees of freedom (df >= 1)."""
    if df < 1:
        raise ValueError(f"degrees of freedom {df}: at least 1")
    if df <= len(T95):
        return T95[df - 1]
    # Cornish-Fisher expansion around the normal quantile: within 1e-4 of the exact value past 30.
    z = Z975
    return z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df ** 2)


@dataclass(frozen=True)
class Interval:
    """Mean of n samples with its 95% interval; low == high == mean when n < 2."""
    mean: float
    low: float
    high: float
    n: int

    @property
    def half(self) -> float:
        return (self.high - self.low) / 2

    def text(self, fmt: str = ".3f", unit: str = "") -> str:
        """`0.957 ± 0.019 (n=50)`; one sample: `0.957 (n=1)`."""
        if self.n < 2:
            return f"{self.mean:{fmt}}{unit} (n={self.n})"
        return f"{self.mean:{fmt}}{unit} ± {self.half:{fmt}} (n={self.n})"


def interval(samples) -> Interval | None:
    """Mean and 95% interval of the samples (None skipped); None when there is none."""
    xs = [float(x) for x in samples if x is not None]
    if not xs:
        return None
    n = len(xs)
    mean = math.fsum(xs) / n
    if n < 2:
        return Interval(mean, mean, mean, n)
    var = math.fsum((x - mean) ** 2 for x in xs) / (n - 1)
    half = t95(n - 1) * math.sqrt(var / n)
    return Interval(mean, mean - half, mean + half, n)


MET, NOT_MET, OPEN = "met", "not met", "open"


def verdict(iv: Interval | None, target: float, higher_is_better: bool = True) -> str | None:
    """met / not met when the interval clears the target, OPEN when it holds it, None without an interval."""
    if iv is None or iv.n < 2:
        return None
    if higher_is_better:
        if iv.low >= target:
            return MET
        if iv.high < target:
            return NOT_MET
    else:
        if iv.high <= target:
            return MET
        if iv.low > target:
            return NOT_MET
    return OPEN


class TargetError(ValueError):
    pass


@dataclass(frozen=True)
class Target:
    """`--target-ratio SCENARIO[@THREADS]=RATIO`: the ratio over the baseline a point must reach.
    SCENARIO `*` matches every scenario; without @THREADS, every concurrency."""
    scenario: str
    threads: int | None
    ratio: float

    def matches(self, scenario: str, threads: int) -> bool:
        return self.scenario in ("*", scenario) and self.threads in (None, threads)

    def text(self) -> str:
        return f"{self.scenario}{'' if self.threads is None else f'@{self.threads}'}={self.ratio:g}"


def parse_targets(values: list[str] | None) -> list[Target]:
    """--target-ratio values, each possibly comma-separated: `write=0.8,read-point@16=0.97`."""
    out = []
    for value in values or []:
        for item in filter(None, (v.strip() for v in value.split(","))):
            m = re.fullmatch(r"([A-Za-z0-9_*.-]+)(?:@(\d+))?=([0-9]*\.?[0-9]+)", item)
            if not m:
                raise TargetError(f"--target-ratio {item!r}: use SCENARIO[@THREADS]=RATIO, e.g. write=0.8")
            ratio = float(m.group(3))
            if ratio <= 0:
                raise TargetError(f"--target-ratio {item!r}: the ratio must be above 0")
            out.append(Target(m.group(1), int(m.group(2)) if m.group(2) else None, ratio))
    return out


def target_for(targets: list[Target], scenario: str, threads: int) -> Target | None:
    """The most specific target for a point: scenario@threads, then scenario, then *@threads, then *."""
    def rank(t: Target) -> int:
        return (t.scenario != "*") * 2 + (t.threads is not None)
    found = [t for t in targets if t.matches(scenario, threads)]
    return max(found, key=rank) if found else None
