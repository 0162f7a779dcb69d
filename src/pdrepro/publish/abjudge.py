"""An A/B judged from its arms' run folders: each arm's summary drawn afresh from its raw inputs, in memory
(analysis.verdictsource, what `pdrepro check` judges), its checks (verdicts.gates), and the arms set side by
side per length as the typed A/B summary (rundir.absummary). Nothing is written into an arm's folder.

The clock both arms share is the client's: TTFT is compared across arms (ratios against the first arm); the
engine's logged transfer time is shown per arm with what it measures (the backend's ``timing``) and never
set against another arm's, since each backend times its own window. An arm run more than once (`pdrepro ab
--repeats`: arms named <backend>-r2, -r3 ...) adds runs to its backend: each backend's TTFT then carries a
confidence interval over its arms and their requests, and is called better or worse than the first backend's only
where the two intervals do not overlap (verdicts.noise).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..analysis import interval as bootstrap
from ..analysis.members import Claim, judge_members, of_member
from ..analysis.requestsamples import RequestSamples
from ..analysis.verdictsource import judged_sweep as judged_summary  # an arm is a sweep's run
from ..backends.registry import backend as backend_named
from ..core.errors import UserError
from ..rundir import RunDir, armsstate
from ..rundir.absummary import (
    AbBackend,
    AbCheck,
    AbLength,
    AbSummary,
    AbVerdict,
    ArmLength,
    ArmSummary,
    ArmVerdict,
    TtftRatio,
)
from ..rundir.memberrecord import MemberFinding
from ..rundir.summarymodel import Row, Summary
from ..scenario.model import load_scenario, resolve_scenario
from ..verdicts import noise
from ..verdicts.gates import CheckResult, evaluate, failed

# The checks that answer the A/B's own questions of an arm (their names as `pdrepro check` prints them).
COMPLETED = ("completed", "request_errors")
KV_MATCH = ("kv_size_match",)
COVERS = ("ttft_covers_transfer",)
RULE = ("a backend's TTFT is better than the first backend's at a length only when its confidence interval (a "
        "bootstrap over the backend's arms, then the requests within each) lies wholly below the first's, worse when "
        "wholly above, else within the noise; with fewer than two arms of either backend (no --repeats) the run-to-run "
        "noise is not measured and nothing is judged")


@dataclass(frozen=True)
class ArmInput:
    name: str
    backend: str | None
    unfinished: str | None = None   # why the arm's run did not finish, as the arms state says


def _all(results: list[CheckResult], names: tuple[str, ...]) -> bool | None:
    picked = [r for r in results if r.name in names and r.applicable]
    return None if not picked else all(r.passed for r in picked)


def _verdict(r: CheckResult) -> AbVerdict:
    return "N/A" if not r.applicable else "PASS" if r.passed else "FAIL"


@dataclass(frozen=True)
class _Arm:
    summary: Summary | None
    verdict: ArmVerdict
    scenario: str | None
    samples: dict[int, RequestSamples]


def _judge_arm(folder: Path, unfinished: str | None) -> _Arm:
    try:
        scenario = resolve_scenario(None, folder)
        found = judged_summary(RunDir(folder), scenario)
        summary = found.summary
    except UserError as exc:
        why = f"the arm did not finish ({unfinished}): {exc}" if unfinished else str(exc)
        return _Arm(None, ArmVerdict(passed=False, input_error=why), None, {})
    results = evaluate(summary, scenario)
    errors = summary.input_errors()
    # The transport the servers' own lines state, and how the arm's check judged it.
    judged = next((r.detail for r in results if r.name == "transport"), None)
    transport = "; ".join(t for t in (summary.transport, judged) if t) or None
    verdict = ArmVerdict(
        passed=not failed(results) and not errors, input_error=errors[0].message if errors else None,
        all_completed=_all(results, COMPLETED), kv_sizes_match=_all(results, KV_MATCH),
        ttft_covers_transfer=_all(results, COVERS), transport=transport,
        checks=[AbCheck(name=r.name, prompt_len=r.prompt_len, verdict=_verdict(r), detail=r.detail) for r in results])
    return _Arm(summary, verdict, scenario.name, found.samples)


def _arm_length(name: str, row: Row | None) -> ArmLength:
    if row is None:
        return ArmLength(arm=name)
    return ArmLength(arm=name, requests=row.requests, expected_requests=row.expected_requests,
                     ttft_ms_mean=row.ttft_ms_mean, ttft_ms_median=row.ttft_ms_median, ttft_ms_p99=row.ttft_ms_p99,
                     kv_bytes=row.kv_bytes, engine_transfer_ms_median=row.transfer_ms_median)


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else round(a / b, 4)


def _ratios(arms: list[ArmLength]) -> list[TtftRatio]:
    base = arms[0]
    return [TtftRatio(arm=a.arm, against=base.arm, mean=_ratio(a.ttft_ms_mean, base.ttft_ms_mean),
                      median=_ratio(a.ttft_ms_median, base.ttft_ms_median), p99=_ratio(a.ttft_ms_p99, base.ttft_ms_p99))
            for a in arms[1:]]


def _backend(backend: str | None, arms: list[tuple[str, Row, RequestSamples | None]]) -> AbBackend:
    """One backend at ``L`` over its passing arms: each arm's requests' TTFT (its row's mean where the bench kept
    no per-request figures), the interval of their mean and the spread between the arms."""
    runs = [list(samples.ttft_ms) if samples is not None and samples.ttft_ms else [row.ttft_ms_mean]
            for _, row, samples in arms if row.ttft_ms_mean is not None]
    means = [row.ttft_ms_mean for _, row, _ in arms if row.ttft_ms_mean is not None]
    return AbBackend(backend=backend, arms=[name for name, row, _ in arms if row.ttft_ms_mean is not None],
                     ttft_ms_mean=round(sum(means) / len(means), 2) if means else None,
                     interval=bootstrap.bootstrap(runs, bootstrap.mean_of(), digits=2),
                     noise_floor=bootstrap.noise_floor(f"{backend}'s {len(means)} arms", means, "ms", digits=2),
                     standing="not judged")


def _backends(L: int, arms: Sequence[ArmInput], judged: dict[str, _Arm]) -> list[AbBackend]:
    """Each backend at ``L``, the first backend first, judged against it by verdicts.noise on lower TTFT."""
    order = list(dict.fromkeys(a.backend for a in arms))
    out = []
    for b in order:
        mine = []
        for a in arms:
            one = judged[a.name]
            row = one.summary.rows_by_length().get(L) if one.summary is not None and a.backend == b else None
            if row is not None and one.verdict.passed:  # an arm that fails its checks measured something else
                mine.append((a.name, row, one.samples.get(L)))
        out.append(_backend(b, mine))
    first = out[0] if out else None
    return [b if b is first or first is None or b.noise_floor is None or first.noise_floor is None else
            b.model_copy(update={"standing": noise.standing(b.interval, first.interval, higher_is_better=False)})
            for b in out]


def member_findings(run: Path, arms: Sequence[ArmInput]) -> list[MemberFinding]:
    """Each arm's own files against what the A/B says of it (analysis.members): the scenario the A/B wrote for
    the arm's backend (RUN/scenarios/<backend>.yaml), that backend and a disaggregated stack, a run of its own."""
    claims = []
    for arm in arms:
        file = Path(run) / "scenarios" / f"{arm.backend}.yaml"
        scenario = load_scenario(file) if arm.backend and file.is_file() else None
        claims.append(Claim(name=arm.name, folder=arm.name, scenario=scenario, stack="disaggregated",
                            backend=arm.backend))
    state = armsstate.read(Path(run)) if Path(run).is_dir() else None
    return judge_members(Path(run), claims, "ab", state.run_id if state is not None else None)


