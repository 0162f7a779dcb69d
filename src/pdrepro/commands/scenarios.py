"""``pdrepro scenarios``: the shipped scenarios, and any one resolved in full."""

from __future__ import annotations


def register(subparsers) -> None:
    p = subparsers.add_parser("scenarios", help="list shipped scenarios, or show one resolved",
                              description="Without arguments: list the shipped scenarios. "
                                          "'show NAME_OR_PATH': print the scenario as it is used, defaults filled in.")
    p.add_argument("action", nargs="?", choices=["list", "show"], default="list")
    p.add_argument("name", nargs="?", help="scenario name or YAML path (for show)")
    p.set_defaults(func=run)


def run(args) -> int:
    # The scenario models (pydantic, YAML) and the table load when the command runs, not for its --help.
    from tabulate import tabulate

    from ..scenario.model import load_scenario, shipped_names

    if args.action == "show":
        if not args.name:
            from ..core.errors import UserError

            raise UserError(f"scenarios show needs a scenario name or path; shipped: {', '.join(shipped_names())}")
        from ..scenario.derivation import problems

        scenario = load_scenario(args.name)
        print(scenario.to_yaml(), end="")
        # The rules stay data the YAML above shows; a value a copied scenario changed without its rule is named
        # here, as comments, so the output still reads as YAML.
        for problem in problems(scenario.thresholds, scenario.reference):
            print(f"# thresholds.derivation no longer holds: {problem}")
        return 0
    rows = []
    for name in shipped_names():
        s = load_scenario(name)
        lens = s.sweep.prompt_lens
        rows.append([name, s.kind, f"{lens[0]}..{lens[-1]} ({len(lens)})", s.title])
    print(tabulate(rows, headers=["name", "kind", "prompt lengths", "title"], tablefmt="simple", disable_numparse=True))
    return 0
