"""Look-up in the package's fixed tables of named things (build projects,
build configurations, differential-test configurations): one rule for
finding one by name and for choosing some, with one error naming the known."""

from typing import List, Optional, Sequence, TypeVar

T = TypeVar("T")


def by_name(items: Sequence[T], name: str, kind: str) -> T:
    """The item of ``items`` whose ``.name`` is ``name``; KeyError listing
    the known names of this ``kind`` otherwise."""
    for item in items:
        if item.name == name:
            return item
    raise KeyError(f"no {kind} '{name}' (known: {', '.join(i.name for i in items)})")


def select(items: Sequence[T], names: Optional[Sequence[str]], kind: str) -> List[T]:
    """The items named, in the order named (all of them when ``names`` is
    None or empty); KeyError on an unknown name."""
    return list(items) if not names else [by_name(items, n, kind) for n in names]
