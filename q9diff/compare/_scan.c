/* The compiled passes over 128-byte blocks, each reading a block once where numpy takes a pass (and a
 * temporary) per operation:
 * - step: the scan of a step of two regions: each block pair's changed flag, its changed bytes, and
 *   from each side's word-5 key the content sample's rows and one side's key tops, and the sampled blocks'
 *   hashes and changed bytes while they are in cache (numpy: xor, not-equal, per-row any, count, keys,
 *   then a pass and a temporary for each of the sample's sets, and a gather from memory to hash them);
 * - same: whether blocks (consecutive, or at given rows) of one buffer equal those of another, byte for
 *   byte (the search's verification of every candidate);
 * - hash: blocks.block_hash of blocks at given rows, gathered and hashed in one go.
 * Each answer is the one the numpy code gives (q9diff.compare.blocks falls back to it without this
 * module, and tests hold the two to the same figures). The GIL is let go for each pass: the two workers
 * run at once. Rows are checked against their buffer before anything is read.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define BLOCK 128
#define WORDS (BLOCK / 8)
#define LOW7 0x7f7f7f7f7f7f7f7fULL
#define HIGH 0x8080808080808080ULL
#define ONES 0x0101010101010101ULL

static inline uint64_t load(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8); /* regions need not be 8-byte aligned in the file */
    return v;
}

/* Each byte of x nonzero: its high bit set, as 0x80 in its lane. */
static inline uint64_t nonzero_bytes(uint64_t x)
{
    return (((x & LOW7) + LOW7) | x) & HIGH;
}

#if defined(__SSE2__) && !defined(Q9DIFF_SCALAR) /* the other path: where no SSE2 (aarch64), and in a test */
#include <emmintrin.h>
/* A block pair's changed bytes (and whether any), 16 bytes at a time: the bytes equal after xor counted
 * by a compare with zero, summed across lanes once a block. */
static inline unsigned block_pair(const unsigned char *pa, const unsigned char *pb, int *differs)
{
    const __m128i zero = _mm_setzero_si128();
    __m128i same = zero, any = zero;
    for (int j = 0; j < BLOCK; j += 16) {
        __m128i x = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(pa + j)),
                                  _mm_loadu_si128((const __m128i *)(pb + j)));
        any = _mm_or_si128(any, x);
        same = _mm_sub_epi8(same, _mm_cmpeq_epi8(x, zero)); /* at most 8 a lane */
    }
    *differs = _mm_movemask_epi8(_mm_cmpeq_epi8(any, zero)) != 0xFFFF;
    __m128i sums = _mm_sad_epu8(same, zero);
    return BLOCK - (unsigned)(_mm_cvtsi128_si32(sums) + _mm_extract_epi16(sums, 4));
}
#else
static inline unsigned block_pair(const unsigned char *pa, const unsigned char *pb, int *differs)
{
    uint64_t any = 0, lanes = 0;
    for (int j = 0; j < WORDS; j++) {
        uint64_t x = load(pa + 8 * j) ^ load(pb + 8 * j);
        any |= x;
        lanes += nonzero_bytes(x) >> 7; /* 16 words: at most 16 a lane, no carry */
    }
    *differs = any != 0;
    return (unsigned)((lanes * ONES) >> 56);
}
#endif

/* blocks.block_hash of the block at p: each word w folded (w ^ w >> 29, blocks._FOLD) times its
 * multiplier, summed. */
static inline uint64_t block_hash(const unsigned char *p, const uint64_t *m)
{
    uint64_t h = 0;
    for (int j = 0; j < WORDS; j++) {
        uint64_t w = load(p + 8 * j);
        h += (w ^ (w >> 29)) * m[j];
    }
    return h;
}

static void release(Py_buffer *view)
{
    if (view->obj)
        PyBuffer_Release(view);
}

/* An optional output: None, or a writable buffer of at least `need` bytes. */
static int optional_out(PyObject *obj, Py_buffer *view, Py_ssize_t need, void **out)
{
    *out = NULL;
    if (obj == Py_None)
        return 0;
    if (PyObject_GetBuffer(obj, view, PyBUF_WRITABLE) < 0)
        return -1;
    if (view->len < need) {
        PyErr_SetString(PyExc_ValueError, "step: an output shorter than the step");
        return -1;
    }
    *out = view->buf;
    return 0;
}

static inline void put_word(unsigned char *out, Py_ssize_t n, uint64_t w)
{
    memcpy(out + 8 * n, &w, 8);
}

static inline void put_row(unsigned char *out, Py_ssize_t *n, int64_t row)
{
    memcpy(out + 8 * (*n)++, &row, 8);
}

