"""Executables on PATH that answer like the real tools, from recorded output or fixtures.

The product runs nvidia-smi, ib_write_bw and transfer_engine_bench through
PATH; tests put these small scripts first on PATH instead of adding modes to
the product.
"""

from __future__ import annotations

import shlex
from pathlib import Path

RECORDED = Path(__file__).parent / "recorded"


def first_on_path(bin_dir: Path, monkeypatch) -> Path:
    """BIN_DIR made and put before the system's directories on PATH (and no others)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    return bin_dir


def install(bin_dir: Path, name: str, body: str) -> Path:
    bin_dir.mkdir(parents=True, exist_ok=True)
    path = bin_dir / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


FIXTURES = Path(__file__).parent / "fixtures"


def served(path: Path) -> str:
    """A recording's or fixture's text as the tool prints it: without the leading
    `# source` / `# fixture` lines that say where it comes from."""
    lines = path.read_text().splitlines(True)
    while lines and lines[0].startswith("# "):
        lines.pop(0)
    return "".join(lines)


def _cat(path: Path) -> str:
    """Shell that prints PATH as served()."""
    return f"sed '/^# /{{$!d;}}; :a; n; ba' {shlex.quote(str(path))}"


def nvidia_smi(bin_dir: Path, query: Path | None = None, topo: Path | None = None, fail_topo: bool = False,
               driver: Path | None = None) -> Path:
    query = query or FIXTURES / "nvidia-smi" / "h20-query-gpu.csv"
    topo = topo or FIXTURES / "nvidia-smi" / "h20-topo-m.txt"
    driver = driver or FIXTURES / "nvidia-smi" / "driver-query-580.65.06-8gpu.csv"
    topo_cmd = "echo 'topo: not supported' >&2; exit 3" if fail_topo else _cat(topo)
    return install(bin_dir, "nvidia-smi", f"""case "$1" in
  topo) {topo_cmd};;
  --query-gpu=driver_version) {_cat(driver)};;
  --query-gpu=*) {_cat(query)};;
  *) echo "unexpected arguments: $*" >&2; exit 2;;
esac
""")


def _perftest_table(table: str) -> str:
    base = FIXTURES if (FIXTURES / "perftest" / table).exists() else RECORDED
    return shlex.quote(str(base / "perftest" / table))


def ib_write_bw(bin_dir: Path, table: str = "ib_write_bw-client-gbits.txt", log: Path | None = None,
                fail_on: str | None = None, tables: dict[str, str] | None = None) -> Path:
    """Prints TABLE (a fixture, or a recording where no fixture has that name) with the -d device put
    in; logs its argv to LOG when given. TABLES picks another table by "<device>:<-p port>" or
    "<device>" (the first that matches), as one port's run alone or all at once prints its own."""
    log_cmd = f'echo "$*" >> {shlex.quote(str(log))}\n' if log else ""
    fail = (f'if [ "$dev" = "{fail_on}" ]; then echo " Couldn\'t connect to 192.168.100.12:18516"; '
            'echo "Unable to open file descriptor for socket connection Unable to init the socket connection"; exit 1; fi\n'
            if fail_on else "")
    pick = "".join(f"  {shlex.quote(key)}) src={_perftest_table(name)};;\n" for key, name in (tables or {}).items()
                   if ":" in key)
    pick += "".join(f"  {shlex.quote(key)}:*) src={_perftest_table(name)};;\n" for key, name in (tables or {}).items()
                    if ":" not in key)
    return install(bin_dir, "ib_write_bw", log_cmd + f"""dev="" port="" src={_perftest_table(table)}
while [ $# -gt 0 ]; do [ "$1" = "-d" ] && dev="$2"; [ "$1" = "-p" ] && port="$2"; shift; done
case "$dev:$port" in
{pick}esac
""" + fail + 'sed -e "/^# /d" -e "s/mlx5_0/$dev/" "$src"\n')


def transfer_engine_bench(bin_dir: Path, log: Path | None = None, broken: bool = False,
                          throughput: str | None = None) -> Path:
    """Target: prints its startup log and waits; initiator: prints the fixture's run (on stderr, like glog),
    with THROUGHPUT in place of the fixture's figure when given."""
    init = _cat(FIXTURES / "mooncake" / "te-initiator.log")
    if throughput is not None:
        init += f" | sed 's/throughput 178.64 GB/throughput {throughput} GB/'"
    target = _cat(FIXTURES / "mooncake" / "te-target.log")
    log_cmd = f'echo "$* MC_TE_FILTERS=$MC_TE_FILTERS" >> {shlex.quote(str(log))}\n' if log else ""
    if broken:
        return install(bin_dir, "transfer_engine_bench", log_cmd +
                       'echo "E1129 09:41:02.530913 231877 transfer_engine_bench.cpp:391] '
                       'Unable to get target segment ID, please recheck" >&2; exit 1\n')
    return install(bin_dir, "transfer_engine_bench", log_cmd + f"""case " $* " in
  *" --mode target "*) {target} >&2; echo "MC_MIN_RPC_PORT=$MC_MIN_RPC_PORT" >&2; exec sleep 30;;
  *) {init} >&2;;
esac
""")
