#!/usr/bin/env bash
# The wheel as a user gets it: build it, install it WITHOUT extras into a clean venv with plain
# pip (no lock: the newest versions that resolve today), and use it from outside the checkout.
# Run by .ci/run after `make test` (and by `make smoke`).  Prints what it checks; exits non-zero
# at the first check that fails.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
PY=${PYTHON:-python3}
UV=${UV:-$repo/.venv/bin/uv}
work=$(mktemp -d "${TMPDIR:-/tmp}/privlab-smoke.XXXXXX")
trap 'rm -rf "$work"' EXIT
# the custodian's release registry (privlab._registry) of this run only: never the home's,
# where an earlier run (or the user's own releases of Adult) would refuse a second release
export PRIVLAB_REGISTRY="$work/registry"
unset PRIVLAB_EPSILON_TOTAL

fail() { echo "smoke: FAILED: $*" >&2; exit 1; }

echo "smoke: building the wheel"
"$UV" build --quiet --wheel --out-dir "$work/dist" "$repo"
wheel=$(ls "$work"/dist/privlab-*.whl)
"$PY" - "$wheel" <<'PYEOF' || fail "the wheel lacks py.typed or LICENSE"
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
assert "privlab/py.typed" in names, "no py.typed"
assert any(n.endswith("licenses/LICENSE") for n in names), "no LICENSE"
PYEOF

echo "smoke: pip install $(basename "$wheel") (no extras) into a clean venv"
"$PY" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --quiet --disable-pip-version-check "$wheel"
bin="$work/venv/bin"
cd "$work"  # away from the checkout: only the installed package is importable

"$bin/python" - <<'EOF'
import importlib.metadata as md
import importlib.util

import privlab

print("smoke: import privlab", privlab.__version__, "on", ", ".join(
    f"{d} {md.version(d)}" for d in ("numpy", "pandas", "scipy", "pyarrow", "scikit-learn", "typer")
))
assert privlab.__version__ == md.version("privlab"), "privlab.__version__ != the installed one"
for extra in ("pyspark", "pytest", "polars", "playwright", "mbi", "jax"):
    assert importlib.util.find_spec(extra) is None, f"{extra} came with a plain install"
EOF

# the lock should hold what a user gets; a newer release upstream is a note, not a failure
"$bin/python" - "$repo/requirements/test.lock" <<'EOF'
import importlib.metadata as md
import re
import sys

locked = {}
for line in open(sys.argv[1]):
    m = re.match(r"([A-Za-z0-9_.-]+)==([^\s;]+)\s*(?:;\s*(.*))?$", line.strip())
    here = "python_full_version < '3.12'" if sys.version_info < (3, 12) else ">= '3.12'"
    if m and (m[3] is None or here in m[3]):
        locked[m[1].lower()] = m[2]
for d in ("numpy", "pandas", "scipy", "pyarrow", "scikit-learn", "typer", "numba"):
    if locked.get(d) != md.version(d):
        print(f"smoke: note: {d} {md.version(d)} installs, the lock has {locked.get(d)}: "
              "run `make lock` and commit requirements/test.lock")
EOF

v=$("$bin/privlab" --version) || fail "privlab --version exited $?"
[ "$v" = "privlab $("$bin/python" -c 'import privlab; print(privlab.__version__)')" ] \
    || fail "privlab --version printed '$v'"
echo "smoke: $v"

