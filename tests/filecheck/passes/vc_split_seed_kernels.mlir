// The seed kernels, read by the PyPTO frontend, through vc-split and semantic-labels.
// (This file holds only RUN and CHECK lines; the inputs are the kernel sources.)

// SK-03 linear projection (seed 002): the gamma cast before the token loop is a vector
// stage of its own, then V(RMSNorm) -> C(MatMul) -> V(post) inside the loop, each with
// the user's tile shapes and labels.
// RUN: tileir-opt %repo/frontends/kernels/linear_projection.py -p vc-split,semantic-labels | filecheck --check-prefix=SK03 %s
// SK03-LABEL: pto.kernel @linear_projection_kernel
// SK03-SAME:  flow_pattern = "V2,C1,V1"
// SK03:         pto.stage vector label "cast" tile [1, 64]
// SK03:         pto.loop_unroll
// SK03:           pto.stage vector label "rmsnorm" tile [8, 64]
// SK03:             pto.rsqrt
// SK03:           pto.stage cube label "linear" cube [16, 16, 64, 64, 32, 32]
// SK03-NEXT:        pto.transfer %{{.*}} from vector to cube
// SK03:             pto.matmul %{{.*}}, %{{.*}} b_trans
// SK03:           pto.stage vector label "post" tile [8, 32]
// SK03-NEXT:        pto.transfer %{{.*}} from cube to vector
// SK03-LABEL: pto.kernel @linear_projection_quant_kernel
// SK03-SAME:  flow_pattern = "V2,C1,V1"
// SK03:           pto.stage cube label "linear"
// SK03:             pto.matmul {{.*}} -> tensor<{{.*}}xi32>
// SK03:           pto.stage vector label "dequant"

// RoPE B (interleave, gathermask) stays pure Vector: one stage per loop body, no
// transfer, derived label `rope`.
// RUN: tileir-opt %repo/frontends/kernels/rope_interleave.py -p vc-split,semantic-labels | filecheck --check-prefix=ROPEB %s
// ROPEB-LABEL: pto.kernel @rope_interleave_kernel
// ROPEB-SAME:  flow_pattern = "V1"
// ROPEB-NOT:   pto.transfer
// ROPEB:         pto.stage vector label "rope" tile [8, 64]
// ROPEB-NOT:   pto.transfer
// ROPEB-LABEL: pto.kernel @rope_interleave_partial_kernel
// ROPEB-SAME:  flow_pattern = "V1"
// ROPEB-NOT:   pto.transfer
// ROPEB:         pto.stage vector label "rope" tile [8, 32]

// Linear with bias: the bias cast before the loop, then matmul and the add.
// RUN: tileir-opt %repo/frontends/kernels/linear.py -p vc-split | filecheck --check-prefix=LINEAR %s
// LINEAR: pto.kernel @linear_add_kernel
// LINEAR-SAME: flow_pattern = "V1,C1,V1"
// LINEAR: pto.kernel @linear_bias_kernel
// LINEAR-SAME: flow_pattern = "V1,C1,V1"

// Online-softmax decode attention: two matmuls per S2 block, the softmax between them,
// and the accumulator updates under is_loop_begin / is_loop_end, each branch its own
// vector stage.
// RUN: tileir-opt %repo/frontends/kernels/decode_attention.py -p vc-split,semantic-labels,inplace-reshape | filecheck --check-prefix=ATTN %s
// ATTN: pto.kernel @decode_attention_kernel
// ATTN-SAME: flow_pattern = "V1,C1,V1,C1,V8"
// ATTN: pto.stage cube label "matmul"
// ATTN: pto.stage vector label "softmax"
// ATTN: pto.stage cube label "matmul-2"
