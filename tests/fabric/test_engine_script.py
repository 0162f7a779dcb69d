""".ci/docker-engine.sh as a user runs it, with stand-ins for the system tools on PATH: root only when
something is missing (through sudo when there is one), dockerd started under a raised memlock limit, and no
apt source for a suite the host's sources already list."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import fakebin
import pytest

SCRIPT = Path(__file__).resolve().parents[2] / ".ci" / "docker-engine.sh"
# The real tools the script uses besides the ones a test stands in for; nothing else is on PATH.
REAL = ("bash", "awk", "cat", "basename", "dirname", "seq", "sleep", "tail", "setsid", "nohup", "printf", "grep", "touch",
        "tr")


def tools(tmp_path: Path, **fakes: str) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name in REAL:
        real = shutil.which(name)
        assert real, f"{name} is needed to run the engine script"
        (bin_dir / name).symlink_to(real)
    for name, body in fakes.items():
        fakebin.install(bin_dir, name, body)
    return bin_dir


def run(bin_dir: Path, shell: str, tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([shutil.which("bash") or "bash", "-c", shell], capture_output=True, text=True, timeout=60,
                          env={"PATH": str(bin_dir), "HOME": str(tmp_path), **env}, cwd=tmp_path)


# A docker CLI that answers only once the fake dockerd has run.
DOCKER = 'case "$1" in info) test -f "$STATE/started";; *) exit 1;; esac\n'
DOCKERD = 'ulimit -l > "$STATE/memlock"; ulimit -H -l > "$STATE/hard"; touch "$STATE/started"\n'


def test_dockerd_starts_under_the_highest_memlock_limit_the_shell_may_set(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    bin_dir = tools(tmp_path, id="echo 0\n", docker=DOCKER, dockerd=DOCKERD)
    # A login shell's low soft limit: the script must not hand it on to the engine.
    proc = run(bin_dir, f"ulimit -S -l 64; source {SCRIPT}; start_daemon", tmp_path, STATE=str(state),
               DOCKERD_LOG=str(tmp_path / "dockerd.log"))
    assert proc.returncode == 0, proc.stderr
    hard = (state / "hard").read_text().strip()
    got = (state / "memlock").read_text().strip()
    can_unlimit = subprocess.run(["bash", "-c", "ulimit -l unlimited"], capture_output=True).returncode == 0
    assert got == ("unlimited" if can_unlimit else hard) and got != "64"
    assert f"memlock {'unlimited' if can_unlimit else got}" in proc.stderr
    assert (tmp_path / "dockerd.log").exists()


def test_a_user_with_sudo_gets_the_script_again_through_sudo(tmp_path):
    calls = tmp_path / "sudo.args"
    bin_dir = tools(tmp_path, id="echo 1000\n", docker="exit 1\n", dockerd="exit 0\n",
                    sudo=f'printf "%s\\n" "$@" > {calls}\n')
    proc = run(bin_dir, f"bash {SCRIPT} --anything", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert calls.read_text().split("\n")[:4] == ["--", "bash", str(SCRIPT), "--anything"]
    assert "starting dockerd needs root: running again through sudo" in proc.stderr


def test_a_user_without_sudo_gets_one_line_and_exit_2(tmp_path):
    bin_dir = tools(tmp_path, id="echo 1000\n", docker="exit 1\n", dockerd="exit 0\n")
    proc = run(bin_dir, f"bash {SCRIPT}", tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [f"docker-engine: starting dockerd needs root, and there is no sudo: "
                                                f"run it as root (bash {SCRIPT})"]


def test_nothing_missing_needs_no_root(tmp_path):
    # Everything there: a user without sudo runs it to the end (the report) and nothing asks for root.
    bin_dir = tools(tmp_path, id="echo 1000\n", dockerd="exit 0\n", debootstrap="exit 0\n",
                    docker='case "$1" in version) echo 28.2.2;; info|compose) exit 0;; esac\n')
    proc = run(bin_dir, f"bash {SCRIPT}", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "root" not in proc.stderr and "compose:" in proc.stderr


def _apt(tmp_path: Path, files: dict[str, str]) -> Path:
    apt = tmp_path / "apt"
    (apt / "sources.list.d").mkdir(parents=True)
    for name, text in files.items():
        (apt / name).write_text(text)
    return apt


BOOKWORM_DEB822 = """Types: deb
# a comment between keys
URIs: http://mirror.example/debian/
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://mirror.example/debian-security
Suites: bookworm-security
Components: main
"""


@pytest.mark.parametrize(("files", "pairs", "trixie"), [
    ({"sources.list.d/debian.sources": BOOKWORM_DEB822},
     ["http://mirror.example/debian bookworm", "http://mirror.example/debian bookworm-updates",
      "http://mirror.example/debian-security bookworm-security"], False),
    ({"sources.list": "# deb http://x/debian trixie main\ndeb [arch=amd64 signed-by=/k.gpg] http://m/debian/ trixie main\n"
                      "deb-src http://m/debian trixie main\n"},
     ["http://m/debian trixie"], True),
    ({"sources.list.d/t.sources": "Types: deb\nURIs: http://m/debian\nSuites: trixie\nEnabled: no\n",
      "sources.list.d/u.list": "deb http://m/debian trixie-updates main\n"},
     ["http://m/debian trixie-updates"], False),
    ({"sources.list.d/t.sources": "Types: deb-src\nURIs: http://m/debian\nSuites: trixie\n\n"
                                  "Types: deb\nURIs: http://a http://b\nSuites: trixie\n"},
     ["http://a trixie", "http://b trixie"], True),
])
def test_apt_sources_are_read_in_both_formats(tmp_path, files, pairs, trixie):
    apt = _apt(tmp_path, files)
    bin_dir = tools(tmp_path)
    listed = run(bin_dir, f"source {SCRIPT}; apt_suites {apt}", tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines() == pairs
    has = run(bin_dir, f"source {SCRIPT}; has_suite {apt} trixie", tmp_path)
    assert (has.returncode == 0) == trixie


def test_compose_install_adds_no_source_for_a_listed_suite():
    # The install checks the host's sources before it writes its own trixie source.
    text = SCRIPT.read_text()
    body = text[text.index("install_compose() {"):text.index("start_daemon() {")]
    assert body.index("has_suite /etc/apt trixie") < body.index('cat > "$own"')


# An `id` that answers like the real one for a root shell run through sudo by USER, who is in GROUPS.
def _id_for(groups: str) -> str:
    return f'case "$1" in -u) echo 0;; -nG) echo "{groups}";; *) exit 1;; esac\n'


def test_a_user_who_ran_it_through_sudo_gets_the_docker_group_once(tmp_path):
    calls = tmp_path / "usermod.args"
    common = dict(dockerd="exit 0\n", debootstrap="exit 0\n", usermod=f'printf "%s\\n" "$@" >> {calls}\n',
                  docker='case "$1" in version) echo 28.2.2;; info|compose) exit 0;; esac\n')
    added = run(tools(tmp_path / "a", id=_id_for("alice sudo"), **common), f"bash {SCRIPT}", tmp_path,
                SUDO_USER="alice")
    assert added.returncode == 0, added.stderr
    assert calls.read_text().split() == ["-aG", "docker", "alice"]
    assert "log in again" in added.stderr
    calls.unlink()
    already = run(tools(tmp_path / "b", id=_id_for("alice docker"), **common), f"bash {SCRIPT}", tmp_path,
                  SUDO_USER="alice")
    assert already.returncode == 0, already.stderr
    assert not calls.exists() and "docker group" not in already.stderr
