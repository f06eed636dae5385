/* The model verifier: mengine_model_load_ops(), and mengine_model_load() with
 * every operator.
 *
 * Structure: every access goes through the checked reader (fbread_impl.h), which
 * checks the object it touches before reading, so nothing outside
 * [base, base + size) is ever read. The verifier walks every object the
 * engine uses once at load time, to report errors early and with their
 * specific code; later reads of the same objects cannot fail.
 *
 * Meaning: indices between objects, types, shapes, buffer sizes, operators
 * (each operator's prepare is run as a dry run), the order in which tensors
 * are written and read, model inputs/outputs, the offline plan. */
#include <string.h>

#include "engine/ops_impl.h"

static const char OFFLINE_NAME[] = "OfflineMemoryAllocation";

static int index_in(const fbr *r, const fb_vec *v, int32_t t)
{
    for (uint32_t i = 0; i < v->n; i++)
        if (fb_vec_i32(r, v, i) == t)
            return 1;
    return 0;
}

static mengine_status verify_buffers(fbr *r, const mengine_model *m)
{
    const fb_vec bv = {m->buffers, m->n_buffers};
    for (uint32_t i = 0; i < m->n_buffers; i++) {
        fb_table bt;
        fb_vec data;
        int has;
        uint64_t offset, size;
        mengine_status st = mengine_fb_vec_table(r, &bv, i, DEPTH_ENTRY, &bt);
        if (st == MENGINE_OK)
            st = mengine_fb_vector(r, &bt, BUFFER_DATA, 1, &data, &has);
        if (st == MENGINE_OK)
            st = mengine_fb_u64(r, &bt, BUFFER_OFFSET, 0, &offset);
        if (st == MENGINE_OK)
            st = mengine_fb_u64(r, &bt, BUFFER_SIZE, 0, &size);
        if (st != MENGINE_OK)
            return st;
        if (offset > 1)
            return mengine_diag_fail(r->d, MENGINE_ERR_UNSUPPORTED,
                                     "buffer %u: data stored outside the FlatBuffer is unsupported",
                                     i);
        if (i == 0 && has && data.n)
            return mengine_diag_fail(r->d, MENGINE_ERR_BUFFER_SIZE,
                                     "buffer 0 must be the empty sentinel, it holds %u bytes",
                                     data.n);
    }
    return MENGINE_OK;
}

/* Metadata entries; finds the offline plan's buffer (or n_buffers when absent). */
static mengine_status verify_metadata(fbr *r, const mengine_model *m, const fb_table *model,
                                      uint32_t *offline_buffer)
{
    fb_vec mv;
    int has;
    *offline_buffer = m->n_buffers;
    mengine_status st = mengine_fb_vector(r, model, MODEL_METADATA, 4, &mv, &has);
    if (st != MENGINE_OK || !has)
        return st;
    for (uint32_t i = 0; i < mv.n; i++) {
        fb_table mt;
        fb_vec name;
        int has_name;
        uint32_t buffer;
        st = mengine_fb_vec_table(r, &mv, i, DEPTH_ENTRY, &mt);
        if (st == MENGINE_OK)
            st = mengine_fb_string(r, &mt, METADATA_NAME, &name, &has_name);
        if (st == MENGINE_OK)
            st = mengine_fb_u32(r, &mt, METADATA_BUFFER, 0, &buffer);
        if (st != MENGINE_OK)
            return st;
        if (buffer >= m->n_buffers)
            return mengine_diag_fail(r->d, MENGINE_ERR_BUFFER_INDEX,
                                     "metadata %u: buffer %u does not exist (the model has %u)", i,
                                     buffer, m->n_buffers);
        if (has_name && name.n == sizeof OFFLINE_NAME - 1 &&
            memcmp(r->base + name.pos, OFFLINE_NAME, name.n) == 0)
            *offline_buffer = buffer;
    }
    return MENGINE_OK;
}

