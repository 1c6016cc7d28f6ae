#!/usr/bin/env python3
"""The results of 'make check': one owner of how they are read and judged.

A result is a line "VERDICT NAME" (VERDICT: PASS, FAIL or SKIP; for a
SKIP, " # REASON" may follow).  Every test of the harness writes such lines,
directly or through the two parsers here:

  results.py ktap PREFIX <OUTPUT     a kselftest's KTAP output ("ok 3 name:
                                     ...", "ok 4 # SKIP name: why", "not ok
                                     5 name") -> a line per sub-test, named
                                     PREFIX/name
  results.py perftest PREFIX <OUTPUT 'perf test' output -> a line per test
                                     and sub-test, named PREFIX/DESCRIPTION
                                     (a sub-test PREFIX/PARENT :: DESCRIPTION)

and the whole run is judged against tests/expected, the list of every
result make check must record, each expected to pass unless it says why
it may skip:

  results.py check RESULTS EXPECTED [EXTRA]
        prints a line per problem and "N passed, N failed, N skipped";
        exits 1 on any FAIL, any SKIP the list does not allow, any listed
        result missing, any listed skip that passed (a stale entry), any
        result the list does not name, a result recorded twice, or no
        results at all.  EXTRA: more
        expected names (make check's checkpatch results, one per patch).
  results.py accept RESULTS EXPECTED
        rewrites EXPECTED from a run's RESULTS, keeping the reasons of the
        skips it still allows and its comments; a new skip gets the reason
        the test gave, to be read and edited before committing.
  results.py notrun EXPECTED PREFIX
        the descriptions of PREFIX's tests that the list marks "not run"
        (perf test --skip takes their numbers).
  results.py alone EXPECTED PREFIX
        the descriptions of PREFIX's tests that the list marks "alone":
        they must pass, and run by themselves after the others.
"""

import re
import sys

VERDICTS = ("PASS", "FAIL", "SKIP")
# A kselftest's way of saying that a sub-test was not selected (-t NAME):
# not a result at all.
NOT_SELECTED = "left out by -t"


def parse_result(line):
    """(verdict, name, reason) of a result line, or None."""
    line = line.rstrip("\n")
    verdict, _, rest = line.partition(" ")
    if verdict not in VERDICTS or not rest:
        return None
    name, sep, reason = rest.partition(" # ")
    return verdict, name.strip(), reason.strip() if sep else ""


