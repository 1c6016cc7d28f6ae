#!/usr/bin/env python3
"""The results of 'make check': one owner of how they are read and judged.

A result is a line "VERDICT NAME" (VERDICT: PASS, FAIL or SKIP; for a
SKIP, " # REASON" may follow), or "RETRY NAME # WHY": a stage that ran
again, for WHY (scripts/l1-run.sh's second boot of a stuck L1).  Every test of the harness writes such lines,
directly or through the two parsers here:

  results.py ktap PREFIX <OUTPUT     a kselftest's KTAP output ("ok 3 name:
                                     ...", "ok 4 # SKIP name: why", "not ok
                                     5 name") -> a line per sub-test, named
                                     PREFIX/name
  results.py perftest PREFIX <OUTPUT 'perf test' output -> a line per test
                                     and sub-test, named PREFIX/DESCRIPTION
                                     (a sub-test PREFIX/PARENT :: DESCRIPTION)

and the whole run is judged against tests/expected, the list of every
result make check must record, each expected to pass unless it names the
condition of this host under which it skips (scripts/host-caps.py probes
them once per run):

  results.py check [--caps CAPS] [--only PREFIXES | --without PREFIXES]
                   [--nested PREFIX] RESULTS EXPECTED [EXTRA]
        prints the conditions the list relied on, a line per problem and
        "N passed, N failed, N skipped, N retried"; exits 1 on any FAIL,
        any SKIP the list does not allow here (a skip whose condition does
        not hold on this host included), any listed result missing, a
        skip whose condition holds that passed (the entry or the probe is
        wrong), any result the list does not name, a result recorded
        twice, more than MAX_RETRIES retries, or no results at all.  CAPS:
        host-caps.py's answers; EXTRA: more expected names (make check's
        checkpatch results, one per patch).  --only: the list's entries
        under those prefixes (comma-separated) only, --without: all but
        those (make check-host runs the one part, make check the other);
        --nested: results under PREFIX were judged by a run of their own
        (make check-host inside L1, whose verdict is a result of this
        list): counted, not judged again.
  results.py accept [--nested PREFIX] RESULTS EXPECTED
        rewrites EXPECTED from a run's RESULTS, keeping the reasons of the
        skips it still allows and its comments; a new skip gets the reason
        the test gave, to be read and edited before committing.  Results
        under PREFIX (a nested run's) are listed by their own names.
  results.py count RESULTS [PREFIX]
        "N passed, N failed, N skipped, N retried" of RESULTS (of the
        names under PREFIX/ only), not judged: for a stage's own line.
  results.py notrun [--caps CAPS] EXPECTED PREFIX
        the descriptions of PREFIX's tests that the list marks "not run",
        unconditionally or under a condition that holds here (perf test
        --skip takes their numbers).
  results.py alone EXPECTED PREFIX
        the descriptions of PREFIX's tests that the list marks "alone":
        they must pass, and run by themselves after the others.
"""

import re
import sys

VERDICTS = ("PASS", "FAIL", "SKIP", "RETRY")
# A run may boot a stuck L1 once more; past that the emulator, not chance,
# is the problem.
MAX_RETRIES = 1
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


KINDS = {"alone": "alone", "skip": "skip", "not run": "notrun"}
NOTE = re.compile(r"^(alone|skip|not run)(?: if ([a-z0-9:+_.-]+(?: or [a-z0-9:+_.-]+)*))?: (.+)$")


def read_expected(path):
    """{name: (kind, conditions, reason)}: kind 'pass', 'alone', 'skip' or
    'notrun'; conditions a tuple of names, any of which holding is enough.

    A line is NAME, or NAME<TAB>alone: REASON, or NAME<TAB>skip if
    CONDITION[ or CONDITION...]: REASON, or NAME<TAB>not run[ if
    CONDITION...]: REASON.  A skip always has a condition.
    """
    expected = {}
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            name, _, note = line.partition("\t")
            note = note.strip()
            kind, conds, reason = "pass", (), ""
            if note:
                m = NOTE.match(note)
                if (not m or (m.group(1) == "skip" and not m.group(2)) or
                        (m.group(1) == "alone" and m.group(2))):
                    sys.exit(f"{path}:{number}: want NAME<TAB>alone: REASON, "
                             f"NAME<TAB>skip if CONDITION: REASON or "
                             f"NAME<TAB>not run[ if CONDITION]: REASON, not {line!r}")
                kind, reason = KINDS[m.group(1)], m.group(3).strip()
                conds = tuple(m.group(2).split(" or ")) if m.group(2) else ()
            if name.strip() in expected:
                sys.exit(f"{path}:{number}: {name.strip()} is listed twice")
            expected[name.strip()] = (kind, conds, reason)
    return expected


