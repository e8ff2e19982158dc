"""Differential testing of the shipped plugins and policies: programs
(csmith, llvm-stress, generated loop kernels, ThinLTO links, a real
project's test suite) built with and without a plugin, their outputs,
crashes and objects compared (docs/reliability.md)."""
