/* Concatenation along channels (see runtime/nn/concat.h): copies between a dense
 * (N, C, HW) tensor and a channel slice of an (N, C_total, HW) one. Per image the slice
 * is one block of count = C*HW values: image b reads from src + b * src_stride and
 * writes to dst + b * dst_stride (the views already point at image 0's block). With
 * `add`, dst += src instead of dst = src. */

/* Global (ceil(count / 8), N): 8 values per work-item (the last chunk of an image
 * masked). */
__kernel void concat_copy(VIEW(src), VIEW(dst), int n, int count, int src_stride,
                          int dst_stride, int add)
{
    PTR(src); PTR(dst);
    int i = GID0 * 8, b = (int)get_global_id(1);
    if (i >= count || b >= n)
        return;
    __global const float *s = src + b * src_stride + i;
    __global float *o = dst + b * dst_stride + i;
    int left = count - i;
    float8 v = load8(s, left);
    store8(o, add ? v + load8(o, left) : v, left);
}

/* The same with one value per work-item (GPU variant): global (count, N). */
__kernel void concat_copy_1(VIEW(src), VIEW(dst), int n, int count, int src_stride,
                            int dst_stride, int add)
{
    PTR(src); PTR(dst);
    int i = GID0, b = (int)get_global_id(1);
    if (i >= count || b >= n)
        return;
    float v = src[b * src_stride + i];
    __global float *o = dst + b * dst_stride + i;
    *o = add ? *o + v : v;
}