def read_results(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return [r for r in map(parse_result, f) if r]


def read_expected(path):
    """{name: (kind, reason)}: kind 'pass', 'alone', 'skip' or 'notrun'.

    A line is NAME, or NAME<TAB>alone: REASON, or NAME<TAB>skip: REASON,
    or NAME<TAB>not run: REASON.
    """
    expected = {}
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            name, _, note = line.partition("\t")
            note = note.strip()
            kind, reason = "pass", ""
            if note:
                kind, _, reason = note.partition(":")
                kind = {"alone": "alone", "skip": "skip",
                        "not run": "notrun"}.get(kind.strip())
                reason = reason.strip()
                if not kind or not reason:
                    sys.exit(f"{path}:{number}: want NAME<TAB>alone: REASON, "
                             f"NAME<TAB>skip: REASON or NAME<TAB>not run: "
                             f"REASON, not {line!r}")
            if name.strip() in expected:
                sys.exit(f"{path}:{number}: {name.strip()} is listed twice")
            expected[name.strip()] = (kind, reason)
    return expected


def unique(name, seen):
    """NAME, or NAME (2), (3)... when a run has it already."""
    seen[name] = seen.get(name, 0) + 1
    return name if seen[name] == 1 else f"{name} ({seen[name]})"


KTAP = re.compile(r"^\s*(not ok|ok) \d+ ?(.*)$")


def ktap(prefix, lines):
    """Result lines of a kselftest's KTAP output, a sub-test each."""
    out, seen = [], {}
    for line in lines:
        m = KTAP.match(line.rstrip("\r\n"))
        if not m:
            continue
        status, text = m.groups()
        skip = False
        if text.startswith("# SKIP"):
            skip, text = True, text[len("# SKIP"):].strip()
        elif " # SKIP" in text:
            text, _, why = text.partition(" # SKIP")
            skip, text = True, f"{text}: {why.strip()}"
        name, _, detail = text.partition(":")
        name = name.strip() or "unnamed"
        if skip and detail.strip() == NOT_SELECTED:
            continue
        if status == "not ok":
            verdict = "FAIL"
        else:
            verdict = "SKIP" if skip else "PASS"
        line = f"{verdict} {prefix}/{unique(name, seen)}"
        if verdict == "SKIP":
            line += f" # {detail.strip() or 'no reason given'}"
        out.append(line)
    return out


# Between a perf test's description and its sub-test's: descriptions may
# hold "/" and ":" ("Zstd perf.data compression/decompression").
SUB = " :: "
# " 12: Description   : Ok", " 12.3: Sub description : Skip (why)",
# " 12: Description   :" (a parent; its sub-tests follow).
PERF_TEST = re.compile(r"^\s*(\d+)(\.\d+)?: (.*?)\s*:\s*(Ok|FAILED!|Skip.*)?\s*$")


def perftest(prefix, lines):
    """Result lines of 'perf test' output, a test or sub-test each."""
    out, seen, parent, overridden = [], {}, {}, set()
    for line in lines:
        m = PERF_TEST.match(line.rstrip("\r\n"))
        if not m:
            continue
        number, sub, desc, verdict = m.groups()
        if not sub:
            parent[number] = desc
        if verdict is None:
            continue
        # perf test says a test skipped on request once in each of its
        # passes (parallel tests, then exclusive ones): one result.
        if verdict == "Skip (user override)":
            if number in overridden:
                continue
            overridden.add(number)
        name = f"{parent.get(number, number)}{SUB}{desc}" if sub else desc
        name = unique(f"{prefix}/{name}", seen)
        if verdict == "Ok":
            out.append(f"PASS {name}")
        elif verdict.startswith("Skip"):
            why = verdict[len("Skip"):].strip(" ()") or "no reason given"
            out.append(f"SKIP {name} # {why}")
        else:
            out.append(f"FAIL {name}")
    return out


def check(results_path, expected_path, extra_path=None):
    results = read_results(results_path)
    expected = read_expected(expected_path)
    if extra_path:
        with open(extra_path, encoding="utf-8") as f:
            for name in f:
                if name.strip():
                    expected.setdefault(name.strip(), ("pass", ""))
    problems, seen = [], set()
    passed = failed = skipped = 0
    for verdict, name, reason in results:
        if name in seen:
            failed += 1
            problems.append(f"recorded twice: {name}")
        seen.add(name)
        kind, _ = expected.get(name, (None, ""))
        if verdict == "FAIL":
            failed += 1
            problems.append(f"failed: {name}")
        elif verdict == "SKIP":
            if kind in ("skip", "notrun"):
                skipped += 1
            else:
                failed += 1
                problems.append(f"skipped, and {expected_path} does not allow it: "
                                f"{name} ({reason or 'no reason given'})")
        elif kind in ("skip", "notrun"):
            failed += 1
            problems.append(f"passed, but {expected_path} says it skips (a stale "
                            f"entry: drop it): {name}")
        elif kind is None:
            failed += 1
            problems.append(f"passed, but {expected_path} does not name it (add it): {name}")
        else:
            passed += 1
    missing = [name for name in expected if name not in seen]
    for name in missing:
        problems.append(f"missing: {name} (listed in {expected_path}, no result)")
    failed += len(missing)
    if not results:
        failed += 1
        problems.append(f"no results at all in {results_path}")
    for p in problems:
        print(p)
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


def accept(results_path, expected_path):
    """Rewrite the list from a run, keeping comments and skip reasons."""
    old = read_expected(expected_path)
    with open(expected_path, encoding="utf-8") as f:
        header = []
        for line in f:
            if not line.startswith("#") and line.strip():
                break
            header.append(line)
    body = []
    for verdict, name, reason in read_results(results_path):
        if name.startswith("checkpatch/"):
            continue
        kind, why = old.get(name, ("pass", ""))
        if verdict == "SKIP":
            if kind in ("pass", "alone"):
                kind, why = "skip", reason or "REASON?"
            body.append(f"{name}\t{'not run' if kind == 'notrun' else 'skip'}: {why}\n")
        elif kind == "alone":
            body.append(f"{name}\talone: {why}\n")
        else:
            body.append(f"{name}\n")
    with open(expected_path, "w", encoding="utf-8") as f:
        f.writelines(header + body)
    return 0


def descriptions(expected_path, prefix, which):
    """The top-level descriptions of PREFIX's tests of kind WHICH."""
    for name, (kind, _) in read_expected(expected_path).items():
        if kind == which and name.startswith(prefix + "/"):
            print(name[len(prefix) + 1:].split(SUB)[0])
    return 0


def main(argv):
    usage = __doc__.split("\n\n")[1]
    if len(argv) < 2:
        sys.exit(usage)
    cmd, args = argv[1], argv[2:]
    if cmd in ("ktap", "perftest") and len(args) == 1:
        for line in (ktap if cmd == "ktap" else perftest)(args[0], sys.stdin):
            print(line)
        return 0
    if cmd == "check" and len(args) in (2, 3):
        return check(*args)
    if cmd == "accept" and len(args) == 2:
        return accept(*args)
    if cmd in ("notrun", "alone") and len(args) == 2:
        return descriptions(*args, cmd)
    sys.exit(usage)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