def _refused(found: list[MemberFinding]) -> ArmVerdict:
    """An arm whose own files are not the arm the A/B names: failed, each contradiction a check of its own."""
    checks = [AbCheck(name="member_identity", prompt_len=None, verdict="FAIL", detail=f.message()) for f in found]
    return ArmVerdict(passed=False, checks=checks)


def judge(run: Path, label: str, arms: Sequence[ArmInput]) -> AbSummary:
    """The A/B of ``arms`` (folders RUN/<name>), judged without writing into them."""
    summaries: dict[str, Summary | None] = {}
    judged: dict[str, _Arm] = {}
    out: list[ArmSummary] = []
    findings = member_findings(run, arms)
    for arm in arms:
        known = backend_named(arm.backend) if arm.backend else None
        mine = of_member(findings, arm.name)
        if any(f.about == "folder" for f in mine):
            # A link or a folder outside the run: nothing is read through it.
            summary, verdict, scenario = None, _refused(mine), None
            judged[arm.name] = _Arm(None, verdict, None, {})
        else:
            one = _judge_arm(Path(run) / arm.name, arm.unfinished)
            summary, verdict, scenario = one.summary, one.verdict, one.scenario
            if mine:
                verdict = verdict.model_copy(update={"passed": False,
                                                     "checks": [*_refused(mine).checks, *verdict.checks]})
            judged[arm.name] = _Arm(None if mine else summary, verdict, scenario, one.samples)
        # An arm whose files are not the arm it is named as lends the table no figures under that name.
        summaries[arm.name] = None if mine else summary
        out.append(ArmSummary(name=arm.name, backend=arm.backend, backend_label=known.label if known else None,
                              timing=known.timing if known else None, scenario=scenario, verdict=verdict))
    lengths = sorted({r.prompt_len for s in summaries.values() if s is not None for r in s.rows})
    table = []
    for L in lengths:
        row = [_arm_length(a.name, s.rows_by_length().get(L) if (s := summaries[a.name]) else None) for a in arms]
        table.append(AbLength(prompt_len=L, arms=row, ratios=_ratios(row), backends=_backends(L, arms, judged)))
    return AbSummary(label=label, arms=out, lengths=table, passed=all(a.verdict.passed for a in out), rule=RULE)