def read_caps(path):
    """{condition: (holds, evidence)} from scripts/host-caps.py's answers."""
    caps = {}
    if not path:
        return caps
    with open(path, encoding="utf-8") as f:
        for line in f:
            key, _, rest = line.rstrip("\n").partition("\t")
            answer, _, evidence = rest.partition("\t")
            if answer in ("yes", "no"):
                caps[key] = (answer == "yes", evidence)
    return caps


def holds(conds, caps, used):
    """Whether any of CONDS holds here (True when CONDS is empty); None
    when one of them was not probed.  Those looked up go into USED."""
    if not conds:
        return True
    answer = False
    for cond in conds:
        if cond not in caps:
            return None
        used.add(cond)
        answer = answer or caps[cond][0]
    return answer


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


def in_scope(name, only, without):
    """Whether a list entry is this run's (--only, --without)."""
    if only:
        return name.startswith(tuple(only))
    return not name.startswith(tuple(without))


def check(results_path, expected_path, extra_path=None, caps_path=None,
          only=(), without=(), nested=None):
    results = read_results(results_path)
    expected = {name: e for name, e in read_expected(expected_path).items()
                if in_scope(name, only, without)}
    caps = read_caps(caps_path)
    if extra_path:
        with open(extra_path, encoding="utf-8") as f:
            for name in f:
                if name.strip():
                    expected.setdefault(name.strip(), ("pass", (), ""))
    problems, seen, used = [], set(), set()
    passed = failed = skipped = retried = 0
    for verdict, name, reason in results:
        if verdict == "RETRY":
            retried += 1
            problems.append(f"retried: {name} ({reason or 'no reason given'})")
            continue
        if nested and name.startswith(nested):
            passed += verdict == "PASS"
            failed += verdict == "FAIL"
            skipped += verdict == "SKIP"
            continue
        if name in seen:
            failed += 1
            problems.append(f"recorded twice: {name}")
        seen.add(name)
        kind, conds, _ = expected.get(name, (None, (), ""))
        allowed = holds(conds, caps, used) if kind in ("skip", "notrun") else False
        if allowed is None:
            failed += 1
            problems.append(f"{name}: its condition ({' or '.join(conds)}) was not "
                            f"probed ({caps_path or 'no --caps'})")
        elif verdict == "FAIL":
            failed += 1
            problems.append(f"failed: {name}")
        elif verdict == "SKIP":
            if allowed:
                skipped += 1
            else:
                failed += 1
                why = (f"its condition ({' or '.join(conds)}) does not hold here"
                       if conds else f"{expected_path} does not allow it")
                problems.append(f"skipped, and {why}: {name} ({reason or 'no reason given'})")
        elif allowed and conds:
            failed += 1
            problems.append(f"passed, but its condition ({' or '.join(conds)}) holds "
                            f"here, where it should skip: the entry or the probe "
                            f"(scripts/host-caps.py) is wrong: {name}")
        elif kind in ("skip", "notrun") and not conds:
            failed += 1
            problems.append(f"passed, but {expected_path} says it is not run (a stale "
                            f"entry: drop it): {name}")
        elif kind is None:
            failed += 1
            problems.append(f"passed, but {expected_path} does not name it (add it): {name}")
        else:
            passed += 1
    # A test with sub-tests that the list leaves out by a condition (perf
    # test --skip) reports itself, not its sub-tests; run, it reports only
    # its sub-tests.
    parents = {name.split(SUB)[0] for name in expected if SUB in name}
    missing = [name for name in expected if name not in seen and
               not (name in parents and any(s.startswith(name + SUB) for s in seen)) and
               not (SUB in name and name.split(SUB)[0] in seen)]
    for name in missing:
        problems.append(f"missing: {name} (listed in {expected_path}, no result)")
    failed += len(missing)
    if not results:
        failed += 1
        problems.append(f"no results at all in {results_path}")
    if retried > MAX_RETRIES:
        failed += 1
        problems.append(f"{retried} retries in one run: more than {MAX_RETRIES}")
    for cond in sorted(used):
        print(f"condition {cond}: {'yes' if caps[cond][0] else 'no'} ({caps[cond][1]})")
    for p in problems:
        print(p)
    print(f"{passed} passed, {failed} failed, {skipped} skipped, {retried} retried")
    return 1 if failed else 0


