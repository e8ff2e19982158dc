"""Package attributes imported on first use (PEP 562).

A package lists the names whose modules need optional dependencies; they
are imported when first asked for and then kept in the package::

    __getattr__, __dir__ = lazy_attributes(globals(), {"Env": ".env"})
"""

import importlib


def lazy_attributes(namespace, table):
    """The ``__getattr__`` and ``__dir__`` of the package whose globals are
    ``namespace``; ``table`` maps each lazy name to the module (relative to
    the package) that defines it."""
    package = namespace["__name__"]

    def __getattr__(name):
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value
        return value

    def __dir__():
        return sorted(set(namespace) | set(table))

    return __getattr__, __dir__