/* "OfflineMemoryAllocation": int32 [version 1, subgraphs 1, n tensors, n offsets]. */
static mengine_status verify_offline(fbr *r, mengine_model *m, uint32_t buffer)
{
    const fb_vec bv = {m->buffers, m->n_buffers};
    fb_table bt;
    fb_vec data;
    int has;
    mengine_status st = mengine_fb_vec_table(r, &bv, buffer, DEPTH_ENTRY, &bt);
    if (st == MENGINE_OK)
        st = mengine_fb_vector(r, &bt, BUFFER_DATA, 1, &data, &has);
    if (st != MENGINE_OK)
        return st;
    const uint32_t want = 4 * (3 + m->n_tensors);
    if (!has || data.n != want)
        return mengine_diag_fail(
            r->d, MENGINE_ERR_PLAN,
            "OfflineMemoryAllocation (buffer %u): %u bytes, expected %u for %u tensors", buffer,
            has ? data.n : 0, want, m->n_tensors);
    if (data.pos % 4)
        return mengine_diag_fail(r->d, MENGINE_ERR_ALIGNMENT,
                                 "OfflineMemoryAllocation (buffer %u) is not 4-byte aligned",
                                 buffer);
    const uint8_t *p = r->base + data.pos;
    if (rd_i32(p) != 1 || rd_i32(p + 4) != 1 || rd_u32(p + 8) != m->n_tensors)
        return mengine_diag_fail(
            r->d, MENGINE_ERR_PLAN,
            "OfflineMemoryAllocation: header [%d, %d, %d], expected [1, 1, %u]", (int)rd_i32(p),
            (int)rd_i32(p + 4), (int)rd_i32(p + 8), m->n_tensors);
    for (uint32_t t = 0; t < m->n_tensors; t++) {
        const int32_t off = rd_i32(p + 12 + 4 * t);
        if (off < -1 || (off >= 0 && off % 4))
            return mengine_diag_fail(
                r->d, MENGINE_ERR_PLAN,
                "OfflineMemoryAllocation: tensor %u has offset %d (want -1 or a multiple of 4)", t,
                (int)off);
    }
    m->offline = data.pos + 12;
    return MENGINE_OK;
}

/* Model inputs: activations, float32 or int8, listed once; outputs likewise and not inputs. */
static mengine_status verify_io(fbr *r, const mengine_model *m)
{
    const fb_vec io[2] = {{m->inputs, m->n_inputs}, {m->outputs, m->n_outputs}};
    for (int k = 0; k < 2; k++) {
        const char *what = k ? "output" : "input";
        if (io[k].n == 0)
            return mengine_diag_fail(r->d, MENGINE_ERR_GRAPH, "the subgraph has no %ss", what);
        if (io[k].n > m->n_tensors) /* some tensor is listed twice; also bounds the checks below */
            return mengine_diag_fail(r->d, MENGINE_ERR_GRAPH, "%u model %ss for %u tensors",
                                     io[k].n, what, m->n_tensors);
        for (uint32_t i = 0; i < io[k].n; i++) {
            const int32_t t = fb_vec_i32(r, &io[k], i);
            mtensor_info ti;
            if (t < 0 || (uint32_t)t >= m->n_tensors)
                return mengine_diag_fail(
                    r->d, MENGINE_ERR_TENSOR_INDEX,
                    "model %s %u: tensor %d does not exist (the subgraph has %u)", what, i, (int)t,
                    m->n_tensors);
            mengine_status st = mengine_model_tensor(r, m, (uint32_t)t, &ti);
            if (st != MENGINE_OK)
                return st;
            if (ti.type != MENGINE_FLOAT32 && ti.type != MENGINE_INT8)
                return mengine_diag_fail(r->d, MENGINE_ERR_TYPE,
                                         "model %s %u (tensor %d '%s') is not FLOAT32 or INT8",
                                         what, i, (int)t, ti.name);
            if (ti.data)
                return mengine_diag_fail(r->d, MENGINE_ERR_GRAPH,
                                         "model %s %u (tensor %d '%s') is a constant", what, i,
                                         (int)t, ti.name);
            for (uint32_t j = 0; j < i; j++)
                if (fb_vec_i32(r, &io[k], j) == t)
                    return mengine_diag_fail(r->d, MENGINE_ERR_GRAPH,
                                             "tensor %d is listed twice as a model %s", (int)t,
                                             what);
            if (k == 1 && index_in(r, &io[0], t))
                return mengine_diag_fail(r->d, MENGINE_ERR_GRAPH,
                                         "tensor %d is both a model input and output", (int)t);
        }
    }
    return MENGINE_OK;
}

/* Output index of operator @p j (checked when @p j was verified; re-reads do not
 * count against the table budget). */
static int32_t op_output(const fbr *r, const mengine_model *m, uint32_t j)
{
    fbr rr = *r;
    fb_table op;
    fb_vec in, out;
    rr.tables_left = 0xffffffffu;
    if (mengine_model_operator(&rr, m, j, &op, &in, &out) != MENGINE_OK || out.n < 1)
        return -1;
    return fb_vec_i32(&rr, &out, 0);
}

