#!/usr/bin/python3
"""Run `singa` on every case of the malformed-model corpus and check how it refuses each.

    /usr/bin/python3 run_cases.py SINGA CORPUS [--timeout SEC] [--jobs N] [--filter SUBSTRING]
                                 [--wrapper 'CMD ARGS'] [--no-strace]

For every case of CORPUS/manifest.json (written by make_cases.py) it requires:
  - the documented exit code (1, or 2 for bad usage): not 0, not a signal, not a sanitizer abort;
  - exactly one `singa: error:` line on stderr, containing the case's expected substring;
  - an end within --timeout seconds;
  - no file opened inside CORPUS but outside the case's own folder (strace -f watches every open;
    paths are resolved, so a symlink inside the folder that points out is caught too). Without
    strace that last check is reported as not done, never silently passed.
A case marked xfail in the manifest (a known gap, with the fix to make) may get the message or
exit code wrong, never the rest; once it passes completely it fails the run until the mark goes.
--wrapper runs each command under another program (e.g. valgrind). Exit status 0 when all pass.
"""

import argparse
import concurrent.futures
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

OPEN_RE = re.compile(r'^\d+\s+(?:open|openat|openat2|creat)\((?:[A-Z_]+|\d+), "((?:[^"\\]|\\.)*)"|'
                     r'^\d+\s+(?:open|creat)\("((?:[^"\\]|\\.)*)"')


def opened_paths(trace_file):
    paths = []
    with open(trace_file, errors="replace") as f:
        for line in f:
            m = OPEN_RE.match(line)
            if m:
                paths.append((m.group(1) or m.group(2)).encode().decode("unicode_escape"))
    return paths


def leak_checked():
    """True in an ASan build run with LeakSanitizer on (sanitize.sh does that)."""
    return "detect_leaks=1" in os.environ.get("ASAN_OPTIONS", "")


def check_case(singa, corpus, c, args):
    c_problems, c_hard, line = run_case(singa, corpus, c, args, args.strace)
    if args.strace and leak_checked() and not c_hard:
        # LeakSanitizer cannot run under ptrace: a second run without strace checks the leaks.
        _, leak_hard, _ = run_case(singa, corpus, c, args, False)
        c_hard += leak_hard
    return c, c_problems, c_hard, line


def run_case(singa, corpus, c, args, strace):
    case_dir = os.path.realpath(os.path.join(corpus, "cases", c["name"]))
    root = os.path.realpath(corpus)
    cmd = [os.path.abspath(singa)] + [a.replace("{case}", case_dir) for a in c["args"]]
    if args.wrapper:
        cmd = shlex.split(args.wrapper) + cmd
    env = dict(os.environ)
    trace = None
    if strace:
        if "ASAN_OPTIONS" in env:
            env["ASAN_OPTIONS"] += ":detect_leaks=0"
        fd, trace = tempfile.mkstemp(prefix="malformed-", suffix=".strace")
        os.close(fd)
        cmd = ["strace", "-f", "-qq", "-e", "trace=open,openat,openat2,creat", "-o", trace] + cmd
    problems = []  # a wrong exit code or message: excused for a case marked xfail
    hard = []      # a signal, a hang, a sanitizer report, a file read outside: never excused
    try:
        # A neutral working folder: nothing may depend on being run from the model's folder.
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=args.timeout,
                           cwd=os.path.join(root, "outside"), env=env)
    except subprocess.TimeoutExpired:
        if trace:
            os.unlink(trace)
        return [], ["did not finish within %g s (hang?)" % args.timeout], ""
    stderr = p.stderr.decode(errors="replace")
    if p.returncode < 0:
        hard.append("killed by signal %d" % -p.returncode)
    elif p.returncode != c["exit"]:
        problems.append("exit code %d, expected %d" % (p.returncode, c["exit"]))
    errors = [l for l in stderr.splitlines() if l.startswith("singa: error:")]
    if c["exit"] == 0:
        if errors:
            problems.append("a valid control case gave %d error lines" % len(errors))
    elif len(errors) != 1:
        problems.append("%d 'singa: error:' lines, expected exactly one" % len(errors))
    elif c["expect"] not in errors[0].replace(case_dir, "<case>"):  # the folder name must not match
        problems.append("error line lacks %r" % c["expect"])
    for marker in ("AddressSanitizer", "LeakSanitizer", "runtime error:", "terminate called"):
        if marker in stderr:
            hard.append("stderr shows %r" % marker)
    if trace:
        for path in opened_paths(trace):
            full = os.path.realpath(os.path.join(case_dir, path))
            if (full == root or full.startswith(root + os.sep)) and not os.path.isdir(full) and \
                    not (full == case_dir or full.startswith(case_dir + os.sep)):
                hard.append("opened %s, outside the case's folder" % path)
        os.unlink(trace)
    if hard:
        return problems, hard, stderr.strip()[-1500:]
    return problems, hard, errors[0] if len(errors) == 1 else stderr.strip()[-400:]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("singa")
    ap.add_argument("corpus")
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--filter", default="")
    ap.add_argument("--wrapper", default="")
    ap.add_argument("--no-strace", dest="strace", action="store_false")
    ap.add_argument("--verbose", "-v", action="store_true", help="print each case's error line")
    args = ap.parse_args()
    with open(os.path.join(args.corpus, "manifest.json")) as f:
        cases = [c for c in json.load(f) if args.filter in c["name"]]
    if not cases:
        sys.exit("no case matches")
    if args.strace and not shutil.which("strace"):
        print("note: strace not found: the 'no file read outside the case folder' check is NOT done")
        args.strace = False
    # A case marked xfail documents a known gap in a message or exit code (with the fix to make);
    # once it passes the mark must go, so an unexpected pass fails the run too.
    failed = xfailed = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for c, problems, hard, line in pool.map(lambda c: check_case(args.singa, args.corpus, c, args), cases):
            name, xfail = c["name"], c.get("xfail")
            line = line.replace("\n", "\n     ")
            if hard:
                failed += 1
                print("FAIL %s: %s\n     %s" % (name, "; ".join(hard + problems), line))
            elif problems and xfail:
                xfailed += 1
                print("XFAIL %s: %s (known: %s)%s" % (name, "; ".join(problems), xfail, ("\n     " + line) if args.verbose else ""))
            elif problems:
                failed += 1
                print("FAIL %s: %s\n     %s" % (name, "; ".join(problems), line))
            elif xfail:
                failed += 1
                print("XPASS %s: passes now; remove its xfail mark in make_cases.py (%s)" % (name, xfail))
            else:
                print("PASS %s%s" % (name, ("  " + line) if args.verbose else ""))
    print("%d passed, %d failed, %d known gaps (of %d malformed cases%s)" %
          (len(cases) - failed - xfailed, failed, xfailed, len(cases), "" if args.strace else "; file-access check not done"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