# usage errors: exit 2, one line on stderr, "error:", never the "bug" path
usage() {
    local rc=0
    "$bin/privlab" "$@" >"$work/out" 2>"$work/err" || rc=$?
    [ "$rc" = 2 ] || fail "privlab $* exited $rc, not 2: $(cat "$work/err")"
    [ "$(wc -l <"$work/err")" -le 1 ] || fail "privlab $* printed more than one line: $(cat "$work/err")"
    grep -q "^error: " "$work/err" || fail "privlab $* printed no 'error:' line"
    if grep -q "bug" "$work/err"; then fail "privlab $* took the bug path: $(cat "$work/err")"; fi
    [ ! -s "$work/out" ] || fail "privlab $* wrote to stdout"
    echo "smoke: privlab $* -> exit 2: $(cat "$work/err")"
}
usage anatomize adult --qi sex --sensitive occupation --l abc --out bad
usage pram adult --columns race
usage no-such-command
usage check "$work/no-such-release"
# DP synthetic data needs the synth extra: without it, one line saying how to install it
usage synth mst adult --epsilon 1 --out syn
grep -q "privlab\[synth\]" "$work/err" || fail "synth without mbi does not say how to install it"
[ ! -e syn ] || fail "synth without mbi left syn behind"

echo "smoke: privlab app serves its pages (templates and style sheet in the wheel), token needed"
"$bin/python" - "$bin/privlab" <<'PY' || fail "privlab app"
import http.cookiejar, re, select, signal, subprocess, sys, urllib.error, urllib.request
proc = subprocess.Popen([sys.argv[1], "app", "--no-browser", "--workdir", "app-work"],
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
try:
    ready, _, _ = select.select([proc.stdout], [], [], 60)
    m = re.search(r"(http://127\.0\.0\.1:\d+)/\?token=(\S+)", proc.stdout.readline() if ready else "")
    assert m, "privlab app printed no address"
    base, token = m.groups()
    try:
        urllib.request.urlopen(base + "/")
        raise AssertionError("a request without the token was served")
    except urllib.error.HTTPError as e:
        assert e.code == 403, e.code
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
    page = opener.open(f"{base}/?token={token}").read().decode()
    assert "1. Data" in page and "adult" in page, "the data page is missing"
    css = opener.open(base + "/static/app.css").read().decode()
    assert ".verdict" in css, "the style sheet is missing"
finally:
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=30)
print("smoke: privlab app served its data page and style sheet; 403 without the token")
PY

echo "smoke: anatomize + check + report on the bundled Adult data"
"$bin/privlab" anatomize adult --qi workclass,relationship,sex,salary --sensitive occupation \
    --l 3 --custody rel.custody --out rel >/dev/null 2>"$work/err" || fail "anatomize: $(cat "$work/err")"
"$bin/privlab" check rel >"$work/out" 2>"$work/err" || fail "check: $(cat "$work/err")"
grep -q "l" "$work/out" || fail "check printed nothing"
# a short attack (the packaging is what is tested here; the suite tests the attack's length)
printf '[attack]\niterations = 300\nchains = 2\nretry = false\n' >short.toml
"$bin/privlab" report rel --custody rel.custody --config short.toml --out rel.html >/dev/null \
    2>"$work/err" || fail "report: $(cat "$work/err")"
grep -qi "<html" rel.html || fail "report wrote no HTML"
grep -Eq "PASS|REVIEW|FAIL" rel.html || fail "the report holds no verdict"
# a second release of the same input is refused (one line, exit 2, nothing written) unless the
# custodian says --republish
rc=0
"$bin/privlab" anatomize adult --qi workclass,relationship,sex,salary --sensitive occupation \
    --l 3 --out rel2 >/dev/null 2>"$work/err" || rc=$?
[ "$rc" = 2 ] || fail "a second release of Adult exited $rc, not 2: $(cat "$work/err")"
grep -q "registry" "$work/err" || fail "the refusal does not name the registry: $(cat "$work/err")"
[ ! -e rel2 ] || fail "the refused release left rel2 behind"
"$bin/privlab" anatomize adult --qi workclass,relationship,sex,salary --sensitive occupation \
    --l 3 --republish --out rel2 >/dev/null 2>"$work/err" || fail "--republish: $(cat "$work/err")"
[ -f rel2/release.json ] || fail "--republish wrote no release"
[ -d "$PRIVLAB_REGISTRY" ] || fail "the registry is not where PRIVLAB_REGISTRY says"
echo "smoke: a second release refused, then published with --republish"
echo "smoke: passed"