def count(results_path, prefix=""):
    """How many results of each verdict RESULTS holds (under PREFIX/)."""
    n = {v: 0 for v in VERDICTS}
    for verdict, name, _ in read_results(results_path):
        if not prefix or name.startswith(prefix + "/"):
            n[verdict] += 1
    print(f"{n['PASS']} passed, {n['FAIL']} failed, {n['SKIP']} skipped, {n['RETRY']} retried")
    return 0


def entry(name, kind, conds, why):
    """A line of tests/expected."""
    if kind == "pass":
        return f"{name}\n"
    word = {kind: word for word, kind in KINDS.items()}[kind]
    cond = f" if {' or '.join(conds)}" if conds else ""
    return f"{name}\t{word}{cond}: {why}\n"


def accept(results_path, expected_path, nested=None):
    """Rewrite the list from a run, keeping comments, conditions and
    reasons; a new skip gets the condition CONDITION? to be filled in."""
    old = read_expected(expected_path)
    with open(expected_path, encoding="utf-8") as f:
        header = []
        for line in f:
            if not line.startswith("#") and line.strip():
                break
            header.append(line)
    body, seen = [], set()
    for verdict, name, reason in read_results(results_path):
        if name.startswith("checkpatch/") or verdict == "RETRY":
            continue
        if nested and name.startswith(nested):
            name = name[len(nested):]
        # A test left out under a condition that did not hold here ran as
        # its sub-tests: its own line stays, before theirs.
        parent = name.split(SUB)[0]
        if SUB in name and parent not in seen and old.get(parent, ("",))[0] == "notrun":
            seen.add(parent)
            body.append(entry(parent, *old[parent]))
        seen.add(name)
        kind, conds, why = old.get(name, ("pass", (), ""))
        if verdict == "SKIP" and kind in ("pass", "alone"):
            kind, conds, why = "skip", ("CONDITION?",), reason or "REASON?"
        body.append(entry(name, kind, conds, why))
        # Left out here, it reported itself: its sub-tests' lines stay.
        if kind == "notrun":
            body.extend(entry(sub, *old[sub]) for sub in old if sub.startswith(name + SUB))
    with open(expected_path, "w", encoding="utf-8") as f:
        f.writelines(header + body)
    return 0


def descriptions(expected_path, prefix, which, caps_path=None):
    """The top-level descriptions of PREFIX's tests of kind WHICH, those
    with conditions only where one holds here."""
    caps = read_caps(caps_path)
    for name, (kind, conds, _) in read_expected(expected_path).items():
        if kind != which or not name.startswith(prefix + "/"):
            continue
        answer = holds(conds, caps, set())
        if answer is None:
            sys.exit(f"{name}: its condition ({' or '.join(conds)}) was not probed "
                     f"({caps_path or 'no --caps'})")
        if answer:
            print(name[len(prefix) + 1:].split(SUB)[0])
    return 0


def main(argv):
    usage = __doc__.split("\n\n")[1]
    if len(argv) < 2:
        sys.exit(usage)
    cmd, args = argv[1], argv[2:]
    opts = {}
    while len(args) > 1 and args[0] in ("--caps", "--only", "--without", "--nested"):
        opts[args[0][2:]] = args[1]
        del args[:2]
    caps = opts.pop("caps", None)
    # The options each command takes, besides --caps.
    takes = {"check": {"only", "without", "nested"}, "accept": {"nested"}}
    if not set(opts) <= takes.get(cmd, set()) or {"only", "without"} <= set(opts):
        sys.exit(usage)
    if cmd in ("ktap", "perftest") and len(args) == 1:
        for line in (ktap if cmd == "ktap" else perftest)(args[0], sys.stdin):
            print(line)
        return 0
    if cmd == "check" and len(args) in (2, 3):
        return check(*args, caps_path=caps,
                     only=[p for p in opts.get("only", "").split(",") if p],
                     without=[p for p in opts.get("without", "").split(",") if p],
                     nested=opts.get("nested"))
    if cmd == "count" and len(args) in (1, 2):
        return count(*args)
    if cmd == "accept" and len(args) == 2:
        return accept(*args, nested=opts.get("nested"))
    if cmd in ("notrun", "alone") and len(args) == 2:
        return descriptions(*args, cmd, caps_path=caps)
    sys.exit(usage)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
