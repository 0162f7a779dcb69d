#!/usr/bin/env python3
"""Regenerate the knob lists (src/pdrepro/knobdata/*.json) from source trees given by path (`make knobs`).

SGLang: every SGLANG_* variable its disaggregation transfer path reads (the common code and the Mooncake and
NIXL connectors; not the encoder, nor the other vendors' transports the bundle does not run), and every
variable its settings module declares under the listed prefixes, with the type and default declared there.
Works on a git checkout (python/sglang/srt) or an unpacked release wheel (sglang/srt).

Mooncake: every MC_* variable the transfer engine reads (the engine, the shared library and the Python
binding SGLang loads; not the store, the expert-parallel or collective libraries, tests or examples). A
variable counts as RDMA-only when the configuration field it sets is used only by files of an RDMA transport
(or, with no field, when it is read only there): traced through the source, the evidence recorded.

SGLang's server flags: every option string (the flag and its aliases) its server parser declares, by the
field it sets, read from the ServerArgs dataclass's CLI annotations and the add_cli_args function, and whether
that parser takes prefix abbreviations; from each tree given (the pin's source and the release that runs), so
the guards refuse a flag the launch plan owns under any spelling one of them accepts.

Standard library only, so it runs before the bundle is installed. Reads; writes only the --out folder.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from pathlib import Path

SGLANG_LISTED = ("SGLANG_DISAGG", "SGLANG_MOONCAKE_")
# Parts of srt/disaggregation the bundle's backends never run: the multimodal encoder and other vendors'
# transports. Everything else there is the transfer path.
SGLANG_SKIP = re.compile(r"(^|/)(encode[^/]*\.py|encoder/|ascend/|mori/|fake/)")
MOONCAKE_LISTED = ("MC_",)
MOONCAKE_DIRS = ("mooncake-transfer-engine", "mooncake-common", "mooncake-integration/transfer_engine")
MOONCAKE_SKIP = re.compile(r"(^|/)(tests?|examples?|benchmarks?|fuzz\w*|scripts)/|_test\.|test_")
SOURCE_SUFFIXES = (".cpp", ".cc", ".cu", ".h", ".hpp", ".py")
# A string literal "MC_..." as a call's first argument: getenv, the Environ getters, TENT's config setters.
CALL = re.compile(r'\b(\w+)\s*\(\s*"(MC_[A-Z0-9_]+)"\s*(?:,\s*([^,;()]+?)\s*)?[,)]', re.S)
TYPED_GETTERS = {"GetInt": "int", "GetInt64": "int", "GetSizeT": "int", "GetBool": "bool", "GetString": "str"}
# The configuration fields an environment value lands in: `field_ = GetX("MC_...")`, or within the block
# after `std::getenv("MC_...")`, `config.field = ...`.
ASSIGNED = re.compile(r'(\w+)\s*=\s*\w+\s*\(\s*"(MC_[A-Z0-9_]+)"', re.S)
CONFIG_FILE = re.compile(r"(^|/)(config|environ|default_config)\.(cpp|cc)$")
# A file of one transport: <...>/transport/<name>/ (the engine's and TENT's layouts).
TRANSPORT = re.compile(r"(?:^|/)transport/(\w+?)(?:_transport)?/")
# Mooncake's transports over RDMA NICs (InfiniBand/RoCE verbs, EFA, Slingshot CXI, eRDMA, mlx5 GDA, UB/URMA).
VERBS_INCLUDE = re.compile(r"#\s*include\s*<infiniband/verbs\.h>")
RDMA_TRANSPORTS = {"rdma", "efa", "barex", "cxi", "device", "erdma", "kunpeng"}


def _literal(text: str | None) -> str | None:
    """A default as text when the source states a literal; None for an expression computed at run time."""
    if text is None:
        return None
    text = text.strip()
    if re.fullmatch(r"-?\d+(\.\d+)?|true|false", text):
        return text
    if re.fullmatch(r'"[^"\\]*"', text):
        return text[1:-1]
    return None


def _tree_kind(root: Path) -> str:
    """What the tree read was: an unpacked release wheel (named by its metadata folder) or a source checkout."""
    wheels = sorted(p.name for p in root.glob("*.dist-info"))
    return f"the release wheel, unpacked ({wheels[0]})" if wheels else "a source checkout"


# --- SGLang ---------------------------------------------------------------------------------------------

def _sglang_srt(root: Path) -> Path:
    for cand in (root / "python" / "sglang" / "srt", root / "sglang" / "srt"):
        if (cand / "environ.py").is_file():
            return cand
    raise SystemExit(f"knobgen: {root} holds no python/sglang/srt/environ.py or sglang/srt/environ.py; "
                     "give SGLANG_SRC=<sglang checkout or unpacked wheel>")


def _declared(environ: Path) -> dict[str, tuple[str | None, str | None]]:
    """Each variable the settings module declares: name -> (type, default as text)."""
    out: dict[str, tuple[str | None, str | None]] = {}
    for node in ast.walk(ast.parse(environ.read_text(encoding="utf-8"))):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name)
                and node.value.func.id.startswith("Env")):
            continue
        kind = node.value.func.id[3:].lower() or None
        default = None
        if node.value.args:
            try:
                value = ast.literal_eval(node.value.args[0])
                default = None if value is None else (str(value).lower() if isinstance(value, bool) else str(value))
            except ValueError:
                default = None
        out[node.targets[0].id] = ({"int": "int", "float": "float", "bool": "bool", "str": "str"}.get(kind or ""),
                                   default)
    return out


def _python_reads(path: Path) -> set[str]:
    """Names a Python file reads: envs.NAME, and os.getenv / os.environ.get / os.environ[...] / get_*_env_var."""
    found: set[str] = set()
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError):
        return found
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "envs":
            found.add(node.attr)
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            fn = ast.unparse(node.func)
            if fn in ("os.getenv", "os.environ.get", "getenv") or re.fullmatch(r"get_\w*env\w*", fn):
                found.add(node.args[0].value)
        elif isinstance(node, ast.Subscript) and ast.unparse(node.value) == "os.environ" \
                and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
            found.add(node.slice.value)
    return found


def sglang(root: Path, repo: str, ref: str) -> dict:
    srt = _sglang_srt(root)
    # Paths as the repository spells them (python/sglang/...), from a checkout or an unpacked wheel alike.
    def repo_path(path: Path) -> str:
        return "python/" + path.relative_to(srt.parent.parent).as_posix()
    declared = _declared(srt / "environ.py")
    readers: dict[str, str] = {}
    for path in sorted((srt / "disaggregation").rglob("*.py")):
        rel = path.relative_to(srt / "disaggregation").as_posix()
        if SGLANG_SKIP.search(rel):
            continue
        for name in _python_reads(path):
            if name.startswith("SGLANG_"):
                readers.setdefault(name, repo_path(path))
    for name in declared:
        if name.startswith(SGLANG_LISTED):
            readers.setdefault(name, repo_path(srt / "environ.py"))
    knobs = []
    for name in sorted(readers):
        kind, default = declared.get(name, (None, None))
        knobs.append({"name": name, "file": readers[name], "type": kind, "default": default, "rdma_only": False,
                      "only_in": [],
                      "evidence": "read by SGLang's disaggregation code whatever the transport"})
    return {"reader": "sglang", "source": {"repo": repo, "ref": ref, "tree": _tree_kind(srt.parent.parent)},
            "listed_prefixes": list(SGLANG_LISTED),
            "knobs": knobs}


# --- SGLang's server flags -------------------------------------------------------------------------------

def _const(node: ast.AST | None) -> object:
    try:
        return ast.literal_eval(node) if node is not None else None
    except ValueError:
        return None


def _cli_meta(annotation: ast.AST) -> dict | None:
    """The CLI metadata of one ``A[T, "help"]`` / ``A[T, Arg(...)]`` field annotation; None: no CLI surface."""
    if not (isinstance(annotation, ast.Subscript) and ast.unparse(annotation.value).split(".")[-1] in ("A", "Annotated")
            and isinstance(annotation.slice, ast.Tuple)):
        return None
    for extra in annotation.slice.elts[1:]:
        if isinstance(extra, ast.Constant) and isinstance(extra.value, str):
            return {}
        if isinstance(extra, ast.Call) and ast.unparse(extra.func).split(".")[-1] == "Arg":
            return {k.arg: _const(k.value) for k in extra.keywords if k.arg in ("cli_name", "aliases", "no_cli")}
    return None


def _add_argument_calls(func: ast.AST) -> list[tuple[list[str], str | None]]:
    """(option strings, dest keyword) of each ``<parser>.add_argument(...)`` call inside ``func``."""
    calls = []
    for node in ast.walk(func):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument":
            options = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            dest = next((_const(k.value) for k in node.keywords if k.arg == "dest"), None)
            if options and all(o.startswith("-") for o in options):
                calls.append((options, dest if isinstance(dest, str) else None))
    return calls


def _argparse_dest(options: list[str]) -> str:
    """argparse's default dest: the first long option (else the first), dashes stripped, '-' -> '_'."""
    first = next((o for o in options if o.startswith("--")), options[0])
    return first.lstrip("-").replace("-", "_")


