"""Mutation testing of the security-critical pure modules (`make mutation`).

Runs mutmut (3.x, pinned in docs/qa.md) on a throwaway copy of the repository, so the
working tree gets neither a `mutants/` folder nor mutmut configuration: the copy gets
its own `setup.cfg` [mutmut] section (pyproject.toml has no [tool.mutmut], so mutmut
reads setup.cfg). Prints the score per module, the survivors, and whether the goals of
docs/qa.md are met; exits 1 when they are not.

    .venv/bin/python scripts/mutation.py                 # every module below
    .venv/bin/python scripts/mutation.py gates paths     # only these (names as below)
    .venv/bin/python scripts/mutation.py --keep DIR      # keep the copy in DIR (then
                                                         # `cd DIR && mutmut show NAME`)

Survivors listed in EQUIVALENT (docs/qa.md gives each reason) are not counted against
the score: they cannot change any observable behaviour. Not part of `make test`: it
takes tens of minutes on 2 cores (docs/qa.md has the measured time).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent

_B = "tests/test_boundaries.py"
# module name -> (source file, the tests that cover it)
MODULES: dict[str, tuple[str, tuple[str, ...]]] = {
    "gates": ("src/markertools/deliver/gates.py", ("tests/deliver", _B)),
    "lineage": ("src/markertools/deliver/lineage.py", ("tests/deliver", _B)),
    "paths": ("src/markertools/deliver/paths.py", ("tests/deliver", _B)),
    "framing": ("src/markertools/inject/framing.py", ("tests/inject", "tests/deliver", _B)),
    "jsonstrict": ("src/markertools/parse/jsonstrict.py", ("tests/parse", _B)),
    "validate": ("src/markertools/parse/validate.py", ("tests/parse", _B)),
    "timeparse": ("src/markertools/domain/timeparse.py", ("tests/domain", "tests/parse")),
    "schedule": ("src/markertools/domain/schedule.py", ("tests/domain",)),
    "plans_machines": ("src/markertools/plans/_machines.py", ("tests/plans",)),
    "plans_quota": ("src/markertools/plans/_quota.py", ("tests/plans",)),
    "approval_rules": (
        "src/markertools/domain/approval_rules.py",
        ("tests/domain/test_approval_rules.py", "tests/deliver/test_deliver_approvals.py"),
    ),
    "approval_gate": (
        "src/markertools/deliver/approval_gate.py",
        ("tests/deliver/test_deliver_approvals.py",),
    ),
}
# goals (docs/qa.md): 0 left in every module (each survivor killed or listed in
# EQUIVALENT with its reason), so 100% in these as everywhere, and >= 95% overall
FULL: frozenset[str] = frozenset({"gates", "paths", "framing", "approval_rules", "approval_gate"})
OVERALL_GOAL = 95.0

# Survivors that are truly equivalent, by mutmut name; docs/qa.md gives each reason.
EQUIVALENT: dict[str, str] = {
    # gates: "tasks.gate_goal" takes no {verb} (en and zh), so the verb argument is unused
    "markertools.deliver.gates.x_control_gate__mutmut_16": "gate_goal template has no {verb}",
    "markertools.deliver.gates.x_control_gate__mutmut_19": "gate_goal template has no {verb}",
    "markertools.deliver.gates.x_control_gate__mutmut_23": "gate_goal template has no {verb}",
    # paths: no character of _CONTROL lies in 0xA0..0x2027, so `code <= 0xFF` equals
    # `code < 0xFF` and `code <= 256` on every input that reaches _escape_control
    "markertools.deliver.paths.x__escape_control__mutmut_17": "no control char is U+00FF",
    "markertools.deliver.paths.x__escape_control__mutmut_18": "no control char is U+0100",
    # paths: "UTF-8" is the same codec as "utf-8"
    "markertools.deliver.paths.x_display_name__mutmut_19": "codec name case",
    "markertools.deliver.paths.x_display_name__mutmut_28": "codec name case",
    # paths: a wider surrogate pre-check only sends more names through the
    # surrogateescape round trip, which is the identity on text without surrogates
    "markertools.deliver.paths.x_display_name__mutmut_2": "identity round trip",
    # framing: absent_variant always returns inside the loop (pigeonhole, see its
    # docstring), so a longer range and the unreachable error's text never show
    "markertools.inject.framing.x_absent_variant__mutmut_4": "loop returns earlier",
    "markertools.inject.framing.x_absent_variant__mutmut_7": "unreachable",
    "markertools.inject.framing.x_absent_variant__mutmut_8": "unreachable",
    "markertools.inject.framing.x_absent_variant__mutmut_9": "unreachable",
    # framing: an unknown locale renders in the default locale, "en"
    "markertools.inject.framing.x_frame_data__mutmut_1": "unknown locale renders as en",
    "markertools.inject.framing.x_frame_data__mutmut_2": "unknown locale renders as en",
    # schedule: the correction loop (up to 4 steps) absorbs a first guess that is off by
    # one or two, so these change no result; a non-finite slot is caught further down
    "markertools.domain.schedule.x_next_slot_after__mutmut_6": "a non-finite slot fails later (floor raises, or the slot stays non-finite)",
    "markertools.domain.schedule.x_next_slot_after__mutmut_14": "the correction loop absorbs the changed guess / step",
    "markertools.domain.schedule.x_next_slot_after__mutmut_15": "the correction loop absorbs the changed guess / step",
    "markertools.domain.schedule.x_next_slot_after__mutmut_16": "the correction loop absorbs the changed guess / step",
    "markertools.domain.schedule.x_next_slot_after__mutmut_20": "the correction loop absorbs the changed guess / step",
    "markertools.domain.schedule.x_next_slot_after__mutmut_28": "the correction loop absorbs the changed guess / step",
    "markertools.domain.schedule.x_next_slot_after__mutmut_42": "the correction loop absorbs the changed guess / step",
    # timeparse: the length guard is a speed guard (the regex caps a match at 35
    # characters); the offset field is exactly 6 characters; datetime refuses a 24h offset;
    # padding to 7 digits and cutting to 6 equals padding to 6
    "markertools.domain.timeparse.x_parse_iso__mutmut_1": "no accepted ISO string is longer than 35 characters",
    "markertools.domain.timeparse.x_parse_iso__mutmut_2": "no accepted ISO string is longer than 35 characters",
    "markertools.domain.timeparse.x_parse_iso__mutmut_38": "the offset is exactly 6 characters: [4:7] == [4:6]",
    "markertools.domain.timeparse.x_parse_iso__mutmut_41": "timezone() refuses an offset of 24 h, which is then None as well",
    "markertools.domain.timeparse.x_parse_iso__mutmut_61": "ljust(7)[:6] == ljust(6)[:6]",
    # jsonstrict: the internal exception's args are never read; float() is case-insensitive;
    # the C-speed running sum of bracket steps is only a shortcut before the exact scan (a
    # shortcut taken less often leaves the exact scan to answer alike); the exact scan's
    # token tests only ever see one-character brackets or strings starting with '"'; a list
    # nested past the depth limit never reaches the surrogate walk (too_deep refused it),
    # so its depth bookkeeping only changes when the walk would exceed 32; the dense-body
    # decoder choice and the scan's start offset only pick between equivalent decoders
    # (StopIteration falls back to the full decode); the defensive except branch is
    # unreachable (Rule 1 keeps RecursionError and huge ints away from json)
    "markertools.parse.jsonstrict.xǁ_Refuseǁ__init____mutmut_1": "the exception's args are never shown",
    "markertools.parse.jsonstrict.x__parse_float__mutmut_6": "float() is case-insensitive",
    "markertools.parse.jsonstrict.x__parse_float__mutmut_9": "float() is case-insensitive",
    "markertools.parse.jsonstrict.x_too_deep__mutmut_6": "at most `limit` openers can never be deeper than the limit",
    "markertools.parse.jsonstrict.x_too_deep__mutmut_13": "the replacement holds no bracket and no quote",
    "markertools.parse.jsonstrict.x_too_deep__mutmut_22": "codec name case",
    "markertools.parse.jsonstrict.x_too_deep__mutmut_42": "an empty list only has a default; both defaults pass",
    "markertools.parse.jsonstrict.x_too_deep__mutmut_43": "min 0 now takes the exact scan, which answers alike",
    "markertools.parse.jsonstrict.x_too_deep__mutmut_44": "min 0 now takes the exact scan, which answers alike",
    "markertools.parse.jsonstrict.x_too_deep__mutmut_56": "tokens are one bracket or a string starting with a quote",
    "markertools.parse.jsonstrict.x_too_deep__mutmut_63": "tokens are one bracket or a string starting with a quote",
    "markertools.parse.jsonstrict.x__first_surrogate__mutmut_1": "the depth bound is never reached after too_deep",
    "markertools.parse.jsonstrict.x__first_surrogate__mutmut_9": "the depth bound is never reached after too_deep",
    "markertools.parse.jsonstrict.x__first_surrogate__mutmut_11": "the depth bound is never reached after too_deep",
    "markertools.parse.jsonstrict.x__first_surrogate__mutmut_15": "the depth bound is never reached after too_deep",
    "markertools.parse.jsonstrict.x__first_surrogate__mutmut_16": "the depth bound is never reached after too_deep",
    "markertools.parse.jsonstrict.x__first_surrogate__mutmut_19": "the depth bound is never reached after too_deep",
    "markertools.parse.jsonstrict.x__first_surrogate__mutmut_24": "the depth bound is never reached after too_deep",
    "markertools.parse.jsonstrict.x__first_surrogate__mutmut_25": "the depth bound is never reached after too_deep",
    "markertools.parse.jsonstrict.x_loads_object__mutmut_17": "only chooses between equivalent decode paths",
    "markertools.parse.jsonstrict.x_loads_object__mutmut_28": "only chooses between equivalent decode paths",
    "markertools.parse.jsonstrict.x_loads_object__mutmut_30": "only chooses between equivalent decode paths",
    "markertools.parse.jsonstrict.x_loads_object__mutmut_31": "only chooses between equivalent decode paths",
    "markertools.parse.jsonstrict.x_loads_object__mutmut_42": "only chooses between equivalent decode paths",
    "markertools.parse.jsonstrict.x_loads_object__mutmut_45": "only chooses between equivalent decode paths",
    "markertools.parse.jsonstrict.x_loads_object__mutmut_99": "only chooses between equivalent decode paths",
    "markertools.parse.jsonstrict.x_loads_object__mutmut_72": "defensive branch, unreachable (Rule 1)",
    "markertools.parse.jsonstrict.x_loads_object__mutmut_73": "defensive branch, unreachable (Rule 1)",
    "markertools.parse.jsonstrict.x_loads_object__mutmut_74": "defensive branch, unreachable (Rule 1)",
    "markertools.parse.jsonstrict.x_loads_object__mutmut_75": "defensive branch, unreachable (Rule 1)",
    "markertools.parse.jsonstrict.x_loads_object__mutmut_76": "defensive branch, unreachable (Rule 1)",
    "markertools.parse.jsonstrict.x_loads_object__mutmut_77": "defensive branch, unreachable (Rule 1)",
    "markertools.parse.jsonstrict.x_loads_object__mutmut_78": "defensive branch, unreachable (Rule 1)",
    "markertools.parse.jsonstrict.x_loads_object__mutmut_79": "defensive branch, unreachable (Rule 1)",
    "markertools.parse.jsonstrict.x_loads_object__mutmut_80": "defensive branch, unreachable (Rule 1)",
    "markertools.parse.jsonstrict.x_loads_object__mutmut_81": "defensive branch, unreachable (Rule 1)",
    "markertools.parse.jsonstrict.x_loads_object__mutmut_82": "defensive branch, unreachable (Rule 1)",
    "markertools.parse.jsonstrict.x_loads_object__mutmut_83": "defensive branch, unreachable (Rule 1)",
    "markertools.parse.jsonstrict.x_loads_object__mutmut_84": "defensive branch, unreachable (Rule 1)",
    "markertools.parse.jsonstrict.x_loads_object__mutmut_85": "defensive branch, unreachable (Rule 1)",
    # validate: the internal exception's args are never read; None renders as "null";
    # repr and str agree on int and float; aliases of one field share a type once
    # `type(a) is type(b)` passed, and zip runs on equal lengths; the table gives every
    # ref_list a max_items, has a converter for every field kind, puts no ref_list in a kind
    # with a non-param field (so the dropped ids filter never applies there) and every
    # kind that filters has a non-param field; the fast path is a speed path; post-rules
    # read only the keys of `written`; the notes list is the same with or without the
    # shortcut; wait_seconds is always in the values (its default is None)
    "markertools.parse.validate.xǁ_Skipǁ__init____mutmut_1": "the exception's args are never shown",
    "markertools.parse.validate.x__got__mutmut_15": "None renders as null",
    "markertools.parse.validate.x__got__mutmut_23": "repr and str agree on floats",
    "markertools.parse.validate.x__got__mutmut_24": "repr and str agree on ints",
    "markertools.parse.validate.x__same_json__mutmut_5": "types already equal, lengths already equal",
    "markertools.parse.validate.x__same_json__mutmut_15": "types already equal, lengths already equal",
    "markertools.parse.validate.x__same_json__mutmut_18": "types already equal, lengths already equal",
    "markertools.parse.validate.x__same_json__mutmut_19": "types already equal, lengths already equal",
    "markertools.parse.validate.x__same_json__mutmut_20": "types already equal, lengths already equal",
    "markertools.parse.validate.x__ref_list__mutmut_70": "every ref_list field has max_items",
    "markertools.parse.validate.x__fold_wait_seconds__mutmut_4": "wait_seconds is always in the values",
    # validate: _fold_wait_seconds's branch for a field without a clamp is never taken:
    # task-poll, the one kind that folds wait_seconds, clamps both fields (a test of
    # tests/parse/test_parse_fields.py checks that table fact)
    **{
        f"markertools.parse.validate.x__fold_wait_seconds__mutmut_{n}": "unclamped branch never taken"
        for n in range(19, 29)
    },
    "markertools.parse.validate.x_validate_parts__mutmut_3": "the fast path is a speed path (property-tested)",
    "markertools.parse.validate.xǁ_Planǁ__init____mutmut_9": "every field kind has a converter",
    "markertools.parse.validate.xǁ_Planǁ__init____mutmut_11": "every field kind has a converter",
    "markertools.parse.validate.xǁ_Planǁ__init____mutmut_18": "filtering is the identity on kinds whose fields are all params",
    "markertools.parse.validate.x__validate_object__mutmut_46": "post-rules read only the keys of `written`",
    "markertools.parse.validate.x__validate_object__mutmut_64": "the same (empty) notes list either way",
    "markertools.parse.validate.x__validate_object__mutmut_86": "no kind that filters has a ref_list",
    "markertools.parse.validate.x__validate_object__mutmut_87": "no kind that filters has a ref_list",
}

COPIED: tuple[str, ...] = ("src", "tests", "examples", "docs", "scripts")
_LINE = re.compile(r"^\s+(\S+): (\S.*)$")


def _copy(dest: Path) -> None:
    ignore = shutil.ignore_patterns(
        ".git", ".venv", "__pycache__", ".hypothesis", ".mypy_cache", ".ruff_cache",
        ".pytest_cache", "*.egg-info", "mutants", ".cache", "node_modules",
    )  # fmt: skip
    for name in COPIED:
        shutil.copytree(ROOT / name, dest / name, ignore=ignore)
    shutil.copy2(ROOT / "pyproject.toml", dest / "pyproject.toml")


def _failing(work: Path, tests: list[str], env: dict[str, str]) -> list[str]:
    """Tests that fail on the unmutated copy (mutmut refuses to start then); they say
    nothing about a mutant, so they are deselected and named in the output."""
    out = subprocess.run(
        [str(VENV_BIN / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rf", *tests],
        cwd=work, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    return [m.group(1) for m in re.finditer(r"^FAILED (\S+)", out.stdout, re.M)]


def _tests(names: list[str]) -> list[str]:
    return sorted({t for n in names for t in MODULES[n][1]})


def _config(names: list[str], deselect: list[str]) -> str:
    files = [MODULES[n][0] for n in names]
    tests = _tests(names)
    lines = ["[mutmut]", "source_paths = src", "only_mutate ="]
    lines += [f"    {f}" for f in files]
    lines += ["pytest_add_cli_args_test_selection ="]
    lines += [f"    {t}" for t in tests]
    # the tests that need a real PostgreSQL server or Codex are not about these modules
    lines += ["pytest_add_cli_args =", "    -p", "    no:cacheprovider", "    -q", "    -x"]
    for node in deselect:
        lines += ["    --deselect", f"    {node}"]
    lines += ["also_copy ="] + [f"    {d}" for d in COPIED if d not in ("src", "tests")]
    lines += ["use_git_change_detection = false", ""]
    return "\n".join(lines)


def _results(work: Path) -> dict[str, str]:
    out = subprocess.run(
        [str(VENV_BIN / "mutmut"), "results", "--all", "true"],
        cwd=work, capture_output=True, text=True, check=False,
    )  # fmt: skip
    status: dict[str, str] = {}
    for line in out.stdout.splitlines():
        m = _LINE.match(line)
        if m:
            status[m.group(1)] = m.group(2).strip()
    return status


def _module_of(mutant: str, names: list[str]) -> str | None:
    for n in names:
        dotted = MODULES[n][0].removeprefix("src/").removesuffix(".py").replace("/", ".")
        if mutant.startswith(dotted + "."):
            return n
    return None


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("modules", nargs="*", metavar="MODULE", help=", ".join(MODULES))
    parser.add_argument("--keep", type=Path, default=None)
    parser.add_argument("--max-children", type=int, default=os.cpu_count() or 2)
    parser.add_argument(
        "--report", type=Path, default=None, metavar="DIR",
        help="do not run: score the copy an earlier --keep DIR left (after editing EQUIVALENT)",
    )  # fmt: skip
    args = parser.parse_args()
    unknown = [m for m in args.modules if m not in MODULES]
    if unknown:
        parser.error(f"unknown module(s) {', '.join(unknown)}; choose from {', '.join(MODULES)}")
    names = list(args.modules) or list(MODULES)
    if args.report is not None:
        return _score(args.report, names, _results(args.report), None)
    work = args.keep or Path(tempfile.mkdtemp(prefix="markertools-mutation-"))
    if args.keep and work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    _copy(work)
    env = dict(os.environ, HYPOTHESIS_PROFILE=os.environ.get("HYPOTHESIS_PROFILE", "ci"))
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    failing = _failing(work, _tests(names), env)
    for node in failing:
        print(f"warning: fails without any mutant, deselected: {node}")
    (work / "setup.cfg").write_text(_config(names, failing))
    started = time.monotonic()
    run = subprocess.run(
        [str(VENV_BIN / "mutmut"), "run", "--max-children", str(args.max_children)],
        cwd=work, env=env, check=False, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    elapsed = time.monotonic() - started
    status = _results(work)
    if run.returncode != 0 and not status:
        print(f"mutmut run failed (exit {run.returncode}); copy kept in {work}")
        return 2
    ok = _score(work, names, status, elapsed)
    if args.keep is None:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"copy kept in {work}")
    return ok


def _score(work: Path, names: list[str], status: dict[str, str], elapsed: float | None) -> int:
    """Print the score per module and the survivors; 0 when the goals are met."""
    per: dict[str, dict[str, int]] = {n: {} for n in names}
    survivors: list[tuple[str, str]] = []
    for mutant, verdict in sorted(status.items()):
        module = _module_of(mutant, names)
        if module is None:
            continue
        key = verdict
        if verdict in ("survived", "no tests") and mutant in EQUIVALENT:
            key = "equivalent"
        per[module][key] = per[module].get(key, 0) + 1
        if key in ("survived", "no tests", "timeout", "suspicious"):
            survivors.append((mutant, verdict))
    took = f", {elapsed / 60:.1f} min" if elapsed is not None else f" (report of {work})"
    print(f"mutmut {_version()} on {len(names)} module(s){took}\n")
    print(f"{'module':<16} {'mutants':>7} {'killed':>7} {'equiv.':>7} {'left':>5} {'score':>7}")
    total = killed_all = equivalent_all = 0
    ok = True
    for n in names:
        counts = per[n]
        all_ = sum(counts.values())
        killed = counts.get("killed", 0) + counts.get("caught by type check", 0)
        killed += counts.get("timeout", 0)  # an infinite loop is noticed (the test fails)
        equivalent = counts.get("equivalent", 0)
        left = all_ - killed - equivalent
        score = 100.0 * killed / (all_ - equivalent) if all_ > equivalent else 100.0
        total += all_
        killed_all += killed
        equivalent_all += equivalent
        ok = ok and left == 0
        print(f"{n:<16} {all_:>7} {killed:>7} {equivalent:>7} {left:>5} {score:>6.1f}%")
    overall = 100.0 * killed_all / (total - equivalent_all) if total > equivalent_all else 100.0
    print(f"{'overall':<16} {total:>7} {killed_all:>7} {equivalent_all:>7} "
          f"{total - killed_all - equivalent_all:>5} {overall:>6.1f}%")  # fmt: skip
    ok = ok and overall >= OVERALL_GOAL
    if survivors:
        print("\nsurvivors (`mutmut show NAME` in the kept copy shows the diff):")
        for mutant, verdict in survivors:
            print(f"  {mutant}: {verdict}")
    left_all = total - killed_all - equivalent_all
    print(f"\ngoals (0 left in every module, so 100% in {', '.join(sorted(FULL))} too: "
          f"{left_all} left; >= {OVERALL_GOAL:.0f}% overall): {'met' if ok else 'NOT met'}")  # fmt: skip
    return 0 if ok else 1


def _version() -> str:
    from importlib.metadata import version

    try:
        return version("mutmut")
    except Exception:
        return "?"


if __name__ == "__main__":
    sys.exit(main())
