; Inlining a two-block callee at an invoke whose normal destination is
; unreachable (reduced from snappy.cc, C++ with exceptions). LLVM 22's
; FunctionPropertiesUpdater then updates the caller's cached dominator tree;
; an inline advisor that drops that tree first crashes clang-22.
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"

define { ptr, i32 } @caller({ ptr, i32 } %arg) personality ptr null {
entry:
  invoke void @external(ptr null, i64 0, ptr null)
          to label %next unwind label %cleanup1

next:
  %r = invoke ptr @copy(ptr null)
          to label %done unwind label %cleanup2

done:
  unreachable

common.ret:
  %ret = phi { ptr, i32 } [ zeroinitializer, %cleanup1 ]
  ret { ptr, i32 } %ret

cleanup1:
  %lp1 = landingpad { ptr, i32 }
          cleanup
  br label %common.ret

cleanup2:
  %lp2 = landingpad { ptr, i32 }
          cleanup
  ret { ptr, i32 } %lp2
}

declare void @external(ptr, i64, ptr)

define ptr @copy(ptr %p) {
entry:
  %v = load ptr, ptr %p, align 8
  %isnull = icmp eq ptr %v, null
  br i1 %isnull, label %common.ret, label %store

common.ret:
  ret ptr null

store:
  store i32 0, ptr %p, align 4
  br label %common.ret
}