def sglang_flags(root: Path, repo: str, ref: str) -> dict:
    """Every option string the server's parser takes, grouped by the field (dest) each sets."""
    srt = _sglang_srt(root)
    path = srt / "server_args.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ServerArgs"), None)
    if cls is None:
        raise SystemExit(f"knobgen: {path} defines no class ServerArgs")
    flags: dict[str, list[str]] = {}
    for node in cls.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            meta = _cli_meta(node.annotation)
            if meta is None or meta.get("no_cli") is True:
                continue
            name = node.target.id
            flags.setdefault(name, []).extend(
                [meta.get("cli_name") or "--" + name.replace("_", "-"), *(meta.get("aliases") or [])])
    adder = next((n for n in ast.walk(cls) if isinstance(n, ast.FunctionDef) and n.name == "add_cli_args"), None)
    if adder is None:
        raise SystemExit(f"knobgen: {path}: ServerArgs has no add_cli_args")
    for options, dest in _add_argument_calls(adder):
        flags.setdefault(dest or _argparse_dest(options), []).extend(options)
    # The parser the server builds (prepare_server_args): argparse takes abbreviations unless told otherwise,
    # and adds -h/--help unless told otherwise.
    made = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and ast.unparse(n.func).endswith("ArgumentParser")]
    if not made:
        raise SystemExit(f"knobgen: {path} builds no ArgumentParser")
    keywords = {k.arg: _const(k.value) for k in made[0].keywords}
    if keywords.get("add_help", True) is not False:
        flags.setdefault("help", []).extend(["-h", "--help"])
    return {"repo": repo, "ref": ref, "tree": _tree_kind(srt.parent.parent),
            "file": "python/" + path.relative_to(srt.parent.parent).as_posix(),
            "allow_abbrev": keywords.get("allow_abbrev", True) is not False,
            "flags": [{"dest": dest, "options": sorted(dict.fromkeys(opts))} for dest, opts in sorted(flags.items())]}