static PyObject *step(PyObject *self, PyObject *args)
{
    Py_buffer a, b, flags, vt = {0}, va = {0}, vb = {0}, vc = {0}, vm = {0}, vha = {0}, vhb = {0},
                           vwb = {0};
    PyObject *tops_obj, *sa_obj, *sb_obj, *sbc_obj, *mult_obj, *ha_obj, *hb_obj, *wb_obj, *result = NULL;
    long long base;
    int every, tops_b = 0;
    unsigned long long key, below;
    if (!PyArg_ParseTuple(args, "y*y*w*OLOOOpKKOOOO|p", &a, &b, &flags, &tops_obj, &base, &sa_obj, &sb_obj,
                          &sbc_obj, &every, &key, &below, &mult_obj, &ha_obj, &hb_obj, &wb_obj, &tops_b))
        return NULL;
    Py_ssize_t m = a.len / BLOCK;
    void *tops, *sa, *sb, *sbc, *mult, *ha, *hb, *wb;
    uint64_t mw[WORDS];
    if (a.len != b.len || a.len % BLOCK || flags.len < m) {
        PyErr_SetString(PyExc_ValueError, "step: two equal runs of whole blocks and a flag per block");
        goto done;
    }
    if (optional_out(tops_obj, &vt, 2 * m, &tops) < 0 || optional_out(sa_obj, &va, 8 * m, &sa) < 0 ||
        optional_out(sb_obj, &vb, 8 * m, &sb) < 0 || optional_out(sbc_obj, &vc, 8 * m, &sbc) < 0 ||
        optional_out(ha_obj, &vha, 8 * m, &ha) < 0 || optional_out(hb_obj, &vhb, 8 * m, &hb) < 0 ||
        optional_out(wb_obj, &vwb, 8 * m, &wb) < 0)
        goto done;
    mult = NULL;
    if (mult_obj != Py_None) {
        if (PyObject_GetBuffer(mult_obj, &vm, PyBUF_SIMPLE) < 0)
            goto done;
        mult = vm.buf;
        if (vm.len != BLOCK) { /* read whole below whether or not a hash is asked for */
            PyErr_SetString(PyExc_ValueError, "step: the multipliers are 16 uint64");
            goto done;
        }
    }
    if ((ha || hb || wb) && (!mult || (ha && !sa) || ((hb || wb) && !sbc))) {
        PyErr_SetString(PyExc_ValueError, "step: hashes need the multipliers (16 uint64) and their rows");
        goto done;
    }
    if (mult)
        memcpy(mw, mult, BLOCK);
    unsigned long long changed = 0, rows = 0;
    Py_ssize_t na = 0, nb = 0, nc = 0;
    const unsigned char *pa = a.buf, *pb = b.buf;
    unsigned char *fl = flags.buf;
    int keyed = tops || sa || sb || sbc;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < m; i++, pa += BLOCK, pb += BLOCK) {
        int differs;
        unsigned n_bytes = block_pair(pa, pb, &differs);
        changed += n_bytes;
        rows += differs;
        fl[i] = (unsigned char)differs;
        if (!keyed || !(differs || every))
            continue;
        uint64_t k = load(pa + 40) * key, l = load(pb + 40) * key; /* blocks.word_key of each side */
        if (tops) { /* reached for the changed blocks, or for every block with every */
            uint16_t t = (uint16_t)((tops_b ? l : k) >> 48);
            memcpy((unsigned char *)tops + 2 * i, &t, 2);
        }
        if (sa && k < below) {
            if (ha)
                put_word(ha, na, block_hash(pa, mw));
            put_row(sa, &na, base + i);
        }
        if (sb && l < below)
            put_row(sb, &nb, base + i);
        if (sbc && differs && l < below) {
            if (hb)
                put_word(hb, nc, block_hash(pb, mw));
            if (wb)
                put_word(wb, nc, n_bytes);
            put_row(sbc, &nc, base + i);
        }
    }
    Py_END_ALLOW_THREADS
    result = Py_BuildValue("KKnnn", changed, rows, na, nb, nc);
done:
    PyBuffer_Release(&a);
    PyBuffer_Release(&b);
    PyBuffer_Release(&flags);
    release(&vt);
    release(&va);
    release(&vb);
    release(&vc);
    release(&vm);
    release(&vha);
    release(&vhb);
    release(&vwb);
    return result;
}

