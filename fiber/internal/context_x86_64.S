// Copyright 2026 The Spindle Authors.
//
// Context switch for x86-64, System V ABI. See context.h for the contract.
//
// The protocol. A saved context is a stack pointer; the word it points at is the
// address where the saved context goes on. Whoever switches to it loads the stack
// pointer, pops that address and jumps there with the switch's value in rdx; the code
// there restores whatever its own save pushed. So each place that saves a context
// chooses what it saves: spindle_jump_context() below saves every callee-saved
// register, and FiberEntity's switch (JumpContextInline in context_inline.h), an asm
// statement that declares every other register clobbered, saves only rbp and the
// floating-point control state, leaving the compiler to keep (and usually already
// having kept) the rest in its own frame. Every saved frame starts the same way, from
// the saved stack pointer upwards:
//   +0   the resume address
//   +8   MXCSR (4 bytes), x87 control word (2 bytes), padding (2 bytes)
//   +16  rbp      (for a new context: 0, so frame-pointer walks stop here)
// then, for spindle_jump_context(): r15, r14, r13, r12, rbx and its return address;
// for the inline switch: 128 bytes left alone (the switching function's red zone);
// for a new context: the entry function.
// The fiber dump (fiber_dump.cc) walks a saved fiber from +0 and +16: for the inline
// switch the resume address lies in the function that switched and rbp is its frame.
// (A context saved by spindle_jump_context(), which only tests and benchmarks use,
// would show the resume label and skip its caller's frame.)
//
// The floating-point control state is part of the context (boost.context and flare do
// the same): a fiber that changes the rounding mode must not change it for the fiber
// that runs next on its thread. It costs about 2 ns per round trip here.
//
// pop + indirect jmp, never ret, to go to a resume address: a ret there would return to
// a call site other than the one that entered, so the CPU's return-stack predictor would
// miss on every switch (measured on this machine: 25 ns per round trip with ret, 8 ns
// without).

    .text
    .globl  spindle_jump_context
    .type   spindle_jump_context, @function
    .p2align 4
spindle_jump_context:
    // rdi = save_sp, rsi = target_sp, rdx = arg
    .cfi_startproc
    pushq   %rbx
    pushq   %r12
    pushq   %r13
    pushq   %r14
    pushq   %r15
    pushq   %rbp
    leaq    -8(%rsp), %rsp
    stmxcsr (%rsp)
    fnstcw  4(%rsp)
    leaq    .Lresume_saved_by_call(%rip), %rax
    pushq   %rax
    movq    %rsp, (%rdi)

    // Go to the target: the same three instructions in every switch.
    movq    %rsi, %rsp
    popq    %rcx
    jmpq    *%rcx

.Lresume_saved_by_call:
    // Resumed by a switch, with its value in rdx.
    ldmxcsr (%rsp)
    fldcw   4(%rsp)
    leaq    8(%rsp), %rsp
    popq    %rbp
    popq    %r15
    popq    %r14
    popq    %r13
    popq    %r12
    popq    %rbx
    movq    %rdx, %rax
    // Back to our caller (see the top: not a ret).
    popq    %rcx
    jmpq    *%rcx
    .cfi_endproc
    .size   spindle_jump_context, .-spindle_jump_context

    .globl  spindle_make_context
    .type   spindle_make_context, @function
    .p2align 4
spindle_make_context:
    // rdi = stack_top, rsi = stack_size (unused here), rdx = entry
    .cfi_startproc
    movq    %rdi, %rax
    andq    $-16, %rax
    // 16 bytes of headroom above the frame. The trampoline pops the first four words,
    // so its call finds the stack 16-byte aligned, as the ABI promises the entry
    // function.
    leaq    -48(%rax), %rax
    leaq    spindle_context_trampoline(%rip), %rcx
    movq    %rcx, (%rax)
    stmxcsr 8(%rax)
    fnstcw  12(%rax)
    movq    $0, 16(%rax)
    movq    %rdx, 24(%rax)
    ret
    .cfi_endproc
    .size   spindle_make_context, .-spindle_make_context

    .type   spindle_context_trampoline, @function
    .p2align 4
spindle_context_trampoline:
    .cfi_startproc
    // The outermost frame of every context: unwinders stop here.
    .cfi_undefined rip
    // Entered as a resume address: the stack pointer just above it, the switch's value
    // in rdx.
    ldmxcsr (%rsp)
    fldcw   4(%rsp)
    leaq    8(%rsp), %rsp
    popq    %rbp
    popq    %rax
    movq    %rdx, %rdi
    callq   *%rax
    // The entry function must never return.
    ud2
    .cfi_endproc
    .size   spindle_context_trampoline, .-spindle_context_trampoline

    .section .note.GNU-stack, "", @progbits