static mengine_status verify_operator(fbr *r, const mengine_model *m, uint32_t i)
{
    mop_ctx c;
    mengine_status st = mengine_op_bind(r, m, i, &c);
    if (st != MENGINE_OK)
        return st;
    const fb_vec ins = {m->inputs, m->n_inputs};
    const int32_t out = fb_vec_i32(r, &c.outputs, 0);
    mtensor_info ti;
    if (out < 0 || (uint32_t)out >= m->n_tensors)
        return mengine_op_fail(&c, MENGINE_ERR_TENSOR_INDEX,
                               "output tensor %d does not exist (the subgraph has %u)", (int)out,
                               m->n_tensors);
    st = mengine_model_tensor(r, m, (uint32_t)out, &ti);
    if (st != MENGINE_OK)
        return st;
    if (ti.data || index_in(r, &ins, out))
        return mengine_op_fail(&c, MENGINE_ERR_GRAPH, "writes tensor %d '%s', a %s", (int)out,
                               ti.name, ti.data ? "constant" : "model input");
    for (uint32_t j = 0; j < i; j++)
        if (op_output(r, m, j) == out)
            return mengine_op_fail(&c, MENGINE_ERR_GRAPH,
                                   "writes tensor %d '%s', already written by operator %u",
                                   (int)out, ti.name, j);
    for (uint32_t k = 0; k < c.inputs.n; k++) {
        const int32_t t = fb_vec_i32(r, &c.inputs, k);
        if (t == -1)
            continue;
        if (t < 0 || (uint32_t)t >= m->n_tensors)
            return mengine_op_fail(&c, MENGINE_ERR_TENSOR_INDEX,
                                   "input %u: tensor %d does not exist (the subgraph has %u)", k,
                                   (int)t, m->n_tensors);
        st = mengine_model_tensor(r, m, (uint32_t)t, &ti);
        if (st != MENGINE_OK)
            return st;
        if (ti.data || index_in(r, &ins, t))
            continue;
        uint32_t j = 0;
        while (j < i && op_output(r, m, j) != t)
            j++;
        if (j == i)
            return mengine_op_fail(&c, MENGINE_ERR_GRAPH,
                                   "input %u reads tensor %d '%s' before any operator writes it", k,
                                   (int)t, ti.name);
    }
    mnode node;
    return mengine_op_prepare(&c, &node);
}

