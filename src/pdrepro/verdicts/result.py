"""One verdict of a check (PASS, FAIL or N/A) and the helpers every family of checks builds them with.

N/A (``applicable`` False) is never a pass (``passed`` is False) and never a failure (``failed`` leaves it out):
only the transport and the NIC checks take it, for a run that had no RDMA path to prove.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.figures import against


@dataclass(frozen=True)
class CheckResult:
    name: str
    prompt_len: int | None
    figure: float | None
    bound: float | None
    unit: str
    passed: bool
    detail: str
    op: str = ""          # how figure is compared with bound: ">=", "<=", "=="
    applicable: bool = True

    @property
    def verdict(self) -> str:
        return "N/A" if not self.applicable else "PASS" if self.passed else "FAIL"


# Why the transport and the NIC witness do not apply to a run (transport: any, TCP, no RDMA device).
NOT_APPLICABLE = "not applicable: TCP, allowed by the scenario, no RDMA device on the node"


def not_applicable_result(name: str, L: int | None, bound: float | None = None, unit: str = "", op: str = "") -> CheckResult:
    where = f"length {L}: " if L is not None else "KV transport: "
    return CheckResult(name, L, None, bound, unit, False, where + NOT_APPLICABLE, op, applicable=False)


def _compare(figure: float | None, op: str, bound: float) -> bool:
    if figure is None:
        return False
    return figure >= bound if op == ">=" else figure <= bound if op == "<=" else figure == bound


def check(name: str, L: int | None, figure: float | None, op: str, bound: float, unit: str, what: str) -> CheckResult:
    passed = _compare(figure, op, bound)
    shown = "not measured" if figure is None else f"{against(figure, op, bound)} {unit}".rstrip()
    where = f"length {L}: " if L is not None else ""
    detail = f"{where}{what} {shown} {'meets' if passed else 'fails'} {op} {bound:g} {unit}".rstrip()
    return CheckResult(name, L, figure, bound, unit, passed, detail, op)


def failed(results: list[CheckResult]) -> list[CheckResult]:
    return [r for r in results if r.applicable and not r.passed]


def not_applicable(results: list[CheckResult]) -> list[CheckResult]:
    return [r for r in results if not r.applicable]
