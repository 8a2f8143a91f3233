/*
 * common/adam_scalars.h - the float32 scalars of one Adam or AdamW step,
 * computed once on the host (server/optimizer.h, ps_adam_scalars_of) and
 * used alike by the CPU loop (server/optimizer.c) and the CUDA kernel
 * (cuda/optimizer_kernels.cu), so that both compute the same bits.
 */
#ifndef ORDO_COMMON_ADAM_SCALARS_H
#define ORDO_COMMON_ADAM_SCALARS_H

typedef struct ps_adam_scalars {
	float step_size; /* lr / (1 - b1^step) */
	float bc2_sqrt;  /* sqrt(1 - b2^step) */
	float beta1, one_minus_beta1, beta2, one_minus_beta2, eps;
	float wd;        /* adam: L2 added to the gradient; 0 otherwise */
	float decay;     /* adamw: 1 - lr * wd; 1 otherwise */
} ps_adam_scalars;

#endif /* ORDO_COMMON_ADAM_SCALARS_H */
