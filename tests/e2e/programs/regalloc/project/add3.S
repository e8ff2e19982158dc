/* The project's assembly unit: clang's integrated assembler builds it with
   the same CFLAGS as the C units (it parses -mllvm, never loads plugins). */
    .text
    .globl add3
    .type add3, @function
add3:
    leaq (%rdi,%rsi), %rax
    addq %rdx, %rax
    ret
    .size add3, .-add3
    .section .note.GNU-stack,"",@progbits
