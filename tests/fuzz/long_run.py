"""The long fuzz run and its report.

    .venv/bin/python tests/fuzz/long_run.py [--out DIR] [--workers 2] [--scale 1.0] [--max-minutes 25]
    .venv/bin/python tests/fuzz/long_run.py --report-only --out DIR

Runs ``pytest tests/fuzz --hypothesis-profile=long`` with the per-case log and the
findings in DIR (default /tmp/fuzz_findings), then reports from the log: cases per family
and per outcome (exit code, sigN, hang), and every violation grouped by its cause, each
with the smallest saved reproducer (a folder with the input files and cmd.sh). A run cut
short by --max-minutes still reports what it did: the log is written case by case.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def git_state() -> str:
    def git(*args):
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=False).stdout.strip()

    diff = subprocess.run(["git", "diff", "HEAD"], cwd=REPO, capture_output=True, check=False).stdout
    import hashlib

    changed = git("status", "--short").splitlines()
    return (f"HEAD {git('rev-parse', 'HEAD')}\nuncommitted diff sha1 {hashlib.sha1(diff).hexdigest()} "
            f"({len(changed)} paths changed or new)\n" + "\n".join(changed) + "\n")


def run(out: Path, workers: int, scale: float, max_minutes: float) -> int:
    out.mkdir(parents=True, exist_ok=True)
    (out / "state.txt").write_text(git_state())
    env = dict(os.environ, DOJO_FUZZ_LOG=str(out / "log"), DOJO_FUZZ_FINDINGS=str(out / "findings"),
               DOJO_FUZZ_SCALE=str(scale))
    cmd = [sys.executable, "-m", "pytest", "tests/fuzz", "-p", "no:cacheprovider", "-q", "-rN",
           "--hypothesis-profile=long", "--hypothesis-show-statistics"]
    if workers > 1:
        cmd += ["-n", str(workers)]
    start = time.monotonic()
    with open(out / "pytest.log", "w") as log:
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            rc = proc.wait(timeout=max_minutes * 60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGINT)
            try:
                rc = proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                rc = proc.wait()
            print(f"stopped after {max_minutes:g} minutes (the report covers the cases run so far)")
    (out / "wall_time.txt").write_text(f"{time.monotonic() - start:.0f} s, pytest exit {rc}\n")
    return rc


def _input_size(saved: str) -> int:
    d = Path(saved)
    skip = {"cmd.sh", "stdout.txt", "stderr.txt", "violations.txt", "outcome.txt"}
    return sum(p.stat().st_size for p in d.iterdir() if p.name not in skip and p.is_file()) if d.is_dir() else 1 << 60


def report(out: Path) -> str:
    rows = []
    for f in sorted((out / "log").glob("*.jsonl")):
        for line in f.read_text(errors="replace").splitlines():
            if line.strip():
                rows.append(json.loads(line))
    lines = [f"# Fuzz report: {out}", ""]
    if (out / "state.txt").exists():
        lines += ["Code under test:", "```", (out / "state.txt").read_text().strip(), "```", ""]
    if (out / "wall_time.txt").exists():
        lines += [f"Wall time: {(out / 'wall_time.txt').read_text().strip()}", ""]
    families = sorted({r["family"] for r in rows})
    outcomes = sorted({r["outcome"] for r in rows}, key=lambda o: (not o.isdigit(), int(o) if o.isdigit() else 0, o))
    lines += [f"## Cases: {len(rows)} processes", "",
              "| family | cases | with violations | " + " | ".join(f"exit {o}" if o.isdigit() else o for o in outcomes) + " |",
              "|---|---|---|" + "---|" * len(outcomes)]
    for fam in families:
        sub = [r for r in rows if r["family"] == fam]
        c = collections.Counter(r["outcome"] for r in sub)
        bad = sum(1 for r in sub if r["violations"])
        lines.append(f"| {fam} | {len(sub)} | {bad} | " + " | ".join(str(c.get(o, 0)) for o in outcomes) + " |")
    lines += ["", "Per command:", "", "| family | command | cases | outcomes |", "|---|---|---|---|"]
    for (fam, cmd), n in sorted(collections.Counter((r["family"], r["command"]) for r in rows).items()):
        c = collections.Counter(r["outcome"] for r in rows if r["family"] == fam and r["command"] == cmd)
        lines.append(f"| {fam} | {cmd} | {n} | " + ", ".join(f"{o}: {k}" for o, k in sorted(c.items())) + " |")
    real = [r for r in rows if r.get("how") == "real"]
    lines += ["", f"True-subprocess sample: {len(real)} cases (the rest through the fork server).", ""]

    groups: dict[str, list[dict]] = collections.defaultdict(list)
    for r in rows:
        for v in r["violations"]:
            groups[v].append(r)
    lines += [f"## Violations: {sum(len(g) for g in groups.values())} in {len(groups)} groups", ""]
    for v, cases in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        fams = collections.Counter(r["family"] for r in cases)
        cmds = collections.Counter(r["command"] for r in cases)
        saved = sorted((r["saved"] for r in cases if r.get("saved")), key=_input_size)
        lines.append(f"### {len(cases)} x {v}")
        lines.append(f"families: {dict(fams)}; commands: {dict(cmds)}")
        if saved:
            d = Path(saved[0])
            cmd = (d / "cmd.sh").read_text().strip().splitlines()[-1] if (d / "cmd.sh").exists() else "?"
            err = (d / "stderr.txt").read_text(errors="replace").strip().splitlines() if (d / "stderr.txt").exists() else []
            lines += [f"reproducer: `cd {d} && {cmd}`", "", "```", *[ln[:200] for ln in err[-6:]], "```"]
        else:
            shortest = min(cases, key=lambda r: len(json.dumps(r["argv"])))
            lines.append(f"example: {shortest['argv']}")
        lines.append("")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path("/tmp/fuzz_findings"))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--scale", type=float, default=1.0, help="multiplies the long profile's examples (900 x family weight)")
    ap.add_argument("--max-minutes", type=float, default=25.0)
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args()
    if not args.report_only:
        run(args.out, args.workers, args.scale, args.max_minutes)
    text = report(args.out)
    (args.out / "report.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
