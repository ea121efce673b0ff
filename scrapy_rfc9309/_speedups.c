/* Optional C accelerator for the matcher's hot path (see matcher.py).
 *
 * A FastMatcher holds one merged group's rules in canonical form: the literal
 * rules as a sorted array (longest prefix found by binary search), the wildcard
 * rules sorted by priority. Calling it with an absolute URL whose path starts
 * with "/" decides it entirely in C (canonical form included), with the same
 * semantics as the Python tiers; any other URL goes to the Python fallback. Every search is linear (memmem), so
 * no input can make a decision blow up.
 */
#define _GNU_SOURCE
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <string.h>

typedef struct {
    const char *s;
    Py_ssize_t n;
} Str;

typedef struct {
    Py_ssize_t priority;
    int allow;
    int anchored;
    Py_ssize_t npieces;
    Str *pieces;
} Wild;

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    Py_ssize_t nkeys;
    Str *keys;
    unsigned char *key_allow;
    Py_ssize_t nwild;
    Wild *wild;
    PyObject *fallback;
    PyObject *owned; /* keeps the str objects whose data the arrays point into */
} FastMatcher;

static int
ascii_str(PyObject *obj, Str *out)
{
    if (!PyUnicode_Check(obj) || !PyUnicode_IS_ASCII(obj)) {
        PyErr_SetString(PyExc_ValueError, "FastMatcher takes ASCII strings only");
        return -1;
    }
    out->s = (const char *)PyUnicode_1BYTE_DATA(obj);
    out->n = PyUnicode_GET_LENGTH(obj);
    return 0;
}

/* Python's ordering of ASCII strings. */
static int
compare(const char *a, Py_ssize_t an, const char *b, Py_ssize_t bn)
{
    Py_ssize_t n = an < bn ? an : bn;
    int c = memcmp(a, b, (size_t)n);
    if (c)
        return c;
    return (an > bn) - (an < bn);
}

/* Index of the last key <= text, or -1. */
static Py_ssize_t
bisect_last(FastMatcher *self, const char *text, Py_ssize_t n)
{
    Py_ssize_t lo = 0, hi = self->nkeys;
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (compare(text, n, self->keys[mid].s, self->keys[mid].n) < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo - 1;
}

static Py_ssize_t
longest_key(FastMatcher *self, const char *path, Py_ssize_t n)
{
    Py_ssize_t index = bisect_last(self, path, n);
    while (index >= 0) {
        Str key = self->keys[index];
        if (key.n <= n && memcmp(key.s, path, (size_t)key.n) == 0)
            return index;
        Py_ssize_t common = 0, limit = key.n < n ? key.n : n;
        while (common < limit && key.s[common] == path[common])
            common++;
        index = bisect_last(self, path, common);
    }
    return -1;
}

static Py_ssize_t
find(const char *hay, Py_ssize_t hn, Py_ssize_t from, Str needle)
{
    if (needle.n == 0)
        return from <= hn ? from : -1;
    if (from > hn)
        return -1;
    const char *hit = memmem(hay + from, (size_t)(hn - from), needle.s, (size_t)needle.n);
    return hit ? (Py_ssize_t)(hit - hay) : -1;
}

static int
glob(const char *path, Py_ssize_t n, Wild *w)
{
    Str first = w->pieces[0];
    if (first.n > n || memcmp(first.s, path, (size_t)first.n) != 0)
        return 0;
    Py_ssize_t last = w->npieces - 1;
    if (last == 0)
        return !w->anchored || n == first.n;
    Py_ssize_t pos = first.n;
    for (Py_ssize_t i = 1; i < last; i++) {
        pos = find(path, n, pos, w->pieces[i]);
        if (pos < 0)
            return 0;
        pos += w->pieces[i].n;
    }
    Str tail = w->pieces[last];
    if (w->anchored)
        return n - tail.n >= pos && memcmp(path + n - tail.n, tail.s, (size_t)tail.n) == 0;
    return find(path, n, pos, tail) >= 0;
}

static PyObject *
call_fallback(FastMatcher *self, PyObject *url)
{
    return PyObject_CallOneArg(self->fallback, url);
}

/* The canonical form of urlnorm.py: "%xx" of an ASCII octet that has no
 * delimiting role is decoded, other escapes and non-ASCII octets are "%XX", a lone
 * "%" is "%25". In the query (after the first "?") ":" "/" "?" "@" are decoded too. */
static int
hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c |= 32;
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

static int
keep_encoded(int octet, int in_query)
{
    if (octet >= 0x80)
        return 1;
    if (in_query && (octet == ':' || octet == '/' || octet == '?' || octet == '@'))
        return 0;
    return strchr("%/?#[]:@!&'()+,;=", octet) != NULL && octet != 0;
}

static Py_ssize_t
canonical_path_c(const char *src, Py_ssize_t n, char *out)
{
    static const char HEX[] = "0123456789ABCDEF";
    Py_ssize_t o = 0;
    int in_query = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)src[i];
        if (c == '%') {
            int hi = i + 2 < n ? hexval(src[i + 1]) : -1, lo = i + 2 < n ? hexval(src[i + 2]) : -1;
            if (hi < 0 || lo < 0) {
                memcpy(out + o, "%25", 3);
                o += 3;
                continue;
            }
            int octet = hi * 16 + lo;
            i += 2;
            if (keep_encoded(octet, in_query)) {
                out[o++] = '%';
                out[o++] = HEX[octet >> 4];
                out[o++] = HEX[octet & 15];
            }
            else
                out[o++] = (char)octet;
        }
        else if (c >= 0x80) {
            out[o++] = '%';
            out[o++] = HEX[c >> 4];
            out[o++] = HEX[c & 15];
        }
        else {
            if (c == '?')
                in_query = 1;
            out[o++] = (char)c;
        }
    }
    return o;
}