/* Rows: an int64 buffer of n, each within 0..limit-1, or none (0..n-1, within limit). */
static int rows_of(PyObject *obj, Py_buffer *view, Py_ssize_t n, Py_ssize_t limit, const int64_t **out)
{
    *out = NULL;
    if (obj == Py_None) {
        if (n <= limit)
            return 0;
        PyErr_SetString(PyExc_ValueError, "rows: more outputs than blocks");
        return -1;
    }
    if (PyObject_GetBuffer(obj, view, PyBUF_FORMAT) < 0)
        return -1;
    if (view->itemsize != 8 || view->len != n * 8 || !view->format || (strcmp(view->format, "l") &&
                                                                       strcmp(view->format, "q"))) {
        PyErr_SetString(PyExc_ValueError, "rows: int64, one a flag");
        return -1;
    }
    const int64_t *r = view->buf;
    for (Py_ssize_t i = 0; i < n; i++)
        if (r[i] < 0 || r[i] >= limit) {
            PyErr_SetString(PyExc_ValueError, "rows: outside the buffer");
            return -1;
        }
    *out = r;
    return 0;
}

static PyObject *same(PyObject *self, PyObject *args)
{
    Py_buffer a, b, out, va = {0}, vb = {0};
    PyObject *ia_obj, *ib_obj, *result = NULL;
    if (!PyArg_ParseTuple(args, "y*y*w*OO", &a, &b, &out, &ia_obj, &ib_obj))
        return NULL;
    Py_ssize_t n = out.len;
    const int64_t *ia, *ib;
    if (a.len % BLOCK || b.len % BLOCK) {
        PyErr_SetString(PyExc_ValueError, "same: whole blocks");
        goto done;
    }
    if (rows_of(ia_obj, &va, n, a.len / BLOCK, &ia) < 0 || rows_of(ib_obj, &vb, n, b.len / BLOCK, &ib) < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "same: more flags than blocks");
        goto done;
    }
    const unsigned char *pa = a.buf, *pb = b.buf;
    unsigned char *o = out.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++)
        o[i] = !memcmp(pa + BLOCK * (ia ? ia[i] : i), pb + BLOCK * (ib ? ib[i] : i), BLOCK);
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&a);
    PyBuffer_Release(&b);
    PyBuffer_Release(&out);
    release(&va);
    release(&vb);
    return result;
}

static PyObject *hash(PyObject *self, PyObject *args)
{
    Py_buffer a, mult, out, va = {0};
    PyObject *ia_obj, *result = NULL;
    if (!PyArg_ParseTuple(args, "y*Oy*w*", &a, &ia_obj, &mult, &out))
        return NULL;
    Py_ssize_t n = out.len / 8;
    const int64_t *ia;
    if (a.len % BLOCK || mult.len != BLOCK || out.len % 8) {
        PyErr_SetString(PyExc_ValueError, "hash: whole blocks, a multiplier a word, a word a hash");
        goto done;
    }
    if (rows_of(ia_obj, &va, n, a.len / BLOCK, &ia) < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "hash: more hashes than blocks");
        goto done;
    }
    uint64_t m[WORDS];
    memcpy(m, mult.buf, BLOCK);
    const unsigned char *pa = a.buf;
    unsigned char *o = out.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++)
        put_word(o, i, block_hash(pa + BLOCK * (ia ? ia[i] : i), m));
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&a);
    PyBuffer_Release(&mult);
    PyBuffer_Release(&out);
    release(&va);
    return result;
}

static PyMethodDef methods[] = {
    {"step", step, METH_VARARGS,
     "step(a, b, flags, tops, base, sa, sb, sbc, every, key, below, mult, ha, hb, wb[, tops_b]) -> "
     "(changed bytes, changed blocks, len sa, len sb, len sbc): a and b equal runs of 128-byte blocks; "
     "flags[i] set to whether block i differs. With k = word 5 times key (a's; l b's): tops (uint16, or "
     "None) gets k >> 48 (l >> 48 with tops_b) of each changed block (of every block with every); sa, sb "
     "(int64, or None) get base + i of the blocks with k < below, l < below (of the changed blocks, or of "
     "all with every); sbc (or None) of the changed blocks with l < below. With mult (16 uint64, or "
     "None): ha (uint64, or None) gets the hash of a's block of each row of sa, hb b's block's of each row "
     "of sbc, wb (int64, or None) its changed bytes."},
    {"same", same, METH_VARARGS,
     "same(a, b, out, rows_a, rows_b): out[i] set to whether block rows_a[i] of a (int64 rows, or None: "
     "block i) is block rows_b[i] of b, byte for byte."},
    {"hash", hash, METH_VARARGS,
     "hash(a, rows, mult, out): out[i] (uint64) the hash of block rows[i] of a (or block i, rows None): "
     "the sum of each word w folded (w ^ w >> 29) times its multiplier in mult (16 uint64)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_scan", NULL, -1, methods};

PyMODINIT_FUNC PyInit__scan(void)
{
    PyObject *m = PyModule_Create(&module);
    /* the calls' form (blocks.INTERFACE): a module built from an older source is left unused, not called */
    if (m && PyModule_AddIntConstant(m, "INTERFACE", 2) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
