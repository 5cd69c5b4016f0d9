/* One pass of the scan over a step of two regions' 128-byte blocks, fused: each block pair is read once
 * (both sides' 16 words) for its changed flag, its changed bytes and each side's word-5 key, where numpy
 * takes a pass over the step for each (xor, not-equal, per-row any, count, keys). The answer is the one
 * the numpy passes give (q9diff.compare.attribution falls back to them without this module, and a test
 * holds the two to the same figures). The GIL is let go for the pass: the scan's two workers run at once.
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
#define KEY 0x9E3779B97F4A7C15ULL /* word_key's multiplier: blocks.KEY */

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

static PyObject *step(PyObject *self, PyObject *args)
{
    Py_buffer a, b, flags, ka = {0}, kb = {0};
    PyObject *ka_obj, *kb_obj;
    if (!PyArg_ParseTuple(args, "y*y*w*OO", &a, &b, &flags, &ka_obj, &kb_obj))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t m = a.len / BLOCK;
    int keys = ka_obj != Py_None;
    if (a.len != b.len || a.len % BLOCK || flags.len < m || (keys != (kb_obj != Py_None))) {
        PyErr_SetString(PyExc_ValueError, "step: two equal runs of whole blocks and a flag per block");
        goto done;
    }
    if (keys) {
        if (PyObject_GetBuffer(ka_obj, &ka, PyBUF_WRITABLE) < 0)
            goto done;
        if (PyObject_GetBuffer(kb_obj, &kb, PyBUF_WRITABLE) < 0)
            goto done;
        if (ka.len < m * 8 || kb.len < m * 8) {
            PyErr_SetString(PyExc_ValueError, "step: a key per block");
            goto done;
        }
    }
    unsigned long long changed = 0, rows = 0;
    const unsigned char *pa = a.buf, *pb = b.buf;
    unsigned char *fl = flags.buf;
    unsigned char *oa = keys ? ka.buf : NULL, *ob = keys ? kb.buf : NULL;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < m; i++, pa += BLOCK, pb += BLOCK) {
        int differs;
        changed += block_pair(pa, pb, &differs);
        rows += differs;
        fl[i] = (unsigned char)differs;
        if (oa) {
            uint64_t k = load(pa + 40) * KEY, l = load(pb + 40) * KEY;
            memcpy(oa + 8 * i, &k, 8);
            memcpy(ob + 8 * i, &l, 8);
        }
    }
    Py_END_ALLOW_THREADS
    result = Py_BuildValue("KK", changed, rows);
done:
    PyBuffer_Release(&a);
    PyBuffer_Release(&b);
    PyBuffer_Release(&flags);
    if (ka.obj)
        PyBuffer_Release(&ka);
    if (kb.obj)
        PyBuffer_Release(&kb);
    return result;
}

static PyMethodDef methods[] = {
    {"step", step, METH_VARARGS,
     "step(a, b, flags, key_a, key_b) -> (changed bytes, changed blocks): a and b equal runs of 128-byte "
     "blocks; flags[i] set to whether block i differs; key_a, key_b (or None) get each block's word 5 "
     "times KEY."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_scan", NULL, -1, methods};

PyMODINIT_FUNC PyInit__scan(void)
{
    return PyModule_Create(&module);
}
