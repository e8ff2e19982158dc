"""The Python side's shared-memory layout (mlbridge.shm.layout) is the C++
definition's: every constant of the control block and the hello is read
out of the C++ source (its ``constexpr`` declarations) and compared, so a
change on either side that the other does not make fails here."""

import ast
import re
import struct
from pathlib import Path

import pytest

from mlbridge.shm import layout as L

SOURCE = Path(__file__).resolve().parents[2]
TRANSPORT = SOURCE / "src" / "transport"

# The constants the Python side reads; the test also wants every constant of
# the C++ definition to have its Python twin.
USED = ["MAGIC", "VERSION", "CONTROL_BYTES", "MIN_CAPACITY", "MAX_CAPACITY", "WRAP_MARKER",
        "LENGTH_BYTES", "HELLO_BYTES", "MAGIC_OFFSET", "VERSION_OFFSET", "CAPACITY_OFFSET",
        "REQUEST_HEAD", "REQUEST_TAIL", "REPLY_HEAD", "REPLY_TAIL", "MODEL_SLEEPING",
        "COMPILER_SLEEPING"]

_DECLARATION = re.compile(r"\bconstexpr\s+(?:const\s+)?[\w:]+\s+(\w+\s*=[^;]+);")


def words(name):
    """A constant's name as comparable words: kRequestHead, REQUEST_HEAD
    and kReqHead all give "requesthead"."""
    name = re.sub(r"^k(?=[A-Z])", "", name).replace("_", "").lower()
    return re.sub(r"^req(?!uest)", "request", re.sub(r"^rep(?!ly)", "reply", name))


def cxx_value(expr):
    """The value of a C++ integer constant expression of the kind a layout
    uses: literals (hex, suffixes, digit separators), + - * << ~, casts
    such as uint64_t(1) or ~uint64_t{0}, UINT64_MAX."""
    expr = expr.replace("'", "").replace("UINT64_MAX", "(~0)")
    expr = re.sub(r"\b(?:std::)?u?int\d+_t\s*[({]\s*([^(){}]*)\s*[)}]", r"(\1)", expr)
    expr = re.sub(r"\b(0[xX][0-9a-fA-F]+|\d+)[uUlL]*\b", r"\1", expr)
    value = _evaluate(ast.parse(expr.strip(), mode="eval").body)
    return value % (1 << 64)  # the layout's words are unsigned 64-bit


def _evaluate(node):
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Invert, ast.USub)):
        v = _evaluate(node.operand)
        return ~v if isinstance(node.op, ast.Invert) else -v
    if isinstance(node, ast.BinOp):
        ops = {ast.Add: int.__add__, ast.Sub: int.__sub__, ast.Mult: int.__mul__,
               ast.LShift: int.__lshift__}
        return ops[type(node.op)](_evaluate(node.left), _evaluate(node.right))
    raise ValueError(f"not a layout constant expression: {ast.dump(node)}")


def cxx_constants(text):
    """{words(name): value} of every constexpr integer in ``text`` (one
    declaration may name several, separated by commas)."""
    text = re.sub(r"//[^\n]*|/\*.*?\*/", "", text, flags=re.S)
    found = {}
    for declaration in _DECLARATION.findall(text):
        for part in re.split(r",\s*(?=\w+\s*=)", declaration):
            name, _, expr = part.partition("=")
            try:
                found[words(name.strip())] = cxx_value(expr)
            except (ValueError, KeyError, SyntaxError, TypeError):
                pass  # not an integer constant (a string, a type)
    return found


def control_block_definition():
    """The C++ file under src/transport that defines the control block
    (shm_layout.h, or the file that holds it): exactly one."""
    files = [p for p in sorted(TRANSPORT.glob("*.[ch]*"))
             if {"requesthead", "replytail", "modelsleeping"} <= set(cxx_constants(p.read_text()))]
    assert len(files) == 1, f"the control block is defined in {files or 'no file'} under {TRANSPORT}"
    return files[0]


def test_cxx_value_reads_the_forms_a_layout_uses():
    assert cxx_value("0x31304d4853424c4dULL") == 0x31304D4853424C4D
    assert cxx_value("UINT64_MAX") == cxx_value("~uint64_t{0}") == (1 << 64) - 1
    assert cxx_value("uint64_t(1) << 40") == 1 << 40
    assert cxx_value("24 * 8") == 192 and cxx_value("4'096") == 4096


def test_words_match_the_spellings_of_one_constant():
    assert words("kRequestHead") == words("REQUEST_HEAD") == words("kReqHead") == "requesthead"
    assert words("kRepTail") == words("REPLY_TAIL") and words("kReplyTail") == "replytail"


def python_constants():
    """{words(name): value} of mlbridge.shm.layout's integer constants."""
    return {words(n): v for n, v in vars(L).items() if n.isupper() and type(v) is int}


def test_every_constant_is_the_cxx_one_and_the_cxx_ones_all_have_a_twin():
    path = control_block_definition()
    cxx = cxx_constants(path.read_text())
    python = python_constants()
    missing = [py for py in USED if words(py) not in cxx]
    assert not missing, f"{path} defines no constant for {missing}"
    no_twin = sorted(set(cxx) - set(python))
    assert not no_twin, f"mlbridge.shm.layout has no constant for {no_twin} of {path}"
    differ = {name: (python[name], cxx[name]) for name in cxx if python[name] != cxx[name]}
    assert not differ, f"mlbridge.shm.layout (python, C++) differ from {path}: {differ}"


def test_the_hello_is_the_cxx_struct():
    """The C++ Hello struct: magic u64, version u32, flags u32, capacity
    u64, in this order and nothing else (24 bytes, no padding)."""
    bodies = [m.group(1) for p in sorted(TRANSPORT.glob("*.[ch]*"))
              for m in re.finditer(r"struct\s+Hello\s*{([^}]*)}", p.read_text())]
    assert len(bodies) == 1, f"{len(bodies)} definitions of struct Hello under {TRANSPORT}"
    fields = re.findall(r"\b(u?int\d+_t)\s+(\w+)\s*;", bodies[0])
    sizes = {"uint64_t": "Q", "uint32_t": "I"}
    assert "<" + "".join(sizes[t] for t, _ in fields) == L.HELLO.format
    assert [n.lower() for _, n in fields] == ["magic", "version", "flags", "capacity"]
    assert L.HELLO.size == 24 == struct.calcsize(L.HELLO.format)


@pytest.mark.parametrize("name", [n for n in USED if n.endswith(("HEAD", "TAIL", "SLEEPING"))])
def test_each_word_has_its_own_cache_line_in_the_control_block(name):
    offset = getattr(L, name)
    assert offset % 64 == 0 and 0 < offset < L.CONTROL_BYTES
