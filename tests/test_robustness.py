"""Interrupted and concurrent runs leave nothing behind (real processes, real signals).

* SIGINT / SIGTERM while an output is being written: the temporary output is removed, the
  process says "interrupted ...: nothing was written" and exits with 128 + the signal.
* SIGKILL cannot be caught: its leftover is removed by the next write of the same output.
* Concurrent ``--force`` writers of one directory are serialized: every one succeeds and the
  directory holds one whole release; without ``--force`` the second one is refused cleanly.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from conftest import run_cli


def start(*args: str | Path, cwd: Path | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "privlab.cli", *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
    )


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def wait_for_temp(folder: Path, proc: subprocess.Popen, timeout: float = 120.0) -> None:
    """Wait until ``proc`` has a temporary output in ``folder`` (then it is mid-write)."""
    t0 = time.monotonic()
    while not leftovers(folder):
        if proc.poll() is not None:
            raise AssertionError(f"the process ended before writing: {proc.communicate()}")
        if time.monotonic() - t0 > timeout:
            proc.kill()
            raise AssertionError("no temporary output appeared")
        time.sleep(0.05)
    time.sleep(1.0)  # well inside the work now


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_while_writing_leaves_nothing(tmp_path: Path, sig: signal.Signals) -> None:
    proc = start("demo", "--out", tmp_path / "demo-out")
    wait_for_temp(tmp_path, proc)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + sig, (proc.returncode, err)
    assert "Traceback" not in err, err
    assert f"interrupted ({sig.name}): nothing was written" in err
    assert list(tmp_path.iterdir()) == [], leftovers(tmp_path)


def _anatomize(src: Path, out: Path, *extra: str) -> list:
    """The arguments of a small Anatomy release of ``src`` into ``out``."""
    return ["anatomize", src, "--qi", "a,b", "--sensitive", "s", "--l", "2", *extra, "--out", out]


def _small_csv(folder: Path) -> Path:
    src = folder / "in.csv"
    pd.DataFrame(
        {"a": list("xyzxyzxyzxyz") * 5, "b": list(range(12)) * 5, "s": list("pqrs") * 15}
    ).to_csv(src, index=False)
    return src


def test_a_killed_writer_is_cleaned_up_by_the_next_write(tmp_path: Path) -> None:
    work = tmp_path / "w"
    work.mkdir()
    proc = start("demo", "--out", work / "out")
    wait_for_temp(work, proc)
    proc.kill()  # SIGKILL: nothing can run in the killed process
    proc.communicate(timeout=60)
    stale = leftovers(work)
    # the release's temporary, and possibly its custody's (which holds the truth)
    assert stale and all(s.startswith((".out.privlab-", ".out.custody.privlab-")) for s in stale)
    assert any(s.startswith(".out.privlab-") for s in stale), stale
    src = _small_csv(tmp_path)
    r = run_cli(*_anatomize(src, work / "out"))
    assert r.returncode == 0, r.stderr
    assert leftovers(work) == []
    assert sorted(p.name for p in (work / "out").iterdir()) == ["qit.csv", "release.json", "st.csv"]


def test_a_leftover_of_a_live_process_is_kept(tmp_path: Path) -> None:
    from privlab._io import sweep_leftovers

    live = tmp_path / f".out.privlab-{os.getppid()}-abc123.tmp"  # our parent is alive
    live.mkdir()
    dead = tmp_path / ".out.privlab-999999999-abc123.tmp"
    dead.mkdir()
    other = tmp_path / ".other.privlab-999999999-abc123.tmp"
    other.mkdir()
    # a dead writer's temporaries of any name go: a killed audit's custody temporary holds the
    # truth and must not wait for a write of the same name
    assert sorted(sweep_leftovers(tmp_path / "out")) == sorted([dead, other])
    assert live.exists() and not other.exists() and not dead.exists()


def test_concurrent_force_writers_are_serialized(tmp_path: Path) -> None:
    src = _small_csv(tmp_path)
    work = tmp_path / "w"
    work.mkdir()
    for _ in range(3):
        # many releases of one input, acknowledged: the test is of the output's writers
        procs = [start(*_anatomize(src, work / "out", "--force", "--republish")) for _ in range(3)]
        results = [(p.wait(timeout=120), p.communicate()[1]) for p in procs]
        for code, err in results:
            assert code == 0, err
            assert "Traceback" not in err
    assert leftovers(work) == []
    r = run_cli("check", work / "out")
    assert r.returncode == 0, r.stderr


def test_concurrent_writers_without_force_one_wins(tmp_path: Path) -> None:
    src = _small_csv(tmp_path)
    work = tmp_path / "w"
    work.mkdir()
    for i in range(2):
        out = work / f"out{i}"
        procs = [start(*_anatomize(src, out, "--republish")) for _ in range(2)]
        results = [(p.wait(timeout=120), p.communicate()[1]) for p in procs]
        codes = sorted(code for code, _ in results)
        assert codes == [0, 2], results
        for code, err in results:
            assert "Traceback" not in err
            if code == 2:
                assert err.strip().startswith("error:") and "exists" in err, err
    assert leftovers(work) == []


def test_anatomy_of_a_20000_valued_column_is_refused_up_front(tmp_path: Path) -> None:
    """300,000 rows with 20,000 sensitive values would need a 150,000 x 20,000 count matrix
    (tens of GB): refused before any work, in well under 1 GB, with the size it needs."""
    import numpy as np

    rng = np.random.default_rng(0)
    n = 300_000
    src = tmp_path / "wide.csv"
    pd.DataFrame(
        {
            "a": rng.choice(list("xyz"), n),
            "b": rng.integers(0, 50, n),
            "s": np.char.add("v", rng.integers(0, 20_000, n).astype(str)),
        }
    ).to_csv(src, index=False)
    # a fresh parent process, so that its children's peak is this command's alone
    probe = (
        "import resource, subprocess, sys\n"
        "r = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "sys.stderr.write(r.stderr)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
        "sys.exit(r.returncode)\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", probe, sys.executable, "-m", "privlab.cli", "anatomize", src,
         "--qi", "a,b", "--sensitive", "s", "--l", "2", "--out", tmp_path / "out"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    peak_kib = int(r.stdout.strip())  # ru_maxrss is in KiB on Linux
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1 and "150,000 groups x 20,000 sensitive values" in r.stderr
    assert "GiB" in r.stderr and "Traceback" not in r.stderr
    assert peak_kib < 1024 * 1024, f"peak {peak_kib} KiB"
    assert not (tmp_path / "out").exists()


def test_memory_limit_from_the_environment(tmp_path: Path, monkeypatch) -> None:
    from privlab._memory import parse_size, require_memory
    from privlab.errors import MemoryBudgetError

    assert parse_size("2G") == 2 << 30 and parse_size("512M") == 512 << 20
    assert parse_size("1.5GiB") == 3 << 29 and parse_size("1000") == 1000
    monkeypatch.setenv("PRIVLAB_MEMORY_LIMIT", "1M")
    require_memory(1 << 19, "half a MiB", "fine")
    with pytest.raises(MemoryBudgetError, match=r"2\.0 MiB of memory and PRIVLAB_MEMORY_LIMIT"):
        require_memory(2 << 20, "two MiB", "use less")
    monkeypatch.setenv("PRIVLAB_MEMORY_LIMIT", "lots")
    with pytest.raises(Exception, match="not a size"):
        require_memory(1, "x", "y")


def test_json_ready_makes_plain_json_values():
    """The one numpy-to-JSON helper: keys as strings, numpy scalars and arrays as Python
    values, non-finite floats as None, paths as strings; what is already plain is kept."""
    import json
    from pathlib import Path

    import numpy as np

    from privlab._io import json_ready

    doc = {
        1: np.int64(3),
        "f": np.float32(0.5),
        "nan": float("nan"),
        "inf": np.float64(-np.inf),
        "b": np.bool_(True),
        "s": np.str_("x"),
        "a": np.array([[1, 2], [3, 4]]),
        "t": (Path("d/e"), None, "y", 2.5),
    }
    out = json_ready(doc)
    assert out == {"1": 3, "f": 0.5, "nan": None, "inf": None, "b": True, "s": "x",
                   "a": [[1, 2], [3, 4]], "t": ["d/e", None, "y", 2.5]}  # fmt: skip
    assert type(out["1"]) is int and type(out["b"]) is bool and type(out["s"]) is str
    assert type(out["f"]) is float
    json.dumps(out, allow_nan=False)  # plain JSON throughout
