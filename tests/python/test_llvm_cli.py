"""mlbridge.llvm command line and command-line helpers (no compiler runs:
every case here is refused or answered before a process would start)."""

import os
import stat
import struct

import pytest

from mlbridge.llvm import Compilation
from mlbridge.llvm.__main__ import build_parser, main
from mlbridge.toolchain.measure import elf_text_size
from mlbridge.toolchain.tools import output_path, tool_kind


@pytest.mark.parametrize("program,kind", [
    ("clang-19", "clang"), ("/usr/lib/llvm-19/bin/clang", "clang"), ("clang++-19", "clang"),
    ("opt-19", "opt"), ("opt", "opt"), ("/usr/bin/llc-19", "llc"), ("llc-19.1", "llc"),
])
def test_tool_kind(program, kind):
    assert tool_kind(program) == kind


@pytest.mark.parametrize("program", ["gcc", "optimize", "llc-tool", "llvm-mca-19"])
def test_tool_kind_refuses_other_programs(program):
    with pytest.raises(ValueError, match="pass tool="):
        tool_kind(program)


def test_output_path():
    assert output_path(["in.ll", "-o", "out.s"]) == "out.s"
    assert output_path(["-oout.o", "x.c"]) == "out.o"
    assert output_path(["-o", "a", "-o", "b"]) == "b"
    assert output_path(["-o", "-"]) is None
    assert output_path(["-O2", "x.c"]) is None
    assert output_path(["-opt-bisect-limit=3", "x.ll"]) is None


def _elf64(sections):
    """A minimal ELF64 LE file: header + section headers (flags, size)."""
    shoff = 64
    head = bytearray(64)
    head[:6] = b"\x7fELF\x02\x01"
    struct.pack_into("<Q", head, 0x28, shoff)
    struct.pack_into("<HH", head, 0x3A, 64, len(sections))
    body = bytearray()
    for flags, size in sections:
        sh = bytearray(64)
        struct.pack_into("<Q", sh, 8, flags)
        struct.pack_into("<Q", sh, 32, size)
        body += sh
    return bytes(head + body)


def test_elf_text_size(tmp_path):
    p = tmp_path / "x.o"
    p.write_bytes(_elf64([(0, 0), (0x6, 100), (0x2, 40), (0x6, 23)]))  # 2 exec sections
    assert elf_text_size(p) == 123
    q = tmp_path / "not_elf"
    q.write_bytes(b"hello world" * 10)
    assert elf_text_size(q) is None
    assert elf_text_size(tmp_path / "missing") is None


def test_compilation_adds_flags_per_tool():
    """The flags go right after the program; the clang driver gets -mllvm;
    each advisor has its own private FIFO pair."""
    with Compilation(["clang-19", "-O2", "-c", "x.c"],
                     {"inline": "always", "evict": "first", "priority": "size"}) as c:
        cmd = c.prepare()
        b = {n: c.channel(n).base for n in ("inline", "evict", "priority")}
        assert len(set(b.values())) == 3
        assert cmd == ["clang-19",
                       "-mllvm", "-enable-ml-inliner=release",
                       "-mllvm", f"-inliner-interactive-channel-base={b['inline']}",
                       "-mllvm", "-regalloc-enable-advisor=release",
                       "-mllvm", f"-regalloc-evict-interactive-channel-base={b['evict']}",
                       "-mllvm", "-regalloc-enable-priority-advisor=release",
                       "-mllvm",
                       f"-regalloc-priority-interactive-channel-base={b['priority']}",
                       "-O2", "-c", "x.c"]
        for base in b.values():
            st = os.stat(base + ".in")
            assert stat.S_ISFIFO(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600
    assert not os.path.exists(b["inline"] + ".in")  # removed on close
    with Compilation(["opt-19", "-passes=inline", "x.ll"], {"inline": "default"},
                     default_bug=True) as d:
        base = d.channel("inline").base if d.prepare() else None
        assert d.include_default  # the default policy needs LLVM's decision
        assert d.command == ["opt-19", "-enable-ml-inliner=release",
                             f"-inliner-interactive-channel-base={base}",
                             "-inliner-interactive-include-default",
                             "-passes=inline", "x.ll"]
    with Compilation(["llc-19", "x.ll"], {"evict": "noevict"}) as e:
        assert e.prepare()[:2] == ["llc-19", "-regalloc-enable-advisor=release"]


@pytest.mark.parametrize("cmd,advisors,message", [
    (["opt-19", "x.ll"], {"evict": "first"}, "does not run the evict advisor"),
    (["llc-19", "x.ll"], {"inline": "always"}, "does not run the inline advisor"),
    (["llc-19", "x.ll"], {"regalloc": "first"}, "unknown advisor"),
    (["llc-19", "-regalloc-evict-interactive-channel-base=/tmp/x", "x.ll"],
     {"evict": "first"}, "sets the channel flags itself"),
    (["gcc", "x.c"], {"inline": "always"}, "cannot tell which LLVM tool"),
    ([], {}, "empty command"),
])
def test_compilation_refuses_bad_requests(cmd, advisors, message):
    with pytest.raises(ValueError, match=message):
        Compilation(cmd, advisors)


def test_default_policy_cannot_go_without_the_default():
    with pytest.raises(ValueError, match="include_default cannot be False"):
        Compilation(["opt-19", "x.ll"], {"inline": "default"}, include_default=False)


def test_cli_lists_policies(capsys):
    assert main(["policies"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == ["inline: default, always, never", "evict: noevict, first, last, random",
                   "priority: size, weight, stage"]


@pytest.mark.parametrize("argv,message", [
    (["evict", "--policy", "nope", "--", "llc-19", "x.ll"], "unknown evict policy 'nope'"),
    (["inline", "--policy", "always", "--", "llc-19", "x.ll"],
     "does not run the inline advisor"),
])
def test_cli_reports_bad_policies_and_tools(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("argv", [
    ["inline", "--policy", "always"],               # no command
    ["run", "--", "clang-19", "-c", "x.c"],         # no advisor
    ["evict", "--", "llc-19", "x.ll"],              # no --policy
])
def test_cli_usage_errors(argv, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    assert "usage:" in capsys.readouterr().err


def test_cli_parser_keeps_the_compiler_arguments():
    args = build_parser().parse_args(
        ["run", "--inline", "never", "--evict", "first", "--trace", "t.npz", "--",
         "clang-19", "-O2", "-mllvm", "-debug-pass=Structure", "-c", "x.c"])
    assert args.command[-6:] == ["clang-19", "-O2", "-mllvm", "-debug-pass=Structure",
                                 "-c", "x.c"]
    assert args.inline == "never" and args.evict == "first" and args.trace == "t.npz"
