/* Shared preamble, placed before every program of cl_kernels/ at build time.
 * OpenCL C 1.2. Every tensor argument is a (pointer, offset-in-floats) pair,
 * written with the PTR macro so kernels read `PTR(x)` and use `x` as usual. */

/* Parameter pair for one tensor view: `__global float *x_base, uint x_off`. */
#define VIEW(x) __global float *x##_base, uint x##_off
/* Inside the body: make `x` point at the first element of the view. */
#define PTR(x) __global float *x = x##_base + x##_off

/* Flat index of the current work-item in dimension 0. */
#define GID0 ((int)get_global_id(0))