static PyObject *
fast_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    FastMatcher *self = (FastMatcher *)callable;
    if (PyVectorcall_NARGS(nargsf) != 1 || kwnames != NULL) {
        PyErr_SetString(PyExc_TypeError, "FastMatcher takes one URL");
        return NULL;
    }
    PyObject *url = args[0];
    if (!PyUnicode_Check(url))
        return call_fallback(self, url);
    const char *u;
    Py_ssize_t n;
    int ascii = PyUnicode_IS_ASCII(url);
    if (ascii) {
        u = (const char *)PyUnicode_1BYTE_DATA(url);
        n = PyUnicode_GET_LENGTH(url);
    }
    else {
        u = PyUnicode_AsUTF8AndSize(url, &n);
        if (u == NULL) { /* lone surrogates: the Python tier knows what to do */
            PyErr_Clear();
            return call_fallback(self, url);
        }
    }
    /* scheme "://" authority, then the path must start with "/" */
    Py_ssize_t i = 0;
    if (n == 0 || !((u[0] | 32) >= 'a' && (u[0] | 32) <= 'z'))
        return call_fallback(self, url);
    for (i = 1; i < n; i++) {
        char c = u[i];
        if (!(((c | 32) >= 'a' && (c | 32) <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '.' || c == '-'))
            break;
    }
    if (i + 3 > n || u[i] != ':' || u[i + 1] != '/' || u[i + 2] != '/')
        return call_fallback(self, url);
    for (i += 3; i < n; i++) {
        char c = u[i];
        if (c == '/' || c == '?' || c == ';' || c == '#')
            break;
    }
    if (i >= n || u[i] != '/')
        return call_fallback(self, url);
    const char *path = u + i;
    Py_ssize_t plen = n - i;
    const char *hash = memchr(path, '#', (size_t)plen);
    if (hash)
        plen = hash - path;
    char stack[2048], *heap = NULL;
    if (!ascii || memchr(path, '%', (size_t)plen)) {
        char *buf = stack;
        if (plen * 3 > (Py_ssize_t)sizeof(stack)) {
            heap = PyMem_Malloc((size_t)plen * 3);
            if (heap == NULL)
                return PyErr_NoMemory();
            buf = heap;
        }
        plen = canonical_path_c(path, plen, buf);
        path = buf;
    }
    int allow = 1;
    if (plen == 11 && memcmp(path, "/robots.txt", 11) == 0)
        goto done;
    Py_ssize_t best_priority = -1;
    Py_ssize_t index = longest_key(self, path, plen);
    if (index >= 0) {
        best_priority = self->keys[index].n;
        allow = self->key_allow[index];
    }
    for (Py_ssize_t k = 0; k < self->nwild; k++) {
        Wild *w = &self->wild[k];
        if (w->priority < best_priority || (w->priority == best_priority && (allow || !w->allow)))
            break;
        if (glob(path, plen, w)) {
            allow = w->allow;
            break;
        }
    }
done:
    PyMem_Free(heap);
    return PyBool_FromLong(allow);
}

