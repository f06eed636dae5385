/* Bias of the fully connected layer; the products run in CLBlast. */

/* y: (n, out), += b broadcast over rows; b: (out). One item per value. */
__kernel void bias_forward(VIEW(y), VIEW(b), int total, int out)
{
    PTR(y); PTR(b);
    int i = GID0;
    if (i < total)
        y[i] += b[i % out];
}

/* dy: (n, out); db: (out), += column sums of dy. One item per column. */
__kernel void bias_backward(VIEW(dy), VIEW(db), int n, int out)
{
    PTR(dy); PTR(db);
    int o = GID0;
    if (o >= out)
        return;
    float s = 0.0f;
    for (int r = 0; r < n; r++)
        s += dy[r * out + o];
    db[o] += s;
}