mengine_status mengine_model_load_ops(mengine_model *m, const void *data, size_t size,
                                      const mengine_op_resolver *ops,
                                      const mengine_verify_opts *opts, char *msg, size_t msg_cap)
{
    mdiag d = {msg, msg_cap};
    const uint16_t probe = 1;
    if (msg && msg_cap)
        msg[0] = '\0';
    if (!m || !data)
        return mengine_diag_fail(&d, MENGINE_ERR_ARG, "model or data is NULL");
    if (!ops)
        return mengine_diag_fail(&d, MENGINE_ERR_ARG, "operator table is NULL");
    memset(m, 0, sizeof *m);
    if ((size_t)data % 4)
        return mengine_diag_fail(
            &d, MENGINE_ERR_ARG,
            "model data is not 4-byte aligned in memory (load it 16-byte aligned)");
    if (size > FB_MAX_OFFSET)
        return mengine_diag_fail(&d, MENGINE_ERR_LIMIT,
                                 "model of %zu bytes: FlatBuffers stop at 2 GiB", size);
    if (*(const uint8_t *)&probe != 1)
        return mengine_diag_fail(&d, MENGINE_ERR_UNSUPPORTED, "big-endian hosts are not supported");

    fbr r;
    mengine_fb_init(&r, data, (uint32_t)size,
                    opts && opts->max_depth ? opts->max_depth : MENGINE_DEFAULT_MAX_DEPTH,
                    opts && opts->max_tables ? opts->max_tables : MENGINE_DEFAULT_MAX_TABLES, &d);
    m->data = data;
    m->size = (uint32_t)size;
    m->max_depth = r.max_depth;
    m->ops = ops;

    fb_table model, sg;
    fb_vec v, s;
    uint32_t version, offline_buffer;
    int has_codes, has_buffers, has_sg, has, has_t, has_i, has_o, has_ops;
    mengine_status st = mengine_model_root(&r, &model);
    if (st == MENGINE_OK)
        st = mengine_fb_u32(&r, &model, MODEL_VERSION, 0, &version);
    if (st != MENGINE_OK)
        return st;
    if (version != 3)
        return mengine_diag_fail(&d, MENGINE_ERR_VERSION, "schema version %u, expected 3", version);
    st = mengine_fb_vector(&r, &model, MODEL_OPCODES, 4, &v, &has_codes);
    if (st != MENGINE_OK)
        return st;
    m->opcodes = v.pos;
    m->n_opcodes = has_codes ? v.n : 0;
    st = mengine_fb_vector(&r, &model, MODEL_BUFFERS, 4, &v, &has_buffers);
    if (st != MENGINE_OK)
        return st;
    m->buffers = v.pos;
    m->n_buffers = has_buffers ? v.n : 0;
    st = mengine_fb_vector(&r, &model, MODEL_SUBGRAPHS, 4, &v, &has_sg);
    if (st == MENGINE_OK)
        st = mengine_fb_string(&r, &model, MODEL_DESCRIPTION, &s, &has);
    if (st != MENGINE_OK)
        return st;
    if (!has_codes || !has_buffers || !has_sg)
        return mengine_diag_fail(&d, MENGINE_ERR_SUBGRAPH, "the model has no %s vector",
                                 !has_codes     ? "operator_codes"
                                 : !has_buffers ? "buffers"
                                                : "subgraphs");
    if (v.n != 1)
        return mengine_diag_fail(&d, MENGINE_ERR_SUBGRAPH, "%u subgraphs (exactly 1 supported)",
                                 v.n);
    for (uint32_t i = 0; i < m->n_opcodes && st == MENGINE_OK; i++) {
        int32_t code, ver;
        st = mengine_model_opcode(&r, m, i, &code, &ver);
    }
    if (st == MENGINE_OK)
        st = verify_buffers(&r, m);
    if (st == MENGINE_OK)
        st = verify_metadata(&r, m, &model, &offline_buffer);
    if (st == MENGINE_OK)
        st = mengine_fb_vec_table(&r, &v, 0, DEPTH_SUBGRAPH, &sg);
    if (st == MENGINE_OK)
        st = mengine_fb_vector(&r, &sg, SUBGRAPH_TENSORS, 4, &v, &has_t);
    if (st != MENGINE_OK)
        return st;
    m->tensors = v.pos;
    m->n_tensors = has_t ? v.n : 0;
    st = mengine_fb_vector(&r, &sg, SUBGRAPH_INPUTS, 4, &v, &has_i);
    if (st != MENGINE_OK)
        return st;
    m->inputs = v.pos;
    m->n_inputs = has_i ? v.n : 0;
    st = mengine_fb_vector(&r, &sg, SUBGRAPH_OUTPUTS, 4, &v, &has_o);
    if (st != MENGINE_OK)
        return st;
    m->outputs = v.pos;
    m->n_outputs = has_o ? v.n : 0;
    st = mengine_fb_vector(&r, &sg, SUBGRAPH_OPERATORS, 4, &v, &has_ops);
    if (st == MENGINE_OK)
        st = mengine_fb_string(&r, &sg, SUBGRAPH_NAME, &s, &has);
    if (st != MENGINE_OK)
        return st;
    m->operators = v.pos;
    m->n_ops = has_ops ? v.n : 0;
    if (!has_t || !has_i || !has_o || !has_ops || m->n_ops == 0)
        return mengine_diag_fail(&d, MENGINE_ERR_SUBGRAPH, "the subgraph has no %s",
                                 !has_t   ? "tensors vector"
                                 : !has_i ? "inputs vector"
                                 : !has_o ? "outputs vector"
                                          : "operators");
    if (m->n_tensors > MENGINE_MAX_TENSORS || m->n_ops > MENGINE_MAX_OPS)
        return mengine_diag_fail(
            &d, MENGINE_ERR_LIMIT, "%u tensors and %u operators (this build handles %u and %u)",
            m->n_tensors, m->n_ops, (unsigned)MENGINE_MAX_TENSORS, (unsigned)MENGINE_MAX_OPS);
    for (uint32_t t = 0; t < m->n_tensors && st == MENGINE_OK; t++) {
        mtensor_info ti;
        st = mengine_model_tensor(&r, m, t, &ti);
    }
    if (st == MENGINE_OK)
        st = verify_io(&r, m);
    for (uint32_t i = 0; i < m->n_ops && st == MENGINE_OK; i++)
        st = verify_operator(&r, m, i);
    if (st == MENGINE_OK && offline_buffer < m->n_buffers)
        st = verify_offline(&r, m, offline_buffer);
    if (st != MENGINE_OK)
        m->data = NULL; /* not loaded */
    return st;
}

mengine_status mengine_model_load(mengine_model *m, const void *data, size_t size,
                                  const mengine_verify_opts *opts, char *msg, size_t msg_cap)
{
    return mengine_model_load_ops(m, data, size, &mengine_all_ops, opts, msg, msg_cap);
}