static void
fast_dealloc(FastMatcher *self)
{
    for (Py_ssize_t k = 0; k < self->nwild; k++)
        PyMem_Free(self->wild[k].pieces);
    PyMem_Free(self->wild);
    PyMem_Free(self->keys);
    PyMem_Free(self->key_allow);
    Py_XDECREF(self->fallback);
    Py_XDECREF(self->owned);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* FastMatcher(keys: list[str] (sorted), allows: bytes,
 *             wildcards: list[(priority, allow, pieces: list[str], anchored)] (sorted),
 *             fallback: callable) */
static PyObject *
fast_new(PyTypeObject *type, PyObject *args, PyObject *Py_UNUSED(kwds))
{
    PyObject *keys, *allows, *wildcards, *fallback;
    if (!PyArg_ParseTuple(args, "O!O!O!O:FastMatcher", &PyList_Type, &keys, &PyBytes_Type, &allows,
                          &PyList_Type, &wildcards, &fallback))
        return NULL;
    Py_ssize_t nkeys = PyList_GET_SIZE(keys);
    if (PyBytes_GET_SIZE(allows) != nkeys) {
        PyErr_SetString(PyExc_ValueError, "one allow flag per key");
        return NULL;
    }
    FastMatcher *self = (FastMatcher *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->vectorcall = fast_vectorcall;
    self->owned = PyList_New(0);
    Py_INCREF(fallback);
    self->fallback = fallback;
    if (self->owned == NULL)
        goto fail;
    if (PyList_Append(self->owned, keys) < 0 || PyList_Append(self->owned, wildcards) < 0)
        goto fail;
    self->keys = PyMem_Calloc((size_t)(nkeys ? nkeys : 1), sizeof(Str));
    self->key_allow = PyMem_Malloc((size_t)(nkeys ? nkeys : 1));
    if (!self->keys || !self->key_allow) {
        PyErr_NoMemory();
        goto fail;
    }
    memcpy(self->key_allow, PyBytes_AS_STRING(allows), (size_t)nkeys);
    for (Py_ssize_t k = 0; k < nkeys; k++)
        if (ascii_str(PyList_GET_ITEM(keys, k), &self->keys[k]) < 0)
            goto fail;
    self->nkeys = nkeys;
    Py_ssize_t nwild = PyList_GET_SIZE(wildcards);
    self->wild = PyMem_Calloc((size_t)(nwild ? nwild : 1), sizeof(Wild));
    if (!self->wild) {
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t k = 0; k < nwild; k++) {
        PyObject *item = PyList_GET_ITEM(wildcards, k), *pieces;
        Py_ssize_t priority;
        int allow, anchored;
        if (!PyArg_ParseTuple(item, "npO!p", &priority, &allow, &PyList_Type, &pieces, &anchored))
            goto fail;
        Wild *w = &self->wild[k];
        self->nwild = k + 1;
        w->priority = priority;
        w->allow = allow;
        w->anchored = anchored;
        w->npieces = PyList_GET_SIZE(pieces);
        if (w->npieces < 1) {
            PyErr_SetString(PyExc_ValueError, "a wildcard rule has at least one piece");
            goto fail;
        }
        w->pieces = PyMem_Calloc((size_t)w->npieces, sizeof(Str));
        if (!w->pieces) {
            PyErr_NoMemory();
            goto fail;
        }
        for (Py_ssize_t p = 0; p < w->npieces; p++)
            if (ascii_str(PyList_GET_ITEM(pieces, p), &w->pieces[p]) < 0)
                goto fail;
    }
    return (PyObject *)self;
fail:
    Py_DECREF(self);
    return NULL;
}

static PyTypeObject FastMatcherType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "scrapy_rfc9309._speedups.FastMatcher",
    .tp_basicsize = sizeof(FastMatcher),
    .tp_dealloc = (destructor)fast_dealloc,
    .tp_vectorcall_offset = offsetof(FastMatcher, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "One merged group's rules, decided in C for plain ASCII URLs.",
    .tp_new = fast_new,
};

/* ---- the line scanner of parser.py ---------------------------------------------
 * scan_lines(text, keys) -> [(kind, value, lineno)] for the lines that hold a known
 * record, with exactly the semantics of parser._LINE: optional leading [ \t\v\f],
 * a key (case-insensitive; ``keys`` is a list of (lowercase key, kind), longest
 * first), then "[ws]*:" or, for a one-word value, whitespace; the value runs to
 * "#" or the end of the line, without its trailing whitespace. ``text`` ends with
 * "\n" and has no "\r". An Allow/Disallow value with "*", "$", "%" or a non-ASCII
 * character has SPECIAL (8) added to its kind.
 */
static int
is_ws(Py_UCS4 c)
{
    return c == ' ' || c == '\t' || c == '\v' || c == '\f';
}

static PyObject *
scan_lines(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *text, *keys;
    if (!PyArg_ParseTuple(args, "UO!:scan_lines", &text, &PyList_Type, &keys))
        return NULL;
    Py_ssize_t nkeys = PyList_GET_SIZE(keys);
    const char *key_s[64];
    Py_ssize_t key_n[64];
    long key_kind[64];
    if (nkeys > 64) {
        PyErr_SetString(PyExc_ValueError, "at most 64 keys");
        return NULL;
    }
    for (Py_ssize_t k = 0; k < nkeys; k++) {
        PyObject *pair = PyList_GET_ITEM(keys, k), *name;
        long kind;
        if (!PyArg_ParseTuple(pair, "Ul", &name, &kind))
            return NULL;
        if (!PyUnicode_IS_ASCII(name)) {
            PyErr_SetString(PyExc_ValueError, "keys are ASCII");
            return NULL;
        }
        key_s[k] = (const char *)PyUnicode_1BYTE_DATA(name);
        key_n[k] = PyUnicode_GET_LENGTH(name);
        key_kind[k] = kind;
    }
    int ukind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    Py_ssize_t start = 0, lineno = 0;
    while (start < n) {
        Py_ssize_t end = start;
        while (end < n && PyUnicode_READ(ukind, data, end) != '\n')
            end++;
        lineno++;
        Py_ssize_t p = start;
        while (p < end && is_ws(PyUnicode_READ(ukind, data, p)))
            p++;
        for (Py_ssize_t k = 0; k < nkeys; k++) {
            Py_ssize_t kn = key_n[k], i;
            if (p + kn > end)
                continue;
            for (i = 0; i < kn; i++) {
                Py_UCS4 c = PyUnicode_READ(ukind, data, p + i);
                if (c >= 'A' && c <= 'Z')
                    c += 32;
                if (c != (Py_UCS4)(unsigned char)key_s[k][i])
                    break;
            }
            if (i < kn)
                continue;
            Py_ssize_t q = p + kn, vstart = -1, vend = -1;
            Py_ssize_t r = q;
            while (r < end && is_ws(PyUnicode_READ(ukind, data, r)))
                r++;
            if (r < end && PyUnicode_READ(ukind, data, r) == ':') {
                vstart = r + 1;
                while (vstart < end && is_ws(PyUnicode_READ(ukind, data, vstart)))
                    vstart++;
                vend = vstart;
                while (vend < end && PyUnicode_READ(ukind, data, vend) != '#')
                    vend++;
                while (vend > vstart && is_ws(PyUnicode_READ(ukind, data, vend - 1)))
                    vend--;
            }
            else if (r > q) {
                /* whitespace instead of the colon: one word, then only whitespace */
                Py_ssize_t w = r;
                while (w < end) {
                    Py_UCS4 c = PyUnicode_READ(ukind, data, w);
                    if (is_ws(c) || c == '#')
                        break;
                    w++;
                }
                if (w == r)
                    continue;
                Py_ssize_t t = w;
                while (t < end && is_ws(PyUnicode_READ(ukind, data, t)))
                    t++;
                if (t < end && PyUnicode_READ(ukind, data, t) != '#')
                    continue;
                vstart = r;
                vend = w;
            }
            else
                continue;
            long kind = key_kind[k];
            if (kind == 1 || kind == 2) { /* allow, disallow: flag a pattern that is not a plain literal */
                for (Py_ssize_t v = vstart; v < vend; v++) {
                    Py_UCS4 c = PyUnicode_READ(ukind, data, v);
                    if (c == '*' || c == '$' || c == '%' || c >= 0x80) {
                        kind += 8;
                        break;
                    }
                }
            }
            PyObject *value = PyUnicode_Substring(text, vstart, vend);
            if (value == NULL)
                goto fail;
            PyObject *item = Py_BuildValue("(lNn)", kind, value, lineno);
            if (item == NULL || PyList_Append(out, item) < 0) {
                Py_XDECREF(item);
                goto fail;
            }
            Py_DECREF(item);
            break;
        }
        start = end + 1;
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

static PyMethodDef speedups_methods[] = {
    {"scan_lines", scan_lines, METH_VARARGS, "The known records of a robots.txt text: [(kind, value, line)]."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef speedups = {
    PyModuleDef_HEAD_INIT, "_speedups", "C accelerator of scrapy_rfc9309's parser and matcher.", -1,
    speedups_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    if (PyType_Ready(&FastMatcherType) < 0)
        return NULL;
    PyObject *module = PyModule_Create(&speedups);
    if (module == NULL)
        return NULL;
    Py_INCREF(&FastMatcherType);
    if (PyModule_AddObject(module, "FastMatcher", (PyObject *)&FastMatcherType) < 0) {
        Py_DECREF(&FastMatcherType);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
