// Copyright 2026 The Spindle Authors.
//
// Context switch for aarch64 (AAPCS64). See context.h for the contract.
//
// Saved frame, from the saved stack pointer upwards (176 bytes, 16-byte aligned):
//   +0x00  d8  .. d15   (low halves of v8-v15, the callee-saved FP registers)
//   +0x40  x19 .. x28   (for a new context: x19 = the entry function)
//   +0x90  x29 (fp), x30 (lr)   (for a new context: both 0)
//   +0xa0  pc to resume at (for a new context: spindle_context_trampoline)
//   +0xa8  FPCR

    .text
    .globl  spindle_jump_context
    .type   spindle_jump_context, %function
    .p2align 4
spindle_jump_context:
    // x0 = save_sp, x1 = target_sp, x2 = arg
    sub     sp, sp, #0xb0
    stp     d8, d9, [sp, #0x00]
    stp     d10, d11, [sp, #0x10]
    stp     d12, d13, [sp, #0x20]
    stp     d14, d15, [sp, #0x30]
    stp     x19, x20, [sp, #0x40]
    stp     x21, x22, [sp, #0x50]
    stp     x23, x24, [sp, #0x60]
    stp     x25, x26, [sp, #0x70]
    stp     x27, x28, [sp, #0x80]
    stp     x29, x30, [sp, #0x90]
    mrs     x9, fpcr
    stp     x30, x9, [sp, #0xa0]
    mov     x9, sp
    str     x9, [x0]

    mov     sp, x1
    ldp     d8, d9, [sp, #0x00]
    ldp     d10, d11, [sp, #0x10]
    ldp     d12, d13, [sp, #0x20]
    ldp     d14, d15, [sp, #0x30]
    ldp     x19, x20, [sp, #0x40]
    ldp     x21, x22, [sp, #0x50]
    ldp     x23, x24, [sp, #0x60]
    ldp     x25, x26, [sp, #0x70]
    ldp     x27, x28, [sp, #0x80]
    ldp     x29, x30, [sp, #0x90]
    ldp     x9, x10, [sp, #0xa0]
    msr     fpcr, x10
    add     sp, sp, #0xb0
    // Return value of a resumed context, first argument of a new one.
    mov     x0, x2
    br      x9
    .size   spindle_jump_context, .-spindle_jump_context

    .globl  spindle_make_context
    .type   spindle_make_context, %function
    .p2align 4
spindle_make_context:
    // x0 = stack_top, x1 = stack_size (unused here), x2 = entry
    and     x0, x0, #~15
    sub     x0, x0, #0xc0
    stp     xzr, xzr, [x0, #0x00]
    stp     xzr, xzr, [x0, #0x10]
    stp     xzr, xzr, [x0, #0x20]
    stp     xzr, xzr, [x0, #0x30]
    stp     x2, xzr, [x0, #0x40]
    stp     xzr, xzr, [x0, #0x50]
    stp     xzr, xzr, [x0, #0x60]
    stp     xzr, xzr, [x0, #0x70]
    stp     xzr, xzr, [x0, #0x80]
    stp     xzr, xzr, [x0, #0x90]
    adr     x9, spindle_context_trampoline
    mrs     x10, fpcr
    stp     x9, x10, [x0, #0xa0]
    ret
    .size   spindle_make_context, .-spindle_make_context

    .type   spindle_context_trampoline, %function
    .p2align 4
spindle_context_trampoline:
    // x0 holds the jump's argument, x19 the entry function. The zeroed fp and lr make
    // this the outermost frame for unwinders.
    blr     x19
    // The entry function must never return.
    brk     #0
    .size   spindle_context_trampoline, .-spindle_context_trampoline

    .section .note.GNU-stack, "", %progbits