# --- Mooncake -------------------------------------------------------------------------------------------

def _mooncake_files(root: Path) -> list[Path]:
    files = []
    for top in MOONCAKE_DIRS:
        for path in sorted((root / top).rglob("*")):
            rel = path.relative_to(root).as_posix()
            if path.is_file() and path.suffix in SOURCE_SUFFIXES and not MOONCAKE_SKIP.search(rel):
                files.append(path)
    if not files:
        raise SystemExit(f"knobgen: {root} holds none of {', '.join(MOONCAKE_DIRS)}; "
                         "give MOONCAKE_SRC=<Mooncake checkout>")
    return files


def _fields(text: str, name: str) -> set[str]:
    """The configuration fields the value of ``name`` is stored in, within one file."""
    fields = {m.group(1).rstrip("_") for m in ASSIGNED.finditer(text) if m.group(2) == name}
    for m in re.finditer(r'getenv\s*\(\s*"' + re.escape(name) + r'"', text):
        # The block that handles this variable ends where the next variable's read begins.
        following = re.search(r"getenv\s*\(", text[m.end():])
        block = text[m.end():m.end() + (following.start() if following else 600)]
        fields |= {f.rstrip("_") for f in re.findall(r"\bconfig\.(\w+)\s*=", block)}
        break
    # A bare word like `port` would match half the tree: a field worth tracing has a compound name.
    return {f for f in fields if "_" in f}


