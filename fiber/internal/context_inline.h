// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_FIBER_INTERNAL_CONTEXT_INLINE_H_
#define SPINDLE_FIBER_INTERNAL_CONTEXT_INLINE_H_

#include "fiber/internal/context.h"

namespace spindle::internal {

// spindle_jump_context() (context.h), inlined into the caller where the CPU allows: on
// x86-64 an asm statement that saves only the frame pointer and the floating-point
// control state and declares every other register clobbered, so the compiler keeps
// what it needs across the switch in the caller's own frame (the yield path has pushed
// the callee-saved registers in its prologue already: a called switch pushes and pops
// them a second time, with a call, a return and a frame of its own around it). The
// frame it leaves follows the protocol at the
// top of context_x86_64.S, so either kind of switch resumes either kind of save, and a
// new context's trampoline.
//
// Not described to the unwinder: for the few instructions between the save and the
// jump (and after landing, until rbp is restored) a signal handler that unwinds (a
// profiler) sees a wrong frame. Registers that no build here enables (APX's r16-r31,
// AMX tiles) are not declared clobbered.
__attribute__((always_inline)) inline void* JumpContextInline(void** save_sp, void* target_sp,
                                                              void* arg) {
#if defined(__x86_64__)
  asm volatile(
      // Below the red zone (128 bytes under the stack pointer, where a function that
      // calls nothing may keep data): the frame goes under it, so no caller can lose
      // anything, for the same instruction count as pushes.
      "leaq -152(%%rsp), %%rsp\n\t"
      "movq %%rbp, 16(%%rsp)\n\t"
      "stmxcsr 8(%%rsp)\n\t"
      "fnstcw 12(%%rsp)\n\t"
      "leaq 1f(%%rip), %%rcx\n\t"
      "movq %%rcx, (%%rsp)\n\t"
      "movq %%rsp, (%%rdi)\n\t"
      // To the target: its resume address on top of its stack, our value in rdx.
      "movq %%rsi, %%rsp\n\t"
      "popq %%rcx\n\t"
      "jmpq *%%rcx\n"
      // Resumed by a switch (which popped the resume address), with its value in rdx.
      "1:\n\t"
      "ldmxcsr (%%rsp)\n\t"
      "fldcw 4(%%rsp)\n\t"
      "movq 8(%%rsp), %%rbp\n\t"
      "leaq 144(%%rsp), %%rsp"
      // rdi and rsi come back holding whatever the resuming side left there.
      : "+d"(arg), "+D"(save_sp), "+S"(target_sp)
      :
      : "rax", "rbx", "rcx", "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15",
        "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
        "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15",
#if defined(__AVX512F__)
        "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23", "xmm24",
        "xmm25", "xmm26", "xmm27", "xmm28", "xmm29", "xmm30", "xmm31", "k0", "k1", "k2",
        "k3", "k4", "k5", "k6", "k7",
#endif
        "st", "st(1)", "st(2)", "st(3)", "st(4)", "st(5)", "st(6)", "st(7)", "memory",
        "cc");
  return arg;
#else
  return spindle_jump_context(save_sp, target_sp, arg);
#endif
}

}  // namespace spindle::internal

#endif  // SPINDLE_FIBER_INTERNAL_CONTEXT_INLINE_H_
