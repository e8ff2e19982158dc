"""Converts IR2Vec's seed vocabulary (``name:[v1, ...],`` per line) into the
JSON that LLVM 22's IR2Vec vocabulary loader reads (``-ir2vec-vocab-path``).

LLVM 22 looks entities up in three sections by its own names:

* ``Opcodes``: one key per opcode of llvm/IR/Instruction.def ("Add",
  "GetElementPtr"); IR2Vec's file spells them as Instruction::getOpcodeName
  does ("add", "getelementptr"): the key is found by lower-casing LLVM's.
* ``Types``: LLVM 22's canonical types ("FloatTy", "PointerTy"); IR2Vec's
  file spells them with a lower-case first letter ("floatTy").
* ``Arguments``: the operand kinds ("Function", "Pointer", "Constant",
  "Variable"; IR2Vec's: lower case) and the compare predicates
  ("ICMP_eq", "FCMP_olt"), which IR2Vec 2.1.1 does not have.

Every key LLVM 22 asks for is written; those the vocabulary lacks get a zero
vector (what LLVM 22's loader itself uses for a missing entity, made
explicit). Entries of the vocabulary LLVM 22 never asks for are left out.
Both lists are printed on stderr and documented in docs/ir2vec.md.
Deterministic: same input, same bytes.

Usage: python3 ir2vec_vocab.py seedEmbeddingVocab.txt out.json
"""

import json
import math
import sys

# llvm/IR/Instruction.def of LLVM 22.1, in opcode order.
OPCODES = (
    "Ret Br Switch IndirectBr Invoke Resume Unreachable CleanupRet CatchRet "
    "CatchSwitch CallBr FNeg Add FAdd Sub FSub Mul FMul UDiv SDiv FDiv URem SRem "
    "FRem Shl LShr AShr And Or Xor Alloca Load Store GetElementPtr Fence "
    "AtomicCmpXchg AtomicRMW Trunc ZExt SExt FPToUI FPToSI UIToFP SIToFP FPTrunc "
    "FPExt PtrToInt PtrToAddr IntToPtr BitCast AddrSpaceCast CleanupPad CatchPad "
    "ICmp FCmp PHI Call Select UserOp1 UserOp2 VAArg ExtractElement InsertElement "
    "ShuffleVector ExtractValue InsertValue LandingPad Freeze").split()
# ir2vec::Vocabulary::CanonicalTypeNames and OperandKindNames (IR2Vec.h).
TYPES = ("FloatTy VoidTy LabelTy MetadataTy VectorTy TokenTy IntegerTy FunctionTy "
         "PointerTy StructTy ArrayTy UnknownTy").split()
OPERANDS = ("Function", "Pointer", "Constant", "Variable")
# CmpInst::getPredicateName, prefixed as Vocabulary::getVocabKeyForPredicate does.
PREDICATES = tuple("FCMP_" + p for p in (
    "false oeq ogt oge olt ole one ord uno ueq ugt uge ult ule une true").split()) + \
    tuple("ICMP_" + p for p in "eq ne ugt uge ult ule sgt sge slt sle".split())


def read_vocabulary(path):
    """name -> list of floats; raises ValueError naming the line at fault."""
    entries, dim = {}, None
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if line.endswith(","):  # IR2Vec's file ends every entry but the last with ','
                line = line[:-1]
            if not line:
                continue
            name, sep, rest = line.partition(":")
            if not sep or not name:
                raise ValueError(f"{path}:{number}: expected 'name:[v1, ...]'")
            if not (rest.startswith("[") and rest.endswith("]")):
                raise ValueError(f"{path}:{number}: truncated ('[...]' expected after '{name}:')")
            values = []
            for i, text in enumerate(rest[1:-1].split(","), 1):
                try:
                    v = float(text)
                except ValueError:
                    raise ValueError(f"{path}:{number}: value {i} of '{name}' is not a number "
                                     f"('{text.strip()}')") from None
                # float() reads inf, nan and 1e999 (inf): LLVM's JSON has none of them.
                if not math.isfinite(v):
                    raise ValueError(f"{path}:{number}: value {i} of '{name}' is not finite "
                                     f"('{text.strip()}')")
                values.append(v)
            if dim is None:
                dim = len(values)
            elif len(values) != dim:
                raise ValueError(f"{path}:{number}: {len(values)} values, expected {dim}")
            if name in entries:
                raise ValueError(f"{path}:{number}: '{name}' appears twice")
            entries[name] = values
    if not entries:
        raise ValueError(f"{path}: no entries")
    return entries, dim


def convert(entries, dim):
    """(the LLVM 22 JSON object, keys filled with zeros, vocabulary keys unused)."""
    zero = [0.0] * dim
    filled, used = [], set()

    def section(keys, ir2vec_key):
        out = {}
        for key in keys:
            source = ir2vec_key(key)
            if source in entries:
                out[key] = entries[source]
                used.add(source)
            else:
                out[key] = zero
                filled.append(key)
        return out

    doc = {
        "Opcodes": section(OPCODES, str.lower),
        "Types": section(TYPES, lambda k: k[0].lower() + k[1:]),
        "Arguments": section(OPERANDS + PREDICATES, str.lower),
    }
    return doc, filled, sorted(set(entries) - used)


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    try:
        entries, dim = read_vocabulary(argv[1])
    except (OSError, ValueError) as exc:
        print(f"ir2vec_vocab.py: {exc}", file=sys.stderr)
        return 1
    doc, filled, unused = convert(entries, dim)
    with open(argv[2], "w", encoding="utf-8") as f:
        json.dump(doc, f, separators=(",", ":"), allow_nan=False)
        f.write("\n")
    print(f"ir2vec_vocab.py: {len(entries)} entries x {dim}; zero vectors for "
          f"{len(filled)} LLVM 22 keys: {' '.join(filled)}", file=sys.stderr)
    print(f"ir2vec_vocab.py: not used by LLVM 22: {' '.join(unused) or '-'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
