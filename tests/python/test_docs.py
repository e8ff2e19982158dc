"""The documentation names only things that exist.

Every relative link in README.md and docs/*.md must reach a file; every
repository path a page names (in backticks or in a code block: ``src/…``,
``tests/e2e/test_x.py``, ``scripts/demo.sh``, globs and ``{a,b}`` lists
included) must match a file or folder of the tree; every ``python -m
mlbridge.X`` must name a runnable module; every ``build/…`` program a page
tells a user to run or read must be something the build makes.
"""

import functools
import glob
import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

#: Top-level folders of the tree: a token starting with one of these and a
#: slash is a repository path.
TOP = ("include", "src", "python", "tests", "docs", "scripts", "tools", "integrations",
       "examples", "bench", "models", "results", "proto", "cmake", ".ci")
PATH = re.compile(r"(?<![\w./$-])((?:%s)/[\w./*?{},@+-]*)" % "|".join(re.escape(t) for t in TOP))
LINK = re.compile(r"\]\(([^)\s]+)\)")
MODULE = re.compile(r"python3? -m (mlbridge(?:\.\w+)*)")
BUILD_PROGRAM = re.compile(r"(?<![\w./$-])build/(?:bin|tools|bench|tests)/([\w.+-]+)")
FENCE = re.compile(r"```.*?```", re.S)
CODE = re.compile(r"`((?:[^`\n]|\n(?!\n))+)`")  # a span may wrap, not cross a paragraph


def _code_text(page):
    """What a page shows as code: fenced blocks and inline code spans."""
    text = page.read_text(encoding="utf-8")
    blocks = FENCE.findall(text)
    spans = CODE.findall(FENCE.sub("", text))
    return "\n".join(blocks + spans)


def _expand_braces(pattern):
    m = re.search(r"\{([^{}]*)\}", pattern)
    if not m:
        return [pattern]
    out = []
    for alt in m.group(1).split(","):
        out += _expand_braces(pattern[:m.start()] + alt + pattern[m.end():])
    return out


def _exists(token):
    token = token.rstrip(".,;:)")
    while token.count("}") > token.count("{"):  # `{option=path}` in a pass pipeline
        token = token[:token.rindex("}")]
    token = re.sub(r":[\w.<>-]*$", "", token)  # path:function or path:line
    return any(glob.glob(str(ROOT / p)) for p in _expand_braces(token))


@functools.lru_cache(maxsize=1)
def _defined_targets():
    """Names of what the CMake files put in a build folder: executables
    (add_executable, OUTPUT_NAME overrides) and outputs named after the
    binary dir (generated model folders)."""
    names = set()
    for folder, subdirs, files in os.walk(ROOT):
        subdirs[:] = [d for d in subdirs if not d.startswith((".", "build", "__pycache__"))]
        if "CMakeLists.txt" not in files:
            continue
        text = Path(folder, "CMakeLists.txt").read_text(encoding="utf-8", errors="replace")
        names.update(re.findall(r"add_executable\(\s*([\w.+-]+)", text))
        names.update(re.findall(r"OUTPUT_NAME\s+\"?([\w.+-]+)", text))
        names.update(re.findall(r"BINARY_DIR\}/([\w.+-]+)", text))  # outputs: model folders
    return names


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_links_reach_files(page):
    missing = []
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = target.split("#", 1)[0]
        if path and not (page.parent / path).exists():
            missing.append(target)
    assert not missing, f"{page.name}: links to files that do not exist: {missing}"


def _generated(paths):
    """The paths git ignores: what the build or the installers generate
    (e.g. python/mlbridge/grpc/_generated), absent from a fresh clone."""
    if not paths:
        return set()
    # Asked as a file and as a folder: a pattern such as `_generated/` only
    # matches a folder, which git cannot tell for a path that is not there.
    asked = [q for p in paths for q in (p.rstrip("/"), p.rstrip("/") + "/")]
    res = subprocess.run(["git", "-C", str(ROOT), "check-ignore", "--no-index", "--stdin"],
                         input="\n".join(asked), capture_output=True, text=True)
    assert res.returncode in (0, 1), res.stderr  # 1: none ignored
    ignored = {q.rstrip("/") for q in res.stdout.split()}
    return {p for p in paths if p.rstrip("/") in ignored}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_named_paths_exist(page):
    absent = {t for t in PATH.findall(_code_text(page)) if not _exists(t)}
    missing = sorted(absent - _generated(sorted(absent)))
    assert not missing, f"{page.name}: names paths that do not exist: {missing}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_python_modules_exist(page):
    missing = []
    for module in set(MODULE.findall(_code_text(page))):
        base = ROOT / "python" / Path(*module.split("."))
        if not ((base / "__main__.py").exists() or base.with_suffix(".py").exists()):
            missing.append(module)
    assert not missing, f"{page.name}: `python -m` of modules that do not exist: {missing}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_build_programs_are_targets(page):
    targets = _defined_targets()
    missing = sorted({p for p in BUILD_PROGRAM.findall(_code_text(page)) if p not in targets})
    assert not missing, f"{page.name}: build programs no CMake file defines: {missing}"


def test_the_checks_catch_a_wrong_name():
    """The matchers find a bad path, module and program (so a quiet pass
    means the pages are right, not that nothing was read)."""
    assert PATH.findall("see `src/nowhere/file.cpp`") == ["src/nowhere/file.cpp"]
    assert not _exists("src/nowhere/file.cpp")
    assert _generated(["src/nowhere/file.cpp", "build/x"]) == {"build/x"}
    assert _exists("src/{core,support}/")
    assert _exists("tests/python/test_docs.py:test_links_reach_files")
    assert MODULE.findall("python -m mlbridge.nothing x") == ["mlbridge.nothing"]
    assert "mlbridge-no-such-tool" not in _defined_targets()
    assert BUILD_PROGRAM.findall("build/bin/mlb-loop-pragmas x") == ["mlb-loop-pragmas"]
    # an inline span that wraps keeps the spans after it paired
    assert CODE.findall("`f(a,\nb)` and `src/x.cpp`") == ["f(a,\nb)", "src/x.cpp"]
