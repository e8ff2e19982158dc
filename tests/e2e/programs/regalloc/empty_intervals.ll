; Virtual registers whose live intervals are empty (only undef uses) in the
; allocator's window: issue 34 item 5, reduced with llvm-reduce-19 from
; vector_mul_u8.c (@mul: PUNPCKLBW / PACKUSWB with an undef operand) and
; from llvm-stress-19 -seed=1 -size=300 (@autogen_SD1: a poison shuffle
; mask). -regalloc=mlbridge with the model policy crashed on both in
; LiveRange::overlapsFrom (called from MLBridgeRegAlloc::interfere).
target triple = "x86_64-pc-linux-gnu"

define void @mul(<8 x i8> %0) {
  %2 = mul <8 x i8> %0, %0
  store <8 x i8> %2, ptr null, align 1
  ret void
}

define void @autogen_SD1(i1 %E23) {
BB:
  br label %CF239

CF239:
  %Shuff7 = shufflevector <1 x i32> zeroinitializer, <1 x i32> zeroinitializer, <1 x i32> poison
  br i1 %E23, label %CF239, label %CF243

CF243:
  %E72 = extractelement <1 x i32> %Shuff7, i32 0
  store i32 %E72, ptr null, align 4
  ret void
}