def _transport(rel: str, text: str) -> str | None:
    """The transport a file belongs to: its folder's, or "rdma" for a file outside one that speaks verbs."""
    m = TRANSPORT.search(rel)
    if m:
        return m.group(1)
    return "rdma" if VERBS_INCLUDE.search(text) else None


def mooncake(root: Path, repo: str, ref: str) -> dict:
    files = _mooncake_files(root)
    texts = {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8", errors="replace") for p in files}
    reads: dict[str, list[str]] = {}
    typed: dict[str, tuple[str | None, str | None]] = {}
    for rel, text in texts.items():
        for m in CALL.finditer(text):
            fn, name, second = m.groups()
            reads.setdefault(name, [])
            if rel not in reads[name]:
                reads[name].append(rel)
            if fn in TYPED_GETTERS and name not in typed:
                typed[name] = (TYPED_GETTERS[fn], _literal(second))
    knobs = []
    for name in sorted(reads):
        where = sorted(reads[name])
        fields = set().union(*(_fields(texts[f], name) for f in where))
        users: set[str] = set()
        for field in fields:
            pattern = re.compile(r"\b" + re.escape(field) + r"_?\b")
            # Headers declare the field and configuration files pass it on: neither acts on it.
            users |= {rel for rel, text in texts.items() if rel not in where and not rel.endswith(".h")
                      and not CONFIG_FILE.search(rel) and pattern.search(text)}
        judged = sorted(users) or where
        # The transports it acts in; empty when any file outside one uses it (then it acts whatever runs).
        kinds = [_transport(f, texts.get(f, "")) for f in judged]
        only_in = sorted({k for k in kinds if k}) if all(kinds) else []
        rdma_only = bool(only_in) and set(only_in) <= RDMA_TRANSPORTS
        what = f"{'its field ' + ', '.join(sorted(fields)) + ' is ' if users else ''}used in {', '.join(judged[:4])}"
        kind, default = typed.get(name, (None, None))
        knobs.append({"name": name, "file": where[0], "type": kind, "default": default, "rdma_only": rdma_only,
                      "only_in": only_in,
                      "evidence": what + (f" and {len(judged) - 4} more" if len(judged) > 4 else "")})
    return {"reader": "mooncake", "source": {"repo": repo, "ref": ref, "tree": _tree_kind(root)},
            "listed_prefixes": list(MOONCAKE_LISTED),
            "knobs": knobs}


def write(data: dict, path: Path) -> None:
    data = {"generated_by": "scripts/knobgen.py (make knobs); do not edit by hand", **data}
    path.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sglang-src", type=Path, required=True)
    ap.add_argument("--sglang-ref", required=True, help="the tag or commit the SGLang tree is (named in the data)")
    ap.add_argument("--mooncake-src", type=Path, required=True)
    ap.add_argument("--mooncake-ref", required=True, help="the commit the Mooncake tree is (named in the data)")
    ap.add_argument("--sglang-flags-src", action="append", default=[], metavar="REF=PATH",
                    help="another SGLang tree whose server flags count too (the pin's source beside the release)")
    ap.add_argument("--out", type=Path, required=True, help="the folder of the lists (src/pdrepro/knobdata)")
    args = ap.parse_args(argv)
    trees = [(args.sglang_ref, args.sglang_src)]
    for given in args.sglang_flags_src:
        ref, eq, where = given.partition("=")
        if not (eq and ref and where):
            raise SystemExit(f"knobgen: --sglang-flags-src {given!r}: give REF=PATH")
        trees.append((ref, Path(where)))
    args.out.mkdir(parents=True, exist_ok=True)
    sg = sglang(args.sglang_src, "sgl-project/sglang", args.sglang_ref)
    mc = mooncake(args.mooncake_src, "kvcache-ai/Mooncake", args.mooncake_ref)
    write(sg, args.out / "sglang.json")
    write(mc, args.out / "mooncake.json")
    flags = {"reader": "sglang", "trees": [sglang_flags(where, "sgl-project/sglang", ref) for ref, where in trees]}
    write(flags, args.out / "sglang-flags.json")
    print(f"knobgen: {len(sg['knobs'])} SGLang and {len(mc['knobs'])} Mooncake knobs written to {args.out}; "
          + ", ".join(f"{len(t['flags'])} server flags of SGLang {t['ref']}" for t in flags["trees"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
